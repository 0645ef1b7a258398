import type { Knex } from 'knex';

/**
 * The audit trail (docs/security.md §19): one row per change an actor made through the API, in the
 * control plane (`core`) beside the accounts and keys it is mostly about, one chain per account (the
 * platform's own changes, such as registering a payment provider, form the chain of account null).
 * Rows are append-only: a trigger refuses UPDATE, DELETE and TRUNCATE, and each row carries a SHA-256
 * over the previous row's hash and its own content, so a row changed behind the trigger's back (by a
 * superuser) breaks the chain that `npm run ops -- audit:verify` walks.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.withSchema('core').createTable('audit_events', (t) => {
    t.text('id').primary();
    t.text('account_id');
    t.text('actor_type').notNullable();
    t.text('actor_id').notNullable();
    t.text('api_key_id');
    t.text('user_id');
    t.text('ip');
    t.text('user_agent');
    t.text('request_id');
    t.text('action').notNullable();
    t.text('resource_type').notNullable();
    t.text('resource_id');
    t.jsonb('changes').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
    t.bigInteger('seq').notNullable();
    t.text('prev_hash');
    t.text('hash').notNullable();
    t.index(['account_id', 'created_at', 'id']);
  });
  // One row per place in each chain: two writers that skipped the per-account lock would collide here.
  await knex.raw(`CREATE UNIQUE INDEX audit_events_chain_seq ON core.audit_events ((coalesce(account_id, '')), seq)`);
  await knex.raw(`CREATE FUNCTION core.audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
    END $$`);
  await knex.raw(`CREATE TRIGGER audit_events_no_change BEFORE UPDATE OR DELETE ON core.audit_events
    FOR EACH ROW EXECUTE FUNCTION core.audit_events_append_only()`);
  await knex.raw(`CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON core.audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION core.audit_events_append_only()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS core.audit_events');
  await knex.raw('DROP FUNCTION IF EXISTS core.audit_events_append_only()');
}
