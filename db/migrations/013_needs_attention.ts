import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * A payment its workflow stopped acting on because Postgres refused one of its writes for good
 * (docs/operators.md#needs-attention): why (`needs_attention_reason`) and since when (`needs_attention_at`).
 * Its status stays what the money says; the partial index serves `ops payments:attention`, which lists them.
 */
export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.schema.withSchema(schema).alterTable('payments', (t) => {
      t.text('needs_attention_reason');
      t.timestamp('needs_attention_at', { useTz: true, precision: 3 });
    });
    await knex.raw('CREATE INDEX payments_needs_attention_index ON ??.payments (needs_attention_at) WHERE needs_attention_at IS NOT NULL', [schema]);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw('DROP INDEX IF EXISTS ??.payments_needs_attention_index', [schema]);
    await knex.schema.withSchema(schema).alterTable('payments', (t) => {
      t.dropColumn('needs_attention_at');
      t.dropColumn('needs_attention_reason');
    });
  }
}
