import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * Customer authentication (3-D Secure, docs/authentication.md). Payments gain the step the customer must
 * take (`next_action`) and where the customer goes once done (`return_url`, given at confirm); charges
 * gain the sealed 3-D Secure result of a successful authentication (`authentication_sealed`, passed to a
 * later candidate so the customer is not challenged twice; never shown) and the sealed query parameters the
 * processor sent the customer back with (`return_params_sealed`, read once by the activity that completes
 * the authentication; they stay out of workflow history).
 */
export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.schema.withSchema(schema).alterTable('payments', (t) => {
      t.jsonb('next_action');
      t.text('return_url');
    });
    await knex.schema.withSchema(schema).alterTable('charges', (t) => {
      t.text('authentication_sealed');
      t.text('return_params_sealed');
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.schema.withSchema(schema).alterTable('charges', (t) => {
      t.dropColumn('authentication_sealed');
      t.dropColumn('return_params_sealed');
    });
    await knex.schema.withSchema(schema).alterTable('payments', (t) => {
      t.dropColumn('return_url');
      t.dropColumn('next_action');
    });
  }
}
