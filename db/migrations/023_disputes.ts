import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * Disputes (docs/disputes.md), in each environment's schema: one row per processor dispute
 * (`disputes_processor_dispute` makes a dispute reported twice one row), the provider events applied to
 * it (so each applies once), and what it withdrew and gave back.
 */
/** The sandbox's dispute timing knobs as of today (docs/sandbox-processor.md#disputes-in-the-sandbox). */
const DISPUTE_KNOBS = {
  dispute_after_ms: { type: 'integer', minimum: 0, maximum: 3_600_000, description: 'how long after a dispute test card is captured its dispute comes (default 2000)' },
  dispute_due_in_ms: { type: 'integer', minimum: 0, maximum: 1_814_400_000, description: 'how long a dispute gives to answer, from its creation (default 7 days)' },
  dispute_decision_ms: { type: 'integer', minimum: 0, maximum: 3_600_000, description: 'how long a submitted dispute waits for its decision, and an early fraud warning before it closes (default 1000)' },
};

export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    // A dispute's notice as the parser normalized it: its workflow's activity applies it from here.
    await knex.schema.withSchema(schema).alterTable('provider_events', (t) => {
      t.jsonb('dispute');
    });
    await knex.schema.withSchema(schema).createTable('disputes', (t) => {
      t.text('id').primary();
      t.text('account_id').notNullable();
      t.text('payment_id').notNullable();
      t.text('charge_id').notNullable();
      t.text('payment_provider_config_id').notNullable();
      t.text('processor_dispute_id').notNullable();
      t.bigInteger('amount').notNullable();
      t.text('currency').notNullable();
      t.text('reason').notNullable().defaultTo('general');
      t.text('processor_reason');
      t.text('status').notNullable();
      // When the processor said the status it now has: an older notice never overwrites a newer one.
      t.timestamp('status_at', { useTz: true, precision: 3 }).notNullable();
      t.boolean('is_inquiry').notNullable().defaultTo(false);
      t.timestamp('evidence_due_by', { useTz: true, precision: 3 });
      t.jsonb('evidence').notNullable().defaultTo('{}');
      t.timestamp('evidence_submitted_at', { useTz: true, precision: 3 });
      t.timestamp('reminded_at', { useTz: true, precision: 3 });
      t.timestamp('overdue_at', { useTz: true, precision: 3 });
      t.jsonb('balance_transactions').notNullable().defaultTo('[]');
      t.jsonb('applied_event_ids').notNullable().defaultTo('[]');
      t.jsonb('exchanges').notNullable().defaultTo('[]');
      t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
      t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
      t.unique(['payment_provider_config_id', 'processor_dispute_id'], { indexName: 'disputes_processor_dispute' });
      t.check(`status IN ('WARNING_NEEDS_RESPONSE', 'WARNING_UNDER_REVIEW', 'WARNING_CLOSED', 'NEEDS_RESPONSE', 'UNDER_REVIEW', 'WON', 'LOST')`, [], 'disputes_status');
    });
    await knex.raw('CREATE INDEX disputes_account_created_id_index ON ??.disputes (account_id, created_at DESC, id DESC)', [schema]);
    await knex.raw('CREATE INDEX disputes_account_status_created_id_index ON ??.disputes (account_id, status, created_at DESC, id DESC)', [schema]);
    await knex.raw('CREATE INDEX disputes_charge_index ON ??.disputes (charge_id)', [schema]);
    // The dispute rate's denominator (charges captured in a range, per account: /v1/analytics/providers) seeks by this.
    await knex.raw('CREATE INDEX charges_account_created_index ON ??.charges (account_id, created_at)', [schema]);
  }
  // Sandbox providers keep the credentials schema they were registered with: give theirs the dispute knobs.
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw(`UPDATE ??.payment_providers
      SET schemas = jsonb_set(schemas, '{credentials,properties,simulate,properties}', (schemas #> '{credentials,properties,simulate,properties}') || ?::jsonb)
      WHERE identifier = 'sandbox' AND schemas #> '{credentials,properties,simulate,properties}' IS NOT NULL`, [schema, JSON.stringify(DISPUTE_KNOBS)]);
  }
  await knex.raw(`UPDATE core.api_keys SET permissions = permissions || jsonb_build_object('dispute', '["read", "write"]'::jsonb)
    WHERE managed AND type = 'SECRET' AND permissions -> 'dispute' IS NULL`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`UPDATE core.api_keys SET permissions = permissions - 'dispute' WHERE managed AND type = 'SECRET'`);
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw(`UPDATE ??.payment_providers SET schemas = schemas
      #- '{credentials,properties,simulate,properties,dispute_after_ms}' #- '{credentials,properties,simulate,properties,dispute_due_in_ms}'
      #- '{credentials,properties,simulate,properties,dispute_decision_ms}' WHERE identifier = 'sandbox'`, [schema]);
    await knex.raw('DROP INDEX ??.charges_account_created_index', [schema]);
    await knex.schema.withSchema(schema).dropTable('disputes');
    await knex.schema.withSchema(schema).alterTable('provider_events', (t) => t.dropColumn('dispute'));
  }
}
