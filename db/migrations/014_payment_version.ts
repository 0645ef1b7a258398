import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * A payment row's `version`: 0 when inserted, one more with every update, set by a trigger so that no
 * writer (an outcome, a command, a refund's settlement, an operator's script) can forget it. An attempt's
 * outcome is written only while its payment's row is at the version the attempt read or wrote
 * (`chargeOutcomeUpdate`, db/payments.ts): a writer's `updated_at` is its own clock at millisecond
 * precision, so two writes in the same millisecond could not be told apart by it.
 */
export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw('ALTER TABLE ??.payments ADD COLUMN version integer NOT NULL DEFAULT 0', [schema]);
    await knex.raw(`CREATE FUNCTION ??.payments_next_version() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.version := OLD.version + 1;
        RETURN NEW;
      END $$`, [schema]);
    await knex.raw(`CREATE TRIGGER payments_version BEFORE UPDATE ON ??.payments
      FOR EACH ROW EXECUTE FUNCTION ??.payments_next_version()`, [schema, schema]);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw('DROP TRIGGER payments_version ON ??.payments', [schema]);
    await knex.raw('DROP FUNCTION ??.payments_next_version()', [schema]);
    await knex.raw('ALTER TABLE ??.payments DROP COLUMN version', [schema]);
  }
}
