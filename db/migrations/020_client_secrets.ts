import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * What keeps a publishable key from being a card-testing oracle (docs/security.md):
 *
 * * `payments.client_secret`: `<payment id>_secret_<43 url-safe characters>`, the second thing a
 *   publishable key must present to confirm or read a payment. Postgres draws it when the row is inserted
 *   (a trigger, as `version`'s: no writer can forget it, and it never passes through a workflow's input or
 *   an activity's answer, which Temporal keeps in its history). Its random part is two `gen_random_uuid()`s
 *   (PostgreSQL's strong random source, 244 random bits), base64url without padding. Existing rows get one.
 * * `payments.failed_confirmations`: the walks that ended FAILED, written with the outcome that ends each
 *   (contracts/payment-rules.ts MAX_FAILED_CONFIRMATIONS caps them).
 * * `core.checkout_decline_counts`: the decline counters of client-side confirmations, shared by every API
 *   process (rate-limiter-flexible's RateLimiterPostgres, in the table shape it creates itself; created
 *   here so that the API needs no CREATE rights).
 */
const RANDOM_PART = `translate(encode(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'), 'base64'), '+/=', '-_')`;

export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw('ALTER TABLE ??.payments ADD COLUMN client_secret text', [schema]);
    await knex.raw(`UPDATE ??.payments SET client_secret = id || '_secret_' || ${RANDOM_PART}`, [schema]);
    await knex.raw('ALTER TABLE ??.payments ALTER COLUMN client_secret SET NOT NULL', [schema]);
    await knex.raw(`CREATE FUNCTION ??.payments_client_secret() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.client_secret := NEW.id || '_secret_' || ${RANDOM_PART};
        RETURN NEW;
      END $$`, [schema]);
    await knex.raw(`CREATE TRIGGER payments_client_secret BEFORE INSERT ON ??.payments
      FOR EACH ROW EXECUTE FUNCTION ??.payments_client_secret()`, [schema, schema]);
    await knex.raw('ALTER TABLE ??.payments ADD COLUMN failed_confirmations integer NOT NULL DEFAULT 0', [schema]);
  }
  await knex.schema.withSchema('core').createTable('checkout_decline_counts', (t) => {
    t.string('key', 255).primary();
    t.integer('points').notNullable().defaultTo(0);
    t.bigInteger('expire');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.withSchema('core').dropTable('checkout_decline_counts');
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw('ALTER TABLE ??.payments DROP COLUMN failed_confirmations', [schema]);
    await knex.raw('DROP TRIGGER payments_client_secret ON ??.payments', [schema]);
    await knex.raw('DROP FUNCTION ??.payments_client_secret()', [schema]);
    await knex.raw('ALTER TABLE ??.payments DROP COLUMN client_secret', [schema]);
  }
}
