import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../db/local-state';
import { startStack, TestStack } from '../support/stack';
import { configError, productionEnv, runEntryPoint } from './support';
import { spawnWorker } from '../support/worker-process';

/**
 * Production's monitoring defaults (docs/production.md#secrets, docs/security.md):
 * METRICS_TOKEN is required, so are JWT_ISSUER and JWT_AUDIENCE when users' tokens are verified with
 * an identity provider's keys, and the worker's metrics listen on WORKER_METRICS_HOST (loopback unless
 * configured) and answer only the scraper's bearer.
 */
const scratch = () => mkdtempSync(join(tmpdir(), 'sb-monitoring-'));
const PEM = '-----BEGIN PUBLIC KEY-----\\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\\n-----END PUBLIC KEY-----';

describe('production configuration', () => {
  it('refuses to start without METRICS_TOKEN, in one line naming it', () => {
    const message = configError(productionEnv({ METRICS_TOKEN: undefined }));
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toMatch(/NODE_ENV=production needs METRICS_TOKEN$/);
    expect(loadConfig(productionEnv()).metricsToken).toEqual(expect.any(String));
  });

  it('refuses a weak METRICS_TOKEN, naming it and not its value', () => {
    const message = configError(productionEnv({ METRICS_TOKEN: 'prometheus' }));
    expect(message).toMatch(/METRICS_TOKEN .*32 characters/);
    expect(message).not.toContain('prometheus');
  });

  it.each([
    ['JWKS_URL', { JWT_SECRET: '', JWKS_URL: 'https://id.example.com/.well-known/jwks.json' }],
    ['JWT_PUBLIC_KEY', { JWT_SECRET: '', JWT_PUBLIC_KEY: PEM }],
    ['JWKS_URL beside JWT_SECRET', { JWKS_URL: 'https://id.example.com/.well-known/jwks.json' }],
  ])('with %s, refuses a missing JWT_ISSUER or JWT_AUDIENCE, naming each', (_name, keys) => {
    expect(configError(productionEnv(keys))).toMatch(/needs JWT_ISSUER, JWT_AUDIENCE$/);
    expect(configError(productionEnv({ ...keys, JWT_ISSUER: 'https://id.example.com/' }))).toMatch(/needs JWT_AUDIENCE$/);
    expect(configError(productionEnv({ ...keys, JWT_AUDIENCE: 'switchboard' }))).toMatch(/needs JWT_ISSUER$/);
    const config = loadConfig(productionEnv({ ...keys, JWT_ISSUER: 'https://id.example.com/', JWT_AUDIENCE: 'switchboard' }));
    expect(config.jwt).toMatchObject({ issuer: 'https://id.example.com/', audience: 'switchboard' });
  });

  it('needs no issuer or audience when only our own JWT_SECRET signs users\' tokens', () => {
    expect(loadConfig(productionEnv()).jwt.issuer).toBeUndefined();
  });

  it('names every missing variable in one line', () => {
    const message = configError(productionEnv({ METRICS_TOKEN: '', API_KEY_PEPPER: '', JWKS_URL: 'https://id.example.com/jwks' }));
    expect(message).toBe('NODE_ENV=production needs API_KEY_PEPPER, METRICS_TOKEN, JWT_ISSUER, JWT_AUDIENCE');
  });

  it('keeps METRICS_TOKEN optional in development', () => {
    expect(loadConfig({ NODE_ENV: 'development', SB_DATA_DIR: scratch() }).metricsToken).toBeUndefined();
  });
});

describe('WORKER_METRICS_HOST', () => {
  it('is loopback by default, in production as in development', () => {
    expect(loadConfig(productionEnv()).workerMetricsHost).toBe('127.0.0.1');
    expect(loadConfig({ NODE_ENV: 'development', SB_DATA_DIR: scratch() }).workerMetricsHost).toBe('127.0.0.1');
  });

  it.each(['0.0.0.0', '10.0.0.5', '::', '::1', 'fd00::5'])('takes the IP address %s', (host) => {
    expect(loadConfig(productionEnv({ WORKER_METRICS_HOST: host })).workerMetricsHost).toBe(host);
  });

  it.each(['worker.internal', '10.0.0', '256.0.0.1', '[::1]', '127.0.0.1:9464'])('refuses %s in one line naming it', (host) => {
    const message = configError(productionEnv({ WORKER_METRICS_HOST: host }));
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toMatch(/^WORKER_METRICS_HOST must be an IP address/);
  });
});

describe('a production process without METRICS_TOKEN', () => {
  it.each([['api', 'api/main.ts'], ['worker', 'worker/main.ts']])('%s exits non-zero with one line naming it', async (name, entry) => {
    const env = {
      PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'info', ...productionEnv({ METRICS_TOKEN: undefined }),
      DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere', TEMPORAL_ADDRESS: '127.0.0.1:1',
    };
    const { code, output } = await runEntryPoint([entry], env);
    expect(code, output).toBe(1);
    expect(output.trim().split('\n'), output).toEqual([`${name}: configuration error: NODE_ENV=production needs METRICS_TOKEN`]);
  }, 60_000);
});

/** An IPv4 address of this machine other than loopback, which a scraper elsewhere would connect to. */
function outsideAddress(): string {
  const address = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal);
  expect(address, 'a network interface other than loopback').toBeDefined();
  return address!.address;
}

/** Two free consecutive ports: the worker's metrics and the Temporal SDK's on the next one. */
async function freePorts(): Promise<number> {
  const listen = (port: number) => new Promise<number | undefined>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
  for (;;) {
    const port = await listen(0);
    if (port && port < 65535 && await listen(port + 1)) return port;
  }
}

/** GET /metrics on host:port: the status and body, or the connection error's code. */
function scrape(host: string, port: number, authorization?: string): Promise<{ status?: number; body?: string; error?: string }> {
  return new Promise((resolve) => {
    const req = request({ host, port, path: '/metrics', headers: authorization ? { Authorization: authorization } : {}, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => { body += c.toString(); });
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message }));
    req.end();
  });
}

describe('the worker\'s metrics', () => {
  let stack: TestStack;
  const token = randomBytes(32).toString('base64');
  beforeAll(async () => {
    stack = await startStack();
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  });

  it('listen on loopback by default and answer only METRICS_TOKEN\'s bearer, in the error envelope otherwise', async () => {
    const port = await freePorts();
    const worker = await spawnWorker(stack, { WORKER_METRICS_PORT: String(port), METRICS_TOKEN: token });
    try {
      const outside = outsideAddress();
      expect(await scrape(outside, port, `Bearer ${token}`)).toEqual({ error: 'ECONNREFUSED' });
      expect(await scrape(outside, port + 1)).toEqual({ error: 'ECONNREFUSED' });

      const missing = await scrape('127.0.0.1', port);
      expect(missing.status).toBe(401);
      expect(JSON.parse(missing.body!)).toMatchObject({ success: false, error: { code: 401, details: { reason: 'missing_authorization' } } });
      for (const wrong of [`Bearer ${token}x`, `Basic ${token}`, token]) {
        const res = await scrape('127.0.0.1', port, wrong);
        expect([res.status, JSON.parse(res.body!).error?.details.reason], wrong).toEqual([401, 'invalid_token']);
        expect(res.body).not.toContain('# TYPE');
      }
      const scraped = await scrape('127.0.0.1', port, `Bearer ${token}`);
      expect(scraped.status).toBe(200);
      expect(scraped.body).toContain('# TYPE');
      // The Temporal SDK's exporter has no authentication of its own: the host is its only guard.
      expect((await scrape('127.0.0.1', port + 1)).status).toBe(200);
    } finally {
      await worker.stop();
    }
  }, 90_000);

  it('listen on WORKER_METRICS_HOST when it is set', async () => {
    const port = await freePorts();
    const outside = outsideAddress();
    const worker = await spawnWorker(stack, { WORKER_METRICS_PORT: String(port), WORKER_METRICS_HOST: outside, METRICS_TOKEN: token });
    try {
      expect((await scrape(outside, port, `Bearer ${token}`)).status).toBe(200);
      expect((await scrape(outside, port + 1)).status).toBe(200);
      expect(await scrape('127.0.0.1', port, `Bearer ${token}`)).toEqual({ error: 'ECONNREFUSED' });
      expect(await scrape('127.0.0.1', port + 1)).toEqual({ error: 'ECONNREFUSED' });
    } finally {
      await worker.stop();
    }
  }, 90_000);
});
