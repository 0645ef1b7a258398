import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { ROOT_DIR } from '../../db/local-state';
import { SEARCH_ATTRIBUTES } from '../../contracts/temporal';
import { dynamicConfigFlags, SQLITE_FILE_PRAGMAS } from '../local-temporal';

/**
 * The processes the chaos suite runs and kills, each on its own: a deployment's processes, started
 * from their entry points (`node --import tsx <entry>.ts`, so the suite needs no build), each writing
 * its output to a file (a pipe nobody reads fast enough would slow the process down).
 */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Polls `check` every `everyMs` until it is true; false once `timeoutMs` has passed. */
export async function until(check: () => Promise<boolean> | boolean, timeoutMs: number, everyMs = 200): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await sleep(everyMs);
  }
}

export interface ServiceSpec {
  name: string;
  /** The program and its arguments. */
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** Resolves true once the process serves. */
  ready: (service: Service) => Promise<boolean>;
}

/** One process that can be started, SIGKILLed and started again with the same command, ports and files. */
export class Service {
  private proc?: ChildProcess;
  private readonly logFile: string;
  starts = 0;

  constructor(readonly spec: ServiceSpec, logDir: string) {
    this.logFile = join(logDir, `${spec.name}.log`);
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  output(): string {
    try {
      return readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  async start(timeoutMs = 60_000): Promise<void> {
    const out = openSync(this.logFile, 'a');
    const proc = spawn(this.spec.command, this.spec.args, { cwd: ROOT_DIR, env: this.spec.env, stdio: ['ignore', out, out] });
    closeSync(out);
    this.proc = proc;
    this.starts++;
    const up = await until(async () => proc.exitCode !== null || proc.signalCode !== null || await this.spec.ready(this), timeoutMs, 250);
    if (!up || proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(`${this.spec.name} did not start (${proc.exitCode ?? proc.signalCode ?? 'timeout'}):\n${this.output().slice(-2000)}`);
    }
  }

  /** SIGKILL: the process dies wherever it is, as on a crashed machine. */
  async kill(): Promise<void> {
    await this.signal('SIGKILL');
  }

  /** SIGTERM (SIGKILL after 15 s): the end of the run. */
  async stop(): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const killer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
    await this.signal('SIGTERM');
    clearTimeout(killer);
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill(signal);
    await exited;
  }
}

const httpOk = (url: string) => fetch(url, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false);

/** A Node entry point of this repository, run from its TypeScript source. */
export function nodeService(name: string, entry: string, env: NodeJS.ProcessEnv, ready: (service: Service) => Promise<boolean>, nodeArgs: string[] = []): ServiceSpec {
  return { name, command: process.execPath, args: [...nodeArgs, '--import', 'tsx', join(ROOT_DIR, entry)], env: { ...env, SB_PROCESS: `chaos-${name}` }, ready };
}

export const readyWhenHttp = (url: string) => () => httpOk(url);
export const readyWhenLogged = (line: string) => async (service: Service) => service.output().includes(line);

/**
 * The Temporal dev server as a process of its own (the CLI's `server start-dev`, as
 * scripts/local-temporal.ts configures it), on a fixed port and a SQLite file, so that a SIGKILL and a
 * start again find the same state at the same address.
 */
export function temporalService(cli: string, opts: { port: number; httpPort: number; metricsPort: number; dbFile: string }): ServiceSpec {
  const attributes = Object.values(SEARCH_ATTRIBUTES).map((key) => `${key.name}=${key.type === 'KEYWORD' ? 'Keyword' : key.type}`);
  const address = `127.0.0.1:${opts.port}`;
  return {
    name: 'temporal',
    command: cli,
    args: [
      'server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(opts.port), '--http-port', String(opts.httpPort),
      '--metrics-port', String(opts.metricsPort), '--db-filename', opts.dbFile, '--namespace', 'default', '--log-level', 'error',
      ...attributes.flatMap((attribute) => ['--search-attribute', attribute]),
      ...dynamicConfigFlags(), ...SQLITE_FILE_PRAGMAS,
    ],
    env: { ...process.env },
    ready: async () => {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 }).catch(() => undefined);
      if (!connection) return false;
      try {
        await connection.workflowService.describeNamespace({ namespace: 'default' });
        return true;
      } catch {
        return false;
      } finally {
        await connection.close().catch(() => {});
      }
    },
  };
}
