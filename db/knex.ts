import knex, { Knex } from 'knex';
import pg from 'pg';
import { migrationSource } from './migrations';

// bigint columns hold money in minor units (≤ 99,999,999): safe as JS numbers, so parse them as such.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

export type Db = Knex;

export function createDb(url: string, pool: { min?: number; max?: number } = {}): Db {
  return knex({
    client: 'pg',
    connection: { connectionString: url, application_name: process.env.SB_PROCESS ?? 'switchboard' },
    pool: { min: pool.min ?? 0, max: pool.max ?? 10 },
    acquireConnectionTimeout: 10_000,
  });
}

export async function migrate(db: Db): Promise<void> {
  await db.migrate.latest({ migrationSource, tableName: 'knex_migrations', schemaName: 'public' });
}
