import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * Sealed commands used once (docs/security.md §16). `payment_commands`: each sealed confirm's and
 * capture's one-time command id, claimed by the activity that acts on it for one use (`used_by`: the
 * routing plan, or the capture's processor key), so the seal copied from a history into a new update is
 * refused while a retry of the same use goes on. `payments.workflow_run_id`: the workflow run that wrote the row,
 * so a closed payment's workflow restarted with its copied start seal writes nothing.
 */
export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw('ALTER TABLE ??.payments ADD COLUMN workflow_run_id text', [schema]);
    await knex.schema.withSchema(schema).createTable('payment_commands', (t) => {
      t.text('payment_id').notNullable();
      t.text('command_id').notNullable();
      t.text('kind').notNullable();
      t.text('used_by').notNullable();
      t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
      t.primary(['payment_id', 'command_id']);
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.schema.withSchema(schema).dropTable('payment_commands');
    await knex.raw('ALTER TABLE ??.payments DROP COLUMN workflow_run_id', [schema]);
  }
}
