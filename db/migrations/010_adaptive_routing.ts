import type { Knex } from 'knex';
import { LATENCY_BUCKETS_MS } from '../../lib/routing/adaptive-contract';
import { ENV_SCHEMAS } from '../environments';

/**
 * Adaptive routing (docs/providers-and-routing.md#provider-health). `provider_health`: what each provider
 * config did, one row per minute, card network and currency, counted by the recorder in the transaction
 * that records each charge outcome (db/provider-health.ts). Its primary key leads with (config, minute):
 * the index the routing windows read by; analytics read by (account, minute). `routing_settings`: an
 * account's routing strategy and its parameters; no row means the defaults.
 */
export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.schema.withSchema(schema).createTable('provider_health', (t) => {
      t.text('payment_provider_config_id').notNullable();
      /** The start of the minute the outcomes were recorded in. */
      t.timestamp('minute', { useTz: true }).notNullable();
      /** The card's network; '' when unknown. */
      t.text('card_network').notNullable();
      t.text('currency').notNullable();
      t.text('account_id').notNullable();
      for (const counter of ['attempts', 'approvals', 'hard_declines', 'soft_declines', 'transport_errors', 'unknown']) {
        t.integer(counter).notNullable().defaultTo(0);
      }
      t.bigInteger('latency_ms_sum').notNullable().defaultTo(0);
      t.integer('latency_ms_max').notNullable().defaultTo(0);
      /** Counts of authorize calls per LATENCY_BUCKETS_MS bucket, the last one open-ended. */
      t.specificType('latency_buckets', 'integer[]').notNullable()
        .defaultTo(knex.raw(`array_fill(0, ARRAY[${LATENCY_BUCKETS_MS.length + 1}])`));
      t.timestamp('last_error_at', { useTz: true });
      t.primary(['payment_provider_config_id', 'minute', 'card_network', 'currency']);
      t.index(['account_id', 'minute']);
    });
    await knex.schema.withSchema(schema).createTable('routing_settings', (t) => {
      t.text('account_id').primary();
      t.jsonb('settings').notNullable();
      t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
      t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.schema.withSchema(schema).dropTable('routing_settings');
    await knex.schema.withSchema(schema).dropTable('provider_health');
  }
}
