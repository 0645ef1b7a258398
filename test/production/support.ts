import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { ConfigError } from '../../lib/config';
import { loadConfig } from '../../db/local-state';
import { stackProcessEnv, TestStack } from '../support/stack';

/**
 * A binary installed with pip (`st` from schemathesis): the Python scripts folder first (where pip puts
 * it, before any pyenv rehash), then PATH. Undefined when it is not installed.
 */
export function findPythonTool(binary: string): string | undefined {
  const dirs: string[] = [];
  try {
    dirs.push(execFileSync('python3', ['-c', 'import sysconfig;print(sysconfig.get_path("scripts"))'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    // no Python: PATH only
  }
  dirs.push(...(process.env.PATH ?? '').split(':').filter(Boolean));
  return dirs.map((dir) => join(dir, binary)).find((path) => existsSync(path));
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A TCP port that was free a moment ago (for servers that must come back on the same port). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * A TCP proxy in front of a server (Postgres) that a test can cut: `cut()` destroys every open
 * connection and refuses new ones until `restore()`, as a network partition or a restarting server would.
 */
export class TcpProxy {
  private readonly sockets = new Set<import('node:net').Socket>();
  private down = false;
  private constructor(private readonly server: import('node:net').Server, readonly port: number) {}

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    const { connect, createServer } = await import('node:net');
    const server = createServer((client) => {
      if (proxy.down) { client.destroy(); return; }
      const upstream = connect(targetPort, targetHost);
      for (const socket of [client, upstream]) {
        proxy.sockets.add(socket);
        socket.on('close', () => proxy.sockets.delete(socket));
        socket.on('error', () => { client.destroy(); upstream.destroy(); });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // The connection handler runs only once listening, after `proxy` exists.
    const proxy = new TcpProxy(server, (server.address() as { port: number }).port);
    return proxy;
  }

  cut(): void {
    this.down = true;
    for (const socket of this.sockets) socket.destroy();
  }

  restore(): void {
    this.down = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

export interface ChildProcessHandle {
  proc: import('node:child_process').ChildProcess;
  url: string;
  /** Everything the process wrote to stdout and stderr. */
  output(): string;
  exited: Promise<number | null>;
}

/** The real API process (api/main.ts) on its own port, wired like `stack`; resolves once /healthz answers. */
export async function spawnApi(stack: TestStack, env: Record<string, string> = {}): Promise<ChildProcessHandle> {
  const { spawn } = await import('node:child_process');
  const port = await freePort();
  const root = join(__dirname, '..', '..');
  const proc = spawn(process.execPath, ['--import', 'tsx', join(root, 'api', 'main.ts')], {
    cwd: root,
    env: {
      ...stackProcessEnv(stack, 'test-api'),
      PORT: String(port),
      WEBHOOK_ALLOW_PRIVATE: 'true',
      RATE_LIMIT_RPS: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout!.on('data', (c: Buffer) => { output += c.toString(); });
  proc.stderr!.on('data', (c: Buffer) => { output += c.toString(); });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while (!(await fetch(`${url}/healthz`).then((r) => r.ok, () => false))) {
    if (proc.exitCode !== null) throw new Error(`the API process exited (${proc.exitCode}):\n${output.slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`the API process did not answer within 30 s:\n${output.slice(-2000)}`);
    await sleep(100);
  }
  return { proc, url, output: () => output, exited };
}

/** A production environment with real secrets, as `openssl rand -base64 48` / `-base64 32` make them. */
export function productionEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    NODE_ENV: 'production',
    SB_DATA_DIR: mkdtempSync(join(tmpdir(), 'sb-production-')),
    JWT_SECRET: randomBytes(48).toString('base64'),
    SYSTEM_JWT_SECRET: randomBytes(48).toString('base64'),
    VAULT_KEY: randomBytes(32).toString('base64'),
    API_KEY_PEPPER: randomBytes(32).toString('base64'),
    METRICS_TOKEN: randomBytes(32).toString('base64'),
    ...extra,
  };
}

/** The message a configuration is refused with (a ConfigError); fails the test when it is accepted. */
export function configError(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('loadConfig accepted the configuration');
}

/** Runs a TypeScript entry point as its own process (tsx), its output collected; killed after 45 s. */
export function runEntryPoint(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: join(__dirname, '..', '..'), env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => { output += c.toString(); });
    child.stderr.on('data', (c: Buffer) => { output += c.toString(); });
    const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    child.once('error', reject);
    child.once('exit', (code) => { clearTimeout(timer); resolve({ code, output }); });
  });
}
