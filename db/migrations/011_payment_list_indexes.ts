import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * The indexes the payments list reads by (docs/api-conventions.md#pagination): its order, newest first
 * with the id breaking ties, after the account and optionally the status. A page is then an index seek
 * to the cursor and the next `limit` entries, whatever the account's size. They replace
 * (account_id, created_at) and (account_id, status), of which they are extensions.
 *
 * Built CONCURRENTLY, so a live table with millions of payments keeps taking writes while they build;
 * CONCURRENTLY cannot run inside a transaction, hence `transaction: false` (knex then runs this
 * migration outside one, the others still in their own). An interrupted build leaves an INVALID index
 * behind: it is dropped and built again on the next run.
 */
export const config = { transaction: false };

const INDEXES = [
  { name: 'payments_account_status_created_id_index', columns: 'account_id, status, created_at DESC, id DESC' },
  { name: 'payments_account_created_id_index', columns: 'account_id, created_at DESC, id DESC' },
];
const REPLACED = [
  { name: 'payments_account_id_created_at_index', columns: 'account_id, created_at' },
  { name: 'payments_account_id_status_index', columns: 'account_id, status' },
];

async function createIndex(knex: Knex, schema: string, index: { name: string; columns: string }): Promise<void> {
  const { rows } = await knex.raw<{ rows: { valid: boolean }[] }>(
    `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = ? AND c.relname = ?`, [schema, index.name]);
  if (rows[0]?.valid) return;
  if (rows[0]) await knex.raw('DROP INDEX CONCURRENTLY ??.??', [schema, index.name]);
  await knex.raw(`CREATE INDEX CONCURRENTLY ?? ON ??.payments (${index.columns})`, [index.name, schema]);
}

export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    for (const index of INDEXES) await createIndex(knex, schema, index);
    for (const { name } of REPLACED) await knex.raw('DROP INDEX CONCURRENTLY IF EXISTS ??.??', [schema, name]);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    for (const index of REPLACED) await createIndex(knex, schema, index);
    for (const { name } of INDEXES) await knex.raw('DROP INDEX CONCURRENTLY IF EXISTS ??.??', [schema, name]);
  }
}
