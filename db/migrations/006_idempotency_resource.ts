import type { Knex } from 'knex';

/**
 * The id of the resource a request with an Idempotency-Key is creating, reserved before the resource
 * exists: a retry that takes over after a crash creates the same resource (same payment, same workflow).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('core').alterTable('idempotency_keys', (t) => {
    t.text('resource_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('core').alterTable('idempotency_keys', (t) => {
    t.dropColumn('resource_id');
  });
}
