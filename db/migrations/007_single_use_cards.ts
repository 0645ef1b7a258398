import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * Saved and single-use cards. A card is either saved to a customer (`customer_id`, reusable for that
 * customer's payments) or bound to the one payment it was given inline for (`payment_id`, single use;
 * its sealed number is erased once that payment no longer needs it). A card with neither may not hold a
 * number any more: `payment_methods_owned` makes that hold for every future row.
 *
 * Existing rows: cards with a customer stay saved and reusable by that customer. Cards without one were
 * given inline at confirm; each is bound to the payment it was first planned for (its earliest routing
 * plan, else the payment that names it), and its number is erased unless that payment is still CREATED
 * or PROCESSING (the walk that uses it may still need it). A card without a customer that no payment
 * ever used is erased too: nothing may charge it.
 */
export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.schema.withSchema(schema).alterTable('payment_methods', (t) => {
      t.text('payment_id');
      t.index(['payment_id']);
    });

    await knex.raw(
      `UPDATE ??.payment_methods pm
          SET payment_id = COALESCE(
                (SELECT rp.payment_id FROM ??.routing_plans rp
                  WHERE rp.metadata->>'payment_method_id' = pm.id AND rp.account_id = pm.account_id
                  ORDER BY rp.created_at, rp.id LIMIT 1),
                (SELECT p.id FROM ??.payments p
                  WHERE p.payment_method_id = pm.id AND p.account_id = pm.account_id
                  ORDER BY p.created_at, p.id LIMIT 1))
        WHERE pm.customer_id IS NULL AND pm.payment_id IS NULL`,
      [schema, schema, schema],
    );

    await knex.raw(
      `UPDATE ??.payment_methods pm
          SET pan_encrypted = '', cvc_encrypted = NULL, updated_at = now()
        WHERE pm.customer_id IS NULL AND pm.pan_encrypted <> ''
          AND NOT EXISTS (SELECT 1 FROM ??.payments p
                           WHERE p.id = pm.payment_id AND p.status IN ('CREATED', 'PROCESSING'))`,
      [schema, schema],
    );

    await knex.raw(
      `ALTER TABLE ??.payment_methods ADD CONSTRAINT payment_methods_owned
         CHECK (customer_id IS NOT NULL OR payment_id IS NOT NULL OR pan_encrypted = '')`,
      [schema],
    );
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw('ALTER TABLE ??.payment_methods DROP CONSTRAINT IF EXISTS payment_methods_owned', [schema]);
    await knex.schema.withSchema(schema).alterTable('payment_methods', (t) => {
      t.dropIndex(['payment_id']);
      t.dropColumn('payment_id');
    });
  }
}
