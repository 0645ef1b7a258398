import { createHash } from 'node:crypto';
import knex, { Knex } from 'knex';
import PostgresClient from 'knex/lib/dialects/postgres';
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

/**
 * A statement Postgres parses and plans once per connection and afterwards only executes (a named
 * prepared statement; the name is its key on each connection). Its text names its columns: a prepared
 * `select *` fails on a connection that prepared it before a migration added a column.
 */
export interface PreparedStatement {
  name: string;
  text: string;
  /** Type parsers for its result (TIMESTAMPS_AS_ISO's), else pg's. */
  types?: typeof TIMESTAMPS_AS_ISO.types;
}

/**
 * Runs a prepared statement on a connection of `db`'s pool (a transaction's own connection when `db` is
 * one), without knex's query builder. Kept for the hottest reads: for a payment read by id, building the
 * statement with knex and Postgres parsing and planning it on every call cost about a fifth of the API's
 * and half of Postgres's CPU per request (docs/performance.md).
 */
export async function runPrepared<Row>(db: Knex, statement: PreparedStatement, values: unknown[]): Promise<Row[]> {
  const connection: pg.ClientBase = await db.client.acquireConnection();
  try {
    const { rows } = await connection.query({ name: statement.name, text: statement.text, types: statement.types, values });
    return rows as Row[];
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/**
 * Query options (knex's `.options()`) for a builder's statement that Postgres should parse once per
 * connection and afterwards plan from its cache: a named prepared statement, named by its text's digest
 * (PreparingClient). For the statements every payment runs: the create's and the outcome's, with their
 * CTEs, cost Postgres more to parse and plan than to execute. Two rules: the text names its columns (no
 * `select *`, no `returning *`), since a prepared statement whose result changes shape after a migration
 * fails on every connection that prepared it; and its builder makes few variants of the text, since each
 * variant stays prepared on each connection of the pool.
 */
export const PREPARED = { prepared: true } as const;

/** A projection of every column (`select *`, `returning "t".*`), which a prepared statement must not have. */
const ALL_COLUMNS = /\b(select|returning)\s+("\w+"\.)?\*/i;

/** A statement as knex hands it to its client: its text (`?` placeholders) and its `.options()`. */
interface KnexStatement { sql: string; options?: { prepared?: boolean } }

/** knex's Postgres client, which runs a statement marked PREPARED as a named prepared statement. */
class PreparingClient extends PostgresClient {
  override query(connection: unknown, statement: string | KnexStatement): unknown {
    if (typeof statement === 'string' || !statement.options?.prepared) return super.query(connection, statement);
    if (ALL_COLUMNS.test(statement.sql)) throw new Error(`a prepared statement names its columns: ${statement.sql.slice(0, 120)}`);
    const name = `sb_${createHash('sha1').update(statement.sql).digest('base64url')}`;
    return super.query(connection, { ...statement, options: { ...statement.options, name } });
  }
}

/**
 * A connection of its own, outside `db`'s pool and with its settings, named `<process>:<purpose>` in
 * pg_stat_activity: for a session that must outlive any one query (a lease's lock, a LISTEN). Its owner
 * connects it, ends it, and opens another when it drops.
 */
export function ownConnection(db: Knex, purpose: string): pg.Client {
  const settings = db.client.config.connection as pg.ClientConfig;
  return new pg.Client({ ...settings, application_name: `${settings.application_name ?? 'switchboard'}:${purpose}` });
}

/**
 * A statement of another store run with one of this store's, as a data-modifying CTE of it: one round
 * trip instead of two, each table still written by its own store's builder. Postgres runs every
 * data-modifying CTE exactly once, whether or not the main statement reads it; they share one snapshot
 * and so must not touch the same rows (each is another table's write here).
 */
export type Alongside = Knex.QueryBuilder | Knex.Raw;

/**
 * An Alongside with the name its CTE gets, saying what it does (`charge_recorded`, `plan_stored`): the
 * statement's SQL reads as the steps it takes, and a write that must wait on another names the one it waits on.
 */
export type NamedAlongside = readonly [name: string, statement: Alongside];

/** `query` with `alongside` as its CTEs (see Alongside), each by its name. */
export function withAlongside<Q extends Knex.QueryBuilder>(query: Q, alongside: readonly NamedAlongside[]): Q {
  for (const [name, statement] of alongside) query.with(name, statement);
  return query;
}

/**
 * An insert of `rows` into `table` that writes only if the statement it runs in wrote with the CTE named
 * `write` (see withAlongside): for rows that go in with another
 * store's write of what they belong to and never without it — a retry whose first write finds its row
 * written writes none of them either. The rows go as one JSON value typed by the table's own row type
 * (one parameter however many rows); columns left out take their defaults.
 */
export function insertIfFirstWrote(db: Knex, table: string, rows: readonly object[], write: string): Knex.QueryBuilder {
  const columns = Object.keys(rows[0]);
  const selected = db.raw('select ?? from jsonb_populate_recordset(null::??, ?::jsonb) where exists (select 1 from ??)', [columns, table, JSON.stringify(rows), write]);
  return db.into(db.raw('?? (??)', [table, columns])).insert(selected);
}

/**
 * `statement` (an update or a delete) restricted to a statement whose CTE `write` wrote: as
 * insertIfFirstWrote, for another store's write that must not happen without it.
 */
export function onlyIfFirstWrote(statement: Knex.QueryBuilder, write: string): Knex.QueryBuilder {
  return statement.whereExists((first) => { void first.select(1).from(write); });
}

/** The condition onlyIfFirstWrote adds, for a statement written as SQL: the CTE `write` wrote. */
export function firstWrote(db: Knex, write: string): Knex.Raw {
  return db.raw('exists (select 1 from ??)', [write]);
}

export function createDb(url: string, pool: { min?: number; max?: number } = {}): Db {
  return knex({
    client: PreparingClient,
    connection: { connectionString: url, application_name: process.env.SB_PROCESS ?? 'switchboard' },
    pool: { min: pool.min ?? 0, max: pool.max ?? 10 },
    acquireConnectionTimeout: 10_000,
  });
}

export async function migrate(db: Db): Promise<void> {
  await db.migrate.latest({ migrationSource, tableName: 'knex_migrations', schemaName: 'public' });
}
