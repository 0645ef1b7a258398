import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * Webhooks (docs/webhooks.md), in each environment's schema like every other environment table, so a sandbox
 * event can only ever meet sandbox endpoints. Endpoint secrets are stored encrypted (vault): signing
 * needs the plaintext, so a hash would not do.
 */
async function createWebhookTables(knex: Knex, schema: string): Promise<void> {
  const ts = (t: Knex.CreateTableBuilder) => {
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
  };
  const at = (t: Knex.CreateTableBuilder, column: string) => t.timestamp(column, { useTz: true, precision: 3 });

  await knex.schema.withSchema(schema).createTable('webhook_endpoints', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable();
    t.text('url').notNullable();
    t.text('description');
    t.jsonb('events').notNullable().defaultTo('["*"]');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.text('status').notNullable().checkIn(['pending_verification', 'enabled', 'disabled']);
    // Why it is disabled: manual, gone (410), failing (5 days of failures).
    t.text('disabled_reason');
    t.text('secret_encrypted').notNullable();
    // During a rotation: the previous secret, still signed with until it expires.
    t.text('previous_secret_encrypted');
    at(t, 'previous_secret_expires_at');
    t.integer('secret_rotation').notNullable().defaultTo(0);
    t.integer('verification_count').notNullable().defaultTo(0);
    // The last handshake: { ok, status_code, error, duration_ms, url, at }.
    t.jsonb('verification');
    // The URL the last successful handshake proved, and when.
    t.text('verified_url');
    at(t, 'verified_at');
    // Start of the current run of failed attempts (null after any success).
    at(t, 'failing_since');
    t.boolean('deleted').notNullable().defaultTo(false);
    ts(t);
    t.index(['account_id', 'created_at']);
  });

  await knex.schema.withSchema(schema).createTable('webhook_deliveries', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable();
    t.text('endpoint_id').notNullable().references('id').inTable(`${schema}.webhook_endpoints`);
    t.text('event_id').notNullable().references('id').inTable(`${schema}.events`);
    t.text('event_type').notNullable();
    // The signed body, built once at fan-out so every attempt and replay sends the same bytes.
    t.text('payload').notNullable();
    t.text('status').notNullable().checkIn(['pending', 'succeeded', 'failed', 'dead_lettered']);
    t.integer('attempt_count').notNullable().defaultTo(0);
    t.integer('replay_count').notNullable().defaultTo(0);
    t.text('workflow_id');
    at(t, 'next_attempt_at');
    at(t, 'last_attempt_at');
    t.integer('last_status_code');
    t.text('last_error');
    at(t, 'succeeded_at');
    at(t, 'dead_lettered_at');
    ts(t);
    t.unique(['event_id', 'endpoint_id']);
    t.index(['account_id', 'created_at']);
    t.index(['endpoint_id', 'created_at']);
    t.index(['account_id', 'status']);
  });

  await knex.schema.withSchema(schema).createTable('webhook_attempts', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable();
    t.text('delivery_id').notNullable().references('id').inTable(`${schema}.webhook_deliveries`);
    t.text('endpoint_id').notNullable();
    t.integer('attempt_no').notNullable();
    // automatic (the schedule) or replay (replay, recover).
    t.text('trigger').notNullable();
    t.text('url').notNullable();
    t.integer('webhook_timestamp').notNullable();
    // 0 when no HTTP answer came back (network error, timeout, refused address).
    t.integer('status_code').notNullable();
    t.text('outcome').notNullable().checkIn(['succeeded', 'transient', 'permanent', 'gone']);
    t.integer('duration_ms').notNullable();
    t.text('response_body');
    t.boolean('response_body_truncated').notNullable().defaultTo(false);
    t.text('error');
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.unique(['delivery_id', 'attempt_no']);
  });
}

export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) await createWebhookTables(knex, schema);
}

export async function down(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    for (const table of ['webhook_attempts', 'webhook_deliveries', 'webhook_endpoints']) {
      await knex.schema.withSchema(schema).dropTableIfExists(table);
    }
  }
}
