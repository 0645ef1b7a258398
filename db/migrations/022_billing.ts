import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * Billing (docs/billing.md), in each environment's schema: products and their recurring prices, test
 * clocks, subscriptions (their items as one JSON column, written with the row, so a change is one
 * statement), and invoices. `invoices_one_per_period` is what makes a period billed at most once: a
 * renewal replayed after a crash finds its invoice instead of making a second. A saved card keeps the
 * network transaction id of its first approval, which renewals send as merchant-initiated transactions.
 */
const DECLINE_CODE_KNOB = {
  type: 'string',
  enum: ['card_declined', 'insufficient_funds', 'expired_card', 'incorrect_cvc', 'invalid_number', 'stolen_card', 'lost_card', 'fraudulent',
    'do_not_honor', 'processing_error', 'issuer_unavailable', 'try_again_later', 'authentication_required'],
  description: 'every new authorization is declined with this code, hard or soft as the sandbox decline table says',
};

export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    const ts = (t: Knex.CreateTableBuilder) => {
      t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
      t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    };
    const at = (t: Knex.CreateTableBuilder, name: string) => t.timestamp(name, { useTz: true, precision: 3 });
    await knex.schema.withSchema(schema).alterTable('payment_methods', (t) => {
      t.text('network_transaction_id');
    });
    await knex.schema.withSchema(schema).createTable('products', (t) => {
      t.text('id').primary();
      t.text('account_id').notNullable();
      t.text('name').notNullable();
      t.text('description');
      t.boolean('active').notNullable().defaultTo(true);
      t.jsonb('metadata').notNullable().defaultTo('{}');
      ts(t);
    });
    await knex.schema.withSchema(schema).createTable('prices', (t) => {
      t.text('id').primary();
      t.text('account_id').notNullable();
      t.text('product_id').notNullable().references('id').inTable(`${schema}.products`);
      t.boolean('active').notNullable().defaultTo(true);
      t.bigInteger('unit_amount').notNullable();
      t.text('currency').notNullable();
      t.text('interval').notNullable();
      t.integer('interval_count').notNullable().defaultTo(1);
      t.jsonb('metadata').notNullable().defaultTo('{}');
      ts(t);
      t.check(`interval IN ('day', 'week', 'month', 'year')`, [], 'prices_interval');
    });
    await knex.schema.withSchema(schema).createTable('test_clocks', (t) => {
      t.text('id').primary();
      t.text('account_id').notNullable();
      t.text('name');
      at(t, 'frozen_time').notNullable();
      t.text('status').notNullable().defaultTo('READY');
      ts(t);
      t.check(`status IN ('READY', 'ADVANCING')`, [], 'test_clocks_status');
    });
    await knex.schema.withSchema(schema).createTable('subscriptions', (t) => {
      t.text('id').primary();
      t.text('account_id').notNullable();
      t.text('customer_id').notNullable();
      t.text('status').notNullable();
      t.text('currency').notNullable();
      t.text('interval').notNullable();
      t.integer('interval_count').notNullable();
      t.jsonb('items').notNullable();
      t.text('default_payment_method_id').notNullable();
      at(t, 'billing_cycle_anchor').notNullable();
      at(t, 'current_period_start').notNullable();
      at(t, 'current_period_end').notNullable();
      at(t, 'trial_end');
      t.boolean('cancel_at_period_end').notNullable().defaultTo(false);
      at(t, 'canceled_at');
      at(t, 'ended_at');
      t.jsonb('pause_collection');
      // The notices sent for the current period (invoice.upcoming, subscription.trial_will_end), each once.
      t.jsonb('notices_sent').notNullable().defaultTo('[]');
      // Proration lines waiting for the next invoice.
      t.jsonb('pending_lines').notNullable().defaultTo('[]');
      t.text('latest_invoice_id');
      t.text('test_clock_id').references('id').inTable(`${schema}.test_clocks`);
      // On a test clock: the clock time this subscription has caught up with.
      at(t, 'clock_caught_up_to');
      t.jsonb('metadata').notNullable().defaultTo('{}');
      ts(t);
      t.check(`status IN ('INCOMPLETE', 'INCOMPLETE_EXPIRED', 'TRIALING', 'ACTIVE', 'PAST_DUE', 'UNPAID', 'CANCELED')`, [], 'subscriptions_status');
    });
    await knex.schema.withSchema(schema).createTable('invoices', (t) => {
      t.text('id').primary();
      t.text('account_id').notNullable();
      t.text('subscription_id').notNullable().references('id').inTable(`${schema}.subscriptions`);
      t.text('customer_id').notNullable();
      t.text('status').notNullable().defaultTo('DRAFT');
      t.text('billing_reason').notNullable();
      t.text('currency').notNullable();
      at(t, 'period_start').notNullable();
      at(t, 'period_end').notNullable();
      t.jsonb('lines').notNullable();
      t.bigInteger('subtotal').notNullable();
      t.bigInteger('amount_due').notNullable();
      t.bigInteger('amount_paid').notNullable().defaultTo(0);
      t.integer('attempt_count').notNullable().defaultTo(0);
      // Each payment attempt: its payment, status and decline code.
      t.jsonb('attempts').notNullable().defaultTo('[]');
      at(t, 'next_payment_attempt');
      t.text('payment_id');
      t.text('hosted_payment_url');
      at(t, 'finalized_at');
      at(t, 'paid_at');
      at(t, 'voided_at');
      ts(t);
      t.unique(['subscription_id', 'period_start', 'billing_reason'], { indexName: 'invoices_one_per_period' });
      t.check(`status IN ('DRAFT', 'OPEN', 'PAID', 'UNCOLLECTIBLE', 'VOID')`, [], 'invoices_status');
    });
    for (const table of ['products', 'prices', 'subscriptions', 'invoices']) {
      await knex.raw(`CREATE INDEX ${table}_account_created_id_index ON ??.${table} (account_id, created_at DESC, id DESC)`, [schema]);
    }
    await knex.raw('CREATE INDEX invoices_subscription_created_index ON ??.invoices (subscription_id, created_at DESC, id DESC)', [schema]);
    await knex.raw('CREATE INDEX subscriptions_test_clock_index ON ??.subscriptions (test_clock_id) WHERE test_clock_id IS NOT NULL', [schema]);
  }
  // Sandbox providers keep the credentials schema they were registered with: give theirs the
  // `decline_code` knob (docs/sandbox-processor.md), as the catalogue now has it. The codes as of today.
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw(`UPDATE ??.payment_providers
      SET schemas = jsonb_set(schemas, '{credentials,properties,simulate,properties,decline_code}', ?::jsonb)
      WHERE identifier = 'sandbox' AND schemas #> '{credentials,properties,simulate,properties}' IS NOT NULL`, [schema, JSON.stringify(DECLINE_CODE_KNOB)]);
  }
  // The managed secret key an account is made with holds every permission (as 021 did for checkout).
  await knex.raw(`UPDATE core.api_keys SET permissions = permissions || jsonb_build_object('billing', '["read", "write"]'::jsonb)
    WHERE managed AND type = 'SECRET' AND permissions -> 'billing' IS NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`UPDATE core.api_keys SET permissions = permissions - 'billing' WHERE managed AND type = 'SECRET'`);
  for (const schema of Object.values(ENV_SCHEMAS)) {
    for (const table of ['invoices', 'subscriptions', 'test_clocks', 'prices', 'products']) await knex.schema.withSchema(schema).dropTable(table);
    await knex.schema.withSchema(schema).alterTable('payment_methods', (t) => t.dropColumn('network_transaction_id'));
  }
}
