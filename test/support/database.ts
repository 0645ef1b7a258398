import { inject } from 'vitest';
import { createDb, migrate } from '../../db/knex';

export interface PrivateDatabase { url: string; drop(): Promise<void> }

/**
 * A migrated database of its own on the suite's Postgres server, for a test that acts on every row
 * (a key rotation re-encrypts all of them): the suite's shared database holds other files' rows, under
 * other keys, changing while it runs.
 */
export async function privateDatabase(label: string): Promise<PrivateDatabase> {
  const serverUrl = inject('databaseUrl');
  const admin = createDb(serverUrl, { max: 1 });
  const name = `switchboard_${label}_${Date.now()}_${process.pid}`;
  await admin.raw(`CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = createDb(url.toString(), { max: 2 });
  await migrate(db);
  await db.destroy();
  return {
    url: url.toString(),
    async drop() {
      await admin.raw(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.destroy();
    },
  };
}
