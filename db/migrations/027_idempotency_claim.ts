import type { Knex } from 'knex';

/**
 * Each claim of an Idempotency-Key gets its own id, so that whoever finishes a claim (stores its answer
 * or releases it) touches that claim only. A process that could not release a claim when its request
 * ended retries later (api/middleware/idempotency.ts); by then a retry may have taken the key over, and
 * that claim is not the old one's to release.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('core').alterTable('idempotency_keys', (t) => {
    t.uuid('claim_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('core').alterTable('idempotency_keys', (t) => {
    t.dropColumn('claim_id');
  });
}
