import knex, { Knex } from 'knex';
import pg from 'pg';
import { migrationSource } from './migrations';
import { isoFromPostgresUtc } from '../lib/timestamps';

// bigint columns hold money in minor units (≤ 99,999,999): safe as JS numbers, so parse them as such.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

export type Db = Knex;

const TIMESTAMPTZ = pg.types.builtins.TIMESTAMPTZ;
const parseTimestamptz = pg.types.getTypeParser(TIMESTAMPTZ, 'text') as (text: string) => Date;

/** A timestamptz's text as the API shows it, straight from Postgres's UTC text, else through a Date. */
function timestampAsIso(text: string): string {
  return isoFromPostgresUtc(text) ?? parseTimestamptz(text).toISOString();
}

/**
 * Query options (knex's `.options()`, handed to pg) for reads whose rows go straight into an answer: their
 * timestamptz columns come back as the API's ISO-8601 text instead of Dates, which the answer would
 * only turn back into that text (a page of payments spent a tenth of its CPU parsing and reformatting
 * them). Every other type is parsed as everywhere else.
 */
export const TIMESTAMPS_AS_ISO = {
  types: {
    getTypeParser: (oid: number, format?: 'text' | 'binary') => (oid === TIMESTAMPTZ ? timestampAsIso : pg.types.getTypeParser(oid, format)),
  },
};

/** A row as such a read gives it: its `created_at` and `updated_at` in the API's ISO-8601 text. */
export type AsAnswered<Row extends { created_at: Date; updated_at: Date }> = Omit<Row, 'created_at' | 'updated_at'> & { created_at: string; updated_at: string };

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
