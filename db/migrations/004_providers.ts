import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * Providers and routing: one fee per (config, method, installment count), so that a fee schedule is
 * never ambiguous. The API answers a duplicate with 409 fee_already_exists; the index makes that hold
 * under concurrency too.
 */
export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw(
      `CREATE UNIQUE INDEX payment_provider_config_fees_one_per_method
         ON ??.payment_provider_config_fees (payment_provider_config_id, payment_provider_method_id, installment_count)`,
      [schema],
    );
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw('DROP INDEX IF EXISTS ??.payment_provider_config_fees_one_per_method', [schema]);
  }
}
