import type { Knex } from 'knex';

/**
 * The lease of the process whose request holds an Idempotency-Key (db/process-lease.ts): a claim whose
 * owner's lease is gone died with its process and is taken over at once, not after a timeout. And a
 * `released` state: a key whose request failed (5xx) but had reserved a resource id keeps that id for
 * its retry, because the failed request may have started the resource's workflow all the same.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('core').alterTable('idempotency_keys', (t) => {
    t.integer('owner_lease');
  });
  await knex.raw(`ALTER TABLE core.idempotency_keys DROP CONSTRAINT idempotency_keys_state_check,
    ADD CONSTRAINT idempotency_keys_state_check CHECK (state IN ('in_progress', 'done', 'released'))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DELETE FROM core.idempotency_keys WHERE state = 'released'`);
  await knex.raw(`ALTER TABLE core.idempotency_keys DROP CONSTRAINT idempotency_keys_state_check,
    ADD CONSTRAINT idempotency_keys_state_check CHECK (state IN ('in_progress', 'done'))`);
  await knex.schema.withSchema('core').alterTable('idempotency_keys', (t) => {
    t.dropColumn('owner_lease');
  });
}
