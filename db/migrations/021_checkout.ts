import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * Checkout sessions and payment links (docs/checkout.md), in each environment's schema. A session's
 * `payment_id` has no foreign key: the session's workflow writes the session's row before it starts the
 * payment whose row follows. The list indexes are the payments list's (011): the account, optionally the
 * status (or whether a link is active), then newest first with the id breaking ties, so a keyset page is
 * one index seek.
 */
export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    const ts = (t: Knex.CreateTableBuilder) => {
      t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
      t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    };
    await knex.schema.withSchema(schema).createTable('payment_links', (t) => {
      t.text('id').primary();
      t.text('account_id').notNullable();
      t.boolean('active').notNullable().defaultTo(true);
      t.bigInteger('amount').notNullable();
      t.text('currency').notNullable();
      t.jsonb('line_items');
      t.text('success_url');
      t.jsonb('metadata').notNullable().defaultTo('{}');
      ts(t);
    });
    await knex.schema.withSchema(schema).createTable('checkout_sessions', (t) => {
      t.text('id').primary();
      t.text('account_id').notNullable();
      t.text('status').notNullable().defaultTo('OPEN');
      t.text('payment_status').notNullable().defaultTo('UNPAID');
      t.bigInteger('amount').notNullable();
      t.text('currency').notNullable();
      t.jsonb('line_items');
      // Null only on a session a payment link opened without a success_url: the hosted page thanks the customer itself.
      t.text('success_url');
      t.text('cancel_url');
      t.text('customer_id');
      t.boolean('save_payment_method').notNullable().defaultTo(false);
      t.boolean('auto_capture').notNullable().defaultTo(true);
      t.text('payment_id').notNullable().unique();
      t.text('payment_link_id').references('id').inTable(`${schema}.payment_links`);
      t.jsonb('metadata').notNullable().defaultTo('{}');
      t.timestamp('expires_at', { useTz: true, precision: 3 }).notNullable();
      ts(t);
      t.check(`status IN ('OPEN', 'COMPLETE', 'EXPIRED')`, [], 'checkout_sessions_status');
      t.check(`payment_status IN ('UNPAID', 'PAID')`, [], 'checkout_sessions_payment_status');
    });
    await knex.raw('CREATE INDEX checkout_sessions_account_status_created_id_index ON ??.checkout_sessions (account_id, status, created_at DESC, id DESC)', [schema]);
    await knex.raw('CREATE INDEX checkout_sessions_account_created_id_index ON ??.checkout_sessions (account_id, created_at DESC, id DESC)', [schema]);
    await knex.raw('CREATE INDEX payment_links_account_active_created_id_index ON ??.payment_links (account_id, active, created_at DESC, id DESC)', [schema]);
    await knex.raw('CREATE INDEX payment_links_account_created_id_index ON ??.payment_links (account_id, created_at DESC, id DESC)', [schema]);
  }
  // The managed secret key an account is made with holds every permission (as 018 did for its own).
  await knex.raw(`UPDATE core.api_keys SET permissions = permissions || jsonb_build_object('checkout', '["read", "write"]'::jsonb)
    WHERE managed AND type = 'SECRET' AND permissions -> 'checkout' IS NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`UPDATE core.api_keys SET permissions = permissions - 'checkout' WHERE managed AND type = 'SECRET'`);
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.schema.withSchema(schema).dropTable('checkout_sessions');
    await knex.schema.withSchema(schema).dropTable('payment_links');
  }
}
