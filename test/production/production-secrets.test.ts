import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import jwt from 'jsonwebtoken';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../db/local-state';
import { signDevToken } from '../../lib/tokens';
import { configError, productionEnv, runEntryPoint } from './support';

// No stack needed: SB_NO_STACK=1 npx vitest run test/production/production-secrets.test.ts
const ROOT = join(__dirname, '..', '..');
const EXAMPLE = Object.fromEntries([...readFileSync(join(ROOT, '.env.example'), 'utf8').matchAll(/^([A-Z_]+)=(.*)$/gm)].map((m) => [m[1], m[2]]));
const SECRETS = ['JWT_SECRET', 'SYSTEM_JWT_SECRET', 'VAULT_KEY', 'API_KEY_PEPPER', 'METRICS_TOKEN'] as const;

const scratch = () => mkdtempSync(join(tmpdir(), 'sb-secrets-'));
const goodEnv = productionEnv;

describe('production secrets', () => {
  it('accepts real secrets (and then refuses private webhook URLs)', () => {
    const config = loadConfig(goodEnv());
    expect(config.env).toBe('production');
    expect(config.webhookAllowPrivate).toBe(false);
    expect(config.jwt.systemSecret).toBeDefined();
  });

  it('refuses the .env.example placeholders, naming JWT_SECRET first', () => {
    expect(configError({ ...EXAMPLE, NODE_ENV: 'production', SB_DATA_DIR: scratch() })).toMatch(/^JWT_SECRET\b/);
  });

  it.each(SECRETS)('refuses the .env.example placeholder of %s, naming it and not its value', (name) => {
    expect(EXAMPLE[name], `.env.example has ${name}`).toMatch(/^CHANGE_ME/);
    const message = configError(goodEnv({ [name]: EXAMPLE[name] }));
    expect(message).toContain(name);
    expect(message).toMatch(/placeholder/);
    expect(message).not.toContain(EXAMPLE[name]);
  });

  it('refuses a placeholder Postgres password in DATABASE_URL', () => {
    const url = `postgres://postgres:${EXAMPLE.POSTGRES_PASSWORD}@postgres:5432/switchboard`;
    const message = configError(goodEnv({ DATABASE_URL: url }));
    expect(message).toContain('DATABASE_URL');
    expect(message).not.toContain(EXAMPLE.POSTGRES_PASSWORD);
  });

  it.each([
    ['API_KEY_PEPPER', 'short-pepper-123', /API_KEY_PEPPER .*32 characters/],
    ['API_KEY_PEPPER', randomBytes(16).toString('base64'), /API_KEY_PEPPER .*32 characters/],
    ['JWT_SECRET', randomBytes(16).toString('hex'), /JWT_SECRET .*weak/],
    ['JWT_SECRET', 'a'.repeat(64), /JWT_SECRET .*weak/],
    ['SYSTEM_JWT_SECRET', 'ab'.repeat(40), /SYSTEM_JWT_SECRET .*weak/],
    ['API_KEY_PEPPER', 'abc123'.repeat(10), /API_KEY_PEPPER .*weak/],
    ['VAULT_KEY', randomBytes(16).toString('base64'), /VAULT_KEY .*32 bytes/],
    ['VAULT_KEY', Buffer.alloc(32).toString('base64'), /VAULT_KEY .*weak/],
    ['VAULT_KEY', Buffer.alloc(32, 'ab').toString('base64'), /VAULT_KEY .*weak/],
    ['VAULT_KEY', `${randomBytes(32).toString('base64')}!!`, /VAULT_KEY .*32 bytes/],
  ])('refuses a weak %s (%s)', (name, value, expected) => {
    const message = configError(goodEnv({ [name]: value }));
    expect(message).toMatch(expected);
    expect(message).not.toContain(value);
  });

  it('accepts every generator output the docs name (openssl rand -base64 32/48, -hex 32)', () => {
    for (let i = 0; i < 200; i += 1) {
      expect(() => loadConfig(goodEnv({
        JWT_SECRET: randomBytes(32).toString('hex'), API_KEY_PEPPER: randomBytes(32).toString('base64'),
        SYSTEM_JWT_SECRET: randomBytes(48).toString('base64'), VAULT_KEY: randomBytes(32).toString('base64url'),
      }))).not.toThrow();
    }
  });

  it.each([
    ['JWT_SECRET', 'API_KEY_PEPPER'], ['JWT_SECRET', 'SYSTEM_JWT_SECRET'], ['SYSTEM_JWT_SECRET', 'API_KEY_PEPPER'], ['VAULT_KEY', 'API_KEY_PEPPER'],
  ])('refuses %s equal to %s, naming both', (a, b) => {
    const env = goodEnv();
    const message = configError({ ...env, [b]: env[a] });
    expect(message).toContain(a);
    expect(message).toContain(b);
    expect(message).not.toContain(env[a]);
  });

  it('refuses the system actor\'s public key equal to the users\' one', () => {
    const pem = '-----BEGIN PUBLIC KEY-----\\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\\n-----END PUBLIC KEY-----';
    const message = configError(goodEnv({ JWT_PUBLIC_KEY: pem, SYSTEM_JWT_PUBLIC_KEY: pem, JWT_ISSUER: 'https://id.example.com/', JWT_AUDIENCE: 'switchboard' }));
    expect(message).toMatch(/SYSTEM_JWT_PUBLIC_KEY.*JWT_PUBLIC_KEY|JWT_PUBLIC_KEY.*SYSTEM_JWT_PUBLIC_KEY/);
  });

  it('names every bad variable in one line', () => {
    const message = configError(goodEnv({ JWT_SECRET: 'short', API_KEY_PEPPER: EXAMPLE.API_KEY_PEPPER }));
    expect(message.split('\n')).toHaveLength(1);
    expect(message).toContain('JWT_SECRET');
    expect(message).toContain('API_KEY_PEPPER');
  });
});

describe('NODE_ENV', () => {
  it.each(['staging', 'prod', 'Production', 'PRODUCTION', 'Development', 'testing', 'dev'])('%s runs as production', (nodeEnv) => {
    const dataDir = scratch();
    // Refuses the development defaults (no generated secrets)…
    expect(configError({ NODE_ENV: nodeEnv, SB_DATA_DIR: dataDir })).toMatch(new RegExp(`NODE_ENV=${nodeEnv}.*production|JWT_SECRET`));
    expect(existsSync(join(dataDir, 'secrets.json'))).toBe(false);
    // …and the placeholders…
    expect(configError({ ...EXAMPLE, NODE_ENV: nodeEnv, SB_DATA_DIR: dataDir })).toContain('JWT_SECRET');
    // …and with real secrets it is production: private webhook URLs refused.
    const config = loadConfig(goodEnv({ NODE_ENV: nodeEnv }));
    expect(config.env).toBe('production');
    expect(config.webhookAllowPrivate).toBe(false);
  });

  it.each([[undefined, 'development'], ['', 'development'], ['development', 'development'], ['test', 'test']] as const)(
    '%j is %s (generated secrets, private webhook URLs allowed)', (nodeEnv, mode) => {
      const config = loadConfig({ NODE_ENV: nodeEnv, SB_DATA_DIR: scratch() });
      expect(config.env).toBe(mode);
      expect(config.webhookAllowPrivate).toBe(true);
    },
  );
});

describe('the system actor\'s key', () => {
  it('is generated into .data/secrets.json in development, apart from the users\' key, and added to an older file', () => {
    const dataDir = scratch();
    const config = loadConfig({ NODE_ENV: 'development', SB_DATA_DIR: dataDir });
    const stored = JSON.parse(readFileSync(join(dataDir, 'secrets.json'), 'utf8'));
    expect(config.jwt.systemSecret).toBe(stored.systemJwtSecret);
    expect(config.jwt.systemSecret).not.toBe(config.jwt.secret);

    const older = scratch();
    const before = { jwtSecret: randomBytes(32).toString('base64'), vaultKey: randomBytes(32).toString('base64'), apiKeyPepper: randomBytes(32).toString('base64') };
    writeFileSync(join(older, 'secrets.json'), JSON.stringify(before));
    const upgraded = loadConfig({ NODE_ENV: 'development', SB_DATA_DIR: older });
    expect(upgraded).toMatchObject({ vaultKeys: `k0:${before.vaultKey}`, apiKeyPepper: before.apiKeyPepper, jwt: { secret: before.jwtSecret } });
    expect(upgraded.jwt.systemSecret).toEqual(expect.any(String));
    expect(JSON.parse(readFileSync(join(older, 'secrets.json'), 'utf8'))).toEqual({ ...before, systemJwtSecret: upgraded.jwt.systemSecret });
    expect(loadConfig({ NODE_ENV: 'development', SB_DATA_DIR: older }).jwt.systemSecret).toBe(upgraded.jwt.systemSecret);
  });

  it('`npm run token -- --system` signs with SYSTEM_JWT_SECRET, a user token with JWT_SECRET', () => {
    const config = loadConfig(goodEnv());
    const system = signDevToken(config, { user: 'usr_ops', workspace: 'ws_ops', system: true });
    expect(jwt.verify(system, config.jwt.systemSecret!, { algorithms: ['HS256'] })).toMatchObject({ sub: 'usr_ops', actor_type: 'system' });
    expect(() => jwt.verify(system, config.jwt.secret!, { algorithms: ['HS256'] })).toThrow(/signature/);
    const user = signDevToken(config, { user: 'usr_1', workspace: 'ws_1' });
    expect(jwt.verify(user, config.jwt.secret!, { algorithms: ['HS256'] })).toMatchObject({ actor_type: 'user' });
    expect(() => jwt.verify(user, config.jwt.systemSecret!, { algorithms: ['HS256'] })).toThrow(/signature/);
    expect(() => signDevToken({ ...config, jwt: { ...config.jwt, systemSecret: undefined } }, { user: 'u', workspace: 'w', system: true }))
      .toThrow(/SYSTEM_JWT_SECRET/);
  });
});

describe('a process started with a placeholder secret', () => {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...EXAMPLE,
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    SB_DATA_DIR: scratch(),
    DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere',
    TEMPORAL_ADDRESS: '127.0.0.1:1',
  };

  it.each([
    ['api', ['api/main.ts']],
    ['worker', ['worker/main.ts']],
    ['migrate', ['scripts/migrate.ts']],
    ['start', ['scripts/start.ts']],
    ['token', ['scripts/token.ts', '--system']],
    ['healthcheck worker', ['scripts/healthcheck.ts', 'worker']],
  ])('%s exits non-zero with one line naming the variable', async (_name, args) => {
    const { code, output } = await runEntryPoint(args, env);
    expect(code, output).not.toBe(0);
    expect(code, output).not.toBeNull();
    const lines = output.trim().split('\n');
    expect(lines, output).toHaveLength(1);
    expect(lines[0]).toContain('JWT_SECRET');
    for (const name of SECRETS) expect(output).not.toContain(EXAMPLE[name]);
  });
});
