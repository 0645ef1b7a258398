import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * A payment's answer reads its disputes in the same statement (db/payments.ts readPayment), and a page of
 * payments in one query, both by payment id: without this index each read scanned the disputes table.
 */
export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw('CREATE INDEX IF NOT EXISTS disputes_payment_index ON ??.disputes (payment_id)', [schema]);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw('DROP INDEX IF EXISTS ??.disputes_payment_index', [schema]);
  }
}
