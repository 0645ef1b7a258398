import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/** The channel a dispatcher listens on: each notification's payload is the schema whose events fell due. */
export const EVENTS_DUE_CHANNEL = 'switchboard_events_due';

/**
 * The events table becomes the webhooks' outbox (docs/webhooks.md#the-outbox-how-events-leave).
 * `fan_out_due` is set in the statement that writes an event an enabled endpoint listens to, moved a
 * lease ahead while a dispatcher fans it out, and cleared once its deliveries exist; the partial index
 * holds only those still to do, so it stays small however long the timeline grows. A trigger on the rows
 * written due notifies the dispatchers at commit, so one wakes at once instead of on its next poll.
 * `span_id` keeps the span that caused the event, so its fan-out continues that trace.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION public.switchboard_notify_events_due() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('${EVENTS_DUE_CHANNEL}', TG_TABLE_SCHEMA);
      RETURN NULL;
    END $$`);
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw('ALTER TABLE ??.events ADD COLUMN IF NOT EXISTS fan_out_due timestamptz, ADD COLUMN IF NOT EXISTS span_id text', [schema]);
    await knex.raw('CREATE INDEX IF NOT EXISTS events_fan_out_due_index ON ??.events (fan_out_due) WHERE fan_out_due IS NOT NULL', [schema]);
    await knex.raw('DROP TRIGGER IF EXISTS events_due ON ??.events', [schema]);
    // Only a row written due calls the function (the WHEN is checked without it); Postgres sends a
    // transaction's identical notifications once.
    await knex.raw(`CREATE TRIGGER events_due AFTER INSERT ON ??.events FOR EACH ROW WHEN (NEW.fan_out_due IS NOT NULL)
      EXECUTE FUNCTION public.switchboard_notify_events_due()`, [schema]);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw('DROP TRIGGER IF EXISTS events_due ON ??.events', [schema]);
    await knex.raw('DROP INDEX IF EXISTS ??.events_fan_out_due_index', [schema]);
    await knex.raw('ALTER TABLE ??.events DROP COLUMN IF EXISTS fan_out_due, DROP COLUMN IF EXISTS span_id', [schema]);
  }
  await knex.raw('DROP FUNCTION IF EXISTS public.switchboard_notify_events_due()');
}
