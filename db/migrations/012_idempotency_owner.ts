import type { Knex } from 'knex';

/**
 * The lease of the process whose request holds an Idempotency-Key (db/process-lease.ts): a claim whose
 * owner's lease is gone died with its process and is taken over at once, not after a timeout.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('core').alterTable('idempotency_keys', (t) => {
    t.integer('owner_lease');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('core').alterTable('idempotency_keys', (t) => {
    t.dropColumn('owner_lease');
  });
}
