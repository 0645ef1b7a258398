import type { Knex } from 'knex';

/** Control plane: workspaces, users, accounts, memberships, API keys, notifications, idempotency. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('CREATE SCHEMA IF NOT EXISTS core');
  const s = { createTable: (name: string, cb: (t: Knex.CreateTableBuilder) => void) => knex.schema.withSchema('core').createTable(name, cb) };
  const ts = (t: Knex.CreateTableBuilder) => {
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
  };

  await s.createTable('workspaces', (t) => {
    t.text('id').primary();
    t.text('name');
    ts(t);
  });
  await s.createTable('users', (t) => {
    t.text('id').primary();
    ts(t);
  });
  await s.createTable('accounts', (t) => {
    t.text('id').primary();
    t.text('user_id').notNullable();
    t.text('workspace_id').notNullable().references('id').inTable('core.workspaces');
    t.text('name').notNullable();
    t.text('country');
    t.text('currency');
    t.text('timezone');
    t.text('environment').notNullable().checkIn(['production', 'sandbox']);
    t.text('prod_account_id').references('id').inTable('core.accounts');
    t.boolean('deleted').notNullable().defaultTo(false);
    t.jsonb('metadata').notNullable().defaultTo('{}');
    ts(t);
    t.index(['workspace_id']);
    t.index(['prod_account_id']);
  });
  await s.createTable('account_settings', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('id').inTable('core.accounts');
    t.text('key').notNullable();
    t.text('value').notNullable();
    ts(t);
    t.unique(['account_id', 'key']);
  });
  await s.createTable('account_memberships', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('id').inTable('core.accounts');
    t.text('user_id').notNullable();
    t.text('role').notNullable().checkIn(['OWNER', 'ADMIN', 'DEVELOPER', 'VIEWER']);
    ts(t);
    t.unique(['account_id', 'user_id']);
    t.index(['user_id']);
  });
  await s.createTable('api_keys', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable().references('id').inTable('core.accounts');
    t.text('name').notNullable();
    t.text('type').notNullable().checkIn(['SECRET', 'PUBLISHABLE']);
    t.text('environment').notNullable().checkIn(['production', 'sandbox']);
    t.text('key_hash').notNullable().unique();
    t.text('key_prefix').notNullable();
    t.text('key_last4').notNullable();
    t.text('status').notNullable().defaultTo('ACTIVE');
    t.jsonb('permissions').notNullable().defaultTo('{}');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.boolean('managed').notNullable().defaultTo(false);
    t.boolean('deleted').notNullable().defaultTo(false);
    t.integer('rotation_count').notNullable().defaultTo(0);
    t.text('last_used_ip');
    t.timestamp('last_used_at', { useTz: true, precision: 3 });
    t.timestamp('expires_at', { useTz: true, precision: 3 });
    ts(t);
    t.index(['account_id']);
  });
  await s.createTable('notifications', (t) => {
    t.text('id').primary();
    t.text('user_id');
    t.text('account_id').notNullable().references('id').inTable('core.accounts');
    t.text('type').notNullable();
    t.jsonb('details').notNullable().defaultTo('{}');
    t.timestamp('archived_at', { useTz: true, precision: 3 });
    ts(t);
    t.index(['account_id', 'created_at']);
  });
  await s.createTable('idempotency_keys', (t) => {
    t.text('scope').notNullable();
    t.text('key').notNullable();
    t.text('request_hash').notNullable();
    t.text('state').notNullable().checkIn(['in_progress', 'done']);
    t.integer('response_status');
    t.jsonb('response_body');
    t.jsonb('response_headers');
    t.timestamp('locked_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true, precision: 3 }).notNullable();
    t.primary(['scope', 'key']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP SCHEMA IF EXISTS core CASCADE');
}
