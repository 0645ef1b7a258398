import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * Processor notifications (POST /v1/provider-webhooks/{provider_config_id}): each verified event once per
 * config (`provider_events`, unique on the processor's event id), and what it was delivered to. Payments
 * gain `pending_operation`, a capture or void the processor received and has not reported on yet; charges
 * are found by the processor's reference within a config (Adyen's modification notifications name it).
 */
export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.schema.withSchema(schema).createTable('provider_events', (t) => {
      t.text('id').primary();
      t.text('payment_provider_config_id').notNullable();
      t.text('account_id').notNullable();
      t.text('processor_event_id').notNullable();
      t.text('type').notNullable();
      t.text('operation');
      t.text('payment_id');
      t.text('charge_id');
      t.text('refund_id');
      t.jsonb('outcome');
      t.text('provider_code');
      t.jsonb('payload').notNullable().defaultTo('{}');
      /** When it reached its workflow (a signal), or was found to have none to reach. */
      t.timestamp('delivered_at', { useTz: true });
      /** `signalled`, or why not: `no_target` (not an object we made), `workflow_closed`. */
      t.text('delivery');
      t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      t.unique(['payment_provider_config_id', 'processor_event_id']);
      t.index(['charge_id']);
      t.index(['account_id', 'created_at']);
    });
    await knex.schema.withSchema(schema).alterTable('payments', (t) => {
      t.jsonb('pending_operation');
    });
    await knex.schema.withSchema(schema).alterTable('charges', (t) => {
      t.index(['payment_provider_config_id', 'provider_reference']);
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.schema.withSchema(schema).alterTable('charges', (t) => {
      t.dropIndex(['payment_provider_config_id', 'provider_reference']);
    });
    await knex.schema.withSchema(schema).alterTable('payments', (t) => {
      t.dropColumn('pending_operation');
    });
    await knex.schema.withSchema(schema).dropTable('provider_events');
  }
}
