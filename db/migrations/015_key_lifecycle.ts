import type { Knex } from 'knex';

/**
 * Who created each API key: the kind of credential (`user`, `system`, `api_key`) and its id (the user's
 * or system actor's `sub`, or the key's id), so an audit can follow a key back to whoever made it. Null
 * for keys made with their account (the managed keys) and for keys made before this was recorded.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('core').alterTable('api_keys', (t) => {
    t.text('created_by_type').checkIn(['user', 'system', 'api_key'], 'api_keys_created_by_type_check');
    t.text('created_by_id');
  });
  await knex.raw(`ALTER TABLE core.api_keys ADD CONSTRAINT api_keys_created_by_check
    CHECK ((created_by_type IS NULL) = (created_by_id IS NULL))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('core').alterTable('api_keys', (t) => {
    t.dropChecks(['api_keys_created_by_check', 'api_keys_created_by_type_check']);
    t.dropColumn('created_by_type');
    t.dropColumn('created_by_id');
  });
}
