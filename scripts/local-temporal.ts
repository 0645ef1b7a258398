/**
 * A local Temporal dev server for `npm start`, the bench and the test suite, and what to say when there
 * is no Temporal CLI to run it with (scripts/temporal-cli.ts finds or installs one).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { SEARCH_ATTRIBUTES } from '../contracts/temporal';
import { ROOT_DIR } from '../db/local-state';

/**
 * The binary a local Temporal server runs from: a file on this machine, or the SDK's own download
 * (machines with internet). scripts/temporal-cli.ts decides which (and installs the CLI when it can).
 */
export type TemporalExecutable = { type: 'existing-path'; path: string } | { type: 'cached-download' };

/** What to install when there is no Temporal CLI at all, in one line. */
export const TEMPORAL_CLI_MISSING =
  'Switchboard needs the Temporal CLI: install Python 3 (then npm start installs it) or set TEMPORAL_CLI_PATH / TEMPORAL_ADDRESS';

/** No CLI on this machine, none could be installed and the SDK could not download one. */
export class TemporalCliMissing extends Error {
  constructor() {
    super(TEMPORAL_CLI_MISSING);
    this.name = 'TemporalCliMissing';
  }
}

/** An SDK download that failed becomes TemporalCliMissing; any other failure stays as it is. */
export function explainTemporalStartFailure(err: unknown, executable: TemporalExecutable): unknown {
  const message = err instanceof Error ? err.message : String(err);
  return executable.type === 'cached-download' && /download/i.test(message) ? new TemporalCliMissing() : err;
}

/** TEMPORAL_CLI_PATH (the test suite's global setup sets it to the CLI it resolved), else the SDK's download. */
export function temporalExecutableFromEnv(env: NodeJS.ProcessEnv = process.env): TemporalExecutable {
  return env.TEMPORAL_CLI_PATH ? { type: 'existing-path', path: env.TEMPORAL_CLI_PATH } : { type: 'cached-download' };
}

/** Switchboard's Temporal dynamic config: the compose cluster mounts this file, the dev server gets its keys as flags. */
export const DYNAMIC_CONFIG_FILE = join(ROOT_DIR, 'docker', 'temporal', 'dynamicconfig.yaml');

/**
 * The dev server's `--dynamic-config-value key=JSON` flags for a dynamic config file. A flag sets a key
 * everywhere, so a key with constraints or several values is refused rather than set otherwise here
 * than on the compose cluster.
 */
export function dynamicConfigFlags(yamlText = readFileSync(DYNAMIC_CONFIG_FILE, 'utf8')): string[] {
  const config = (parseYaml(yamlText) ?? {}) as Record<string, { value: unknown; constraints?: object }[]>;
  return Object.entries(config).flatMap(([key, values]) => {
    const [only, ...more] = values;
    if (!only || more.length || Object.keys(only.constraints ?? {}).length) {
      throw new Error(`${key}: the dev server takes one value without constraints for each dynamic config key`);
    }
    return ['--dynamic-config-value', `${key}=${JSON.stringify(only.value)}`];
  });
}

/**
 * The dev server's SQLite pragmas for a file-backed store: it writes ahead (one append and one fsync a
 * commit) instead of keeping SQLite's rollback journal (a journal file created, synced and deleted a
 * commit) — as durable, with synchronous=FULL, for a fraction of the disk work
 * (docs/performance-log.md#temporal-dev-server-store).
 */
export const SQLITE_FILE_PRAGMAS = ['--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=FULL'];

export interface LocalTemporal {
  address: string;
  uiUrl?: string;
  stop(): Promise<void>;
}

/**
 * A local Temporal dev server (SQLite, Web UI) with our search attributes registered and our dynamic
 * config (update-with-start on, among others). Used by `npm start` (persistent, in .data/) and by the tests (ephemeral).
 */
export async function startLocalTemporal(opts: {
  /** Default: temporalExecutableFromEnv(). `npm start`, the bench and the test suite pass ensureTemporalCli()'s. */
  executable?: TemporalExecutable;
  dbFile?: string;
  port?: number;
  uiPort?: number;
  namespace?: string;
  extraNamespaces?: string[];
}): Promise<LocalTemporal> {
  // Loaded lazily: @temporalio/testing is only needed where no TEMPORAL_ADDRESS is configured.
  const { TestWorkflowEnvironment } = await import('@temporalio/testing');
  const executable = opts.executable ?? temporalExecutableFromEnv();
  if (opts.dbFile) mkdirSync(join(opts.dbFile, '..'), { recursive: true });
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: executable.type === 'existing-path' ? { type: 'existing-path', path: executable.path } : { type: 'cached-download' },
      dbFilename: opts.dbFile,
      port: opts.port,
      ui: opts.uiPort !== undefined,
      uiPort: opts.uiPort,
      namespace: opts.namespace ?? 'default',
      searchAttributes: Object.values(SEARCH_ATTRIBUTES),
      log: { format: 'pretty', level: 'error' },
      extraArgs: [
        ...(opts.extraNamespaces ?? []).flatMap((ns) => ['--namespace', ns]),
        ...dynamicConfigFlags(),
        ...(opts.dbFile ? SQLITE_FILE_PRAGMAS : []),
      ],
    },
  }).catch((err: unknown) => { throw explainTemporalStartFailure(err, executable); });
  return {
    address: env.address,
    uiUrl: opts.uiPort !== undefined ? `http://localhost:${opts.uiPort}` : undefined,
    stop: () => env.teardown(),
  };
}
