import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * The per-environment repositories: identical tables in `live` and `sandbox`, so a sandbox credential
 * can never reach live rows (and the reverse) — the schema is chosen before any query is built.
 */
async function createEnvironmentTables(knex: Knex, schema: string): Promise<void> {
  await knex.raw('CREATE SCHEMA IF NOT EXISTS ??', [schema]);
  const s = { createTable: (name: string, cb: (t: Knex.CreateTableBuilder) => void) => knex.schema.withSchema(schema).createTable(name, cb) };
  const ts = (t: Knex.CreateTableBuilder) => {
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
  };
  const ref = (t: Knex.CreateTableBuilder, column: string, table: string) =>
    t.text(column).references('id').inTable(`${schema}.${table}`);

  await s.createTable('customers', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable();
    t.text('name');
    t.text('email');
    t.text('phone');
    t.text('country');
    t.jsonb('alternate_emails').notNullable().defaultTo('[]');
    t.boolean('is_guest').notNullable().defaultTo(false);
    t.boolean('deleted').notNullable().defaultTo(false);
    t.jsonb('metadata').notNullable().defaultTo('{}');
    ts(t);
    t.index(['account_id', 'created_at']);
  });
  await s.createTable('customer_addresses', (t) => {
    t.text('id').primary();
    ref(t, 'customer_id', 'customers').notNullable();
    t.text('type').notNullable().defaultTo('BILLING');
    t.text('label');
    t.text('country');
    t.text('city');
    t.text('state');
    t.text('line1');
    t.text('line2');
    t.text('zip');
    t.boolean('is_default').notNullable().defaultTo(false);
    ts(t);
    t.index(['customer_id', 'type']);
  });
  // At most one default address per customer and type, whatever the concurrency.
  await knex.raw(
    `CREATE UNIQUE INDEX customer_addresses_one_default ON ??.customer_addresses (customer_id, type) WHERE is_default`,
    [schema],
  );
  await s.createTable('payment_methods', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable();
    ref(t, 'customer_id', 'customers');
    t.text('type').notNullable().defaultTo('CARD');
    t.text('card_network');
    t.text('card_last4');
    t.integer('card_exp_month');
    t.integer('card_exp_year');
    t.text('card_country');
    t.text('card_fingerprint');
    t.text('holder_name');
    t.text('pan_encrypted').notNullable();
    t.text('cvc_encrypted');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.boolean('deleted').notNullable().defaultTo(false);
    ts(t);
    t.index(['account_id']);
    t.index(['customer_id']);
  });
  await s.createTable('payment_providers', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.text('identifier').notNullable();
    t.text('country');
    t.jsonb('schemas').notNullable().defaultTo('{}');
    t.jsonb('config').notNullable().defaultTo('{}');
    t.boolean('is_global').notNullable().defaultTo(false);
    ts(t);
  });
  await s.createTable('payment_provider_methods', (t) => {
    t.text('id').primary();
    ref(t, 'payment_provider_id', 'payment_providers').notNullable();
    t.text('name').notNullable();
    t.text('category').notNullable();
    t.text('type').notNullable();
    t.text('network');
    t.boolean('installments_supported').notNullable().defaultTo(false);
    t.jsonb('txn_mappings').notNullable().defaultTo('[]');
    ts(t);
    t.index(['payment_provider_id']);
  });
  await s.createTable('payment_provider_configs', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable();
    ref(t, 'payment_provider_id', 'payment_providers').notNullable();
    t.text('name').notNullable();
    t.text('credentials_encrypted').notNullable();
    t.jsonb('merchant_capabilities').notNullable().defaultTo('{}');
    t.boolean('deleted').notNullable().defaultTo(false);
    ts(t);
    t.index(['account_id']);
  });
  await s.createTable('payment_provider_config_fees', (t) => {
    t.text('id').primary();
    ref(t, 'payment_provider_config_id', 'payment_provider_configs').notNullable();
    ref(t, 'payment_provider_method_id', 'payment_provider_methods').notNullable();
    t.integer('installment_count').notNullable().defaultTo(1);
    t.decimal('volume_fee', 8, 4).notNullable().defaultTo(0);
    t.bigInteger('fixed_fee').notNullable().defaultTo(0);
    t.text('fixed_fee_currency').notNullable();
    ts(t);
    t.index(['payment_provider_config_id']);
  });
  await s.createTable('payment_provider_config_routing_rules', (t) => {
    t.text('id').primary();
    ref(t, 'payment_provider_config_id', 'payment_provider_configs').notNullable();
    t.jsonb('conditions').notNullable();
    ts(t);
    t.index(['payment_provider_config_id']);
  });
  await s.createTable('payments', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable();
    t.text('customer_id');
    t.text('checkout_session_id');
    t.text('payment_method_id');
    t.bigInteger('amount').notNullable();
    t.text('currency').notNullable();
    t.text('status').notNullable();
    t.boolean('auto_capture').notNullable().defaultTo(true);
    t.text('secure_mode').notNullable().defaultTo('NONE');
    t.integer('installments').notNullable().defaultTo(1);
    t.text('routing_origin').notNullable().defaultTo('MERCHANT_DIRECT');
    t.jsonb('routing').notNullable().defaultTo('{}');
    t.bigInteger('amount_capturable').notNullable().defaultTo(0);
    t.bigInteger('amount_received').notNullable().defaultTo(0);
    t.bigInteger('amount_refunded').notNullable().defaultTo(0);
    t.text('cancellation_reason');
    t.jsonb('last_error');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    ts(t);
    t.index(['account_id', 'created_at']);
    t.index(['account_id', 'status']);
  });
  await s.createTable('routing_plans', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable();
    ref(t, 'payment_id', 'payments').notNullable();
    t.text('request_id');
    t.text('trace_id');
    t.integer('current_index').notNullable().defaultTo(0);
    t.text('routing_origin').notNullable().defaultTo('MERCHANT_DIRECT');
    t.jsonb('candidates').notNullable().defaultTo('[]');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    ts(t);
    t.index(['account_id', 'created_at']);
    t.index(['payment_id']);
  });
  await s.createTable('charges', (t) => {
    t.text('id').primary();
    ref(t, 'payment_id', 'payments').notNullable();
    t.text('payment_method_id');
    t.text('customer_id');
    t.text('account_id').notNullable();
    t.text('status').notNullable();
    t.bigInteger('amount').notNullable();
    t.bigInteger('authorized_amount').notNullable().defaultTo(0);
    t.bigInteger('captured_amount').notNullable().defaultTo(0);
    t.bigInteger('refunded_amount').notNullable().defaultTo(0);
    // Refunds accepted but not yet settled: reserved so that concurrent refunds can never over-refund.
    t.bigInteger('pending_refund_amount').notNullable().defaultTo(0);
    t.text('currency').notNullable();
    t.integer('installments').notNullable().defaultTo(1);
    t.integer('attempt_no').notNullable();
    t.jsonb('security').notNullable().defaultTo('{}');
    t.jsonb('transaction').notNullable().defaultTo('{}');
    t.jsonb('details').notNullable().defaultTo('{}');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.jsonb('exchanges').notNullable().defaultTo('[]');
    t.jsonb('performance').notNullable().defaultTo('{}');
    ref(t, 'routing_plan_id', 'routing_plans');
    t.text('payment_provider_id');
    t.text('payment_provider_config_id');
    t.text('payment_provider_method_id');
    t.text('routing_origin').notNullable().defaultTo('MERCHANT_DIRECT');
    t.jsonb('payment_provider_config_snapshot').notNullable().defaultTo('{}');
    t.text('decline_code');
    t.text('provider_reference');
    ts(t);
    t.index(['payment_id']);
    t.unique(['routing_plan_id', 'attempt_no']);
    t.check('captured_amount >= refunded_amount + pending_refund_amount', [], 'charges_refunds_within_captured');
    t.check('refunded_amount >= 0 AND pending_refund_amount >= 0', [], 'charges_refunds_non_negative');
  });
  await s.createTable('refunds', (t) => {
    t.text('id').primary();
    t.text('account_id').notNullable();
    ref(t, 'charge_id', 'charges').notNullable();
    ref(t, 'payment_id', 'payments').notNullable();
    t.text('status').notNullable();
    t.text('reason');
    t.text('reason_other');
    t.text('failure_reason');
    t.bigInteger('amount').notNullable();
    t.text('currency').notNullable();
    t.jsonb('metadata').notNullable().defaultTo('{}');
    ts(t);
    t.index(['account_id', 'created_at']);
    t.index(['charge_id']);
  });
  await s.createTable('events', (t) => {
    t.text('id').primary();
    t.text('event').notNullable();
    t.text('account_id').notNullable();
    t.text('workspace_id');
    t.jsonb('data').notNullable().defaultTo('{}');
    t.integer('version').notNullable().defaultTo(1);
    for (const c of ['request_id', 'trace_id', 'region', 'subject_type', 'subject_id', 'payment_id', 'charge_id',
      'refund_id', 'checkout_session_id', 'actor_type', 'actor_id', 'api_key_id', 'service', 'routing_plan_id',
      'attempt_id']) t.text(c);
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.index(['account_id', 'created_at']);
    t.index(['payment_id', 'created_at']);
  });
}

export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) await createEnvironmentTables(knex, schema);
}

export async function down(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) await knex.raw('DROP SCHEMA IF EXISTS ?? CASCADE', [schema]);
}
