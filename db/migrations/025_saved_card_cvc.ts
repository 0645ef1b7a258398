import type { Knex } from 'knex';
import { ENV_SCHEMAS } from '../environments';

/**
 * A saved card keeps no CVC beyond the authorization it was collected for (docs/security.md, PCI DSS
 * 3.2). Cards saved while a saved card kept its sealed CVC until its first use are wiped here, but for a
 * card an unfinished confirm may still authorize with (its payment PROCESSING or REQUIRES_ACTION), which
 * the confirm's outcome wipes as it does every card's.
 */
export async function up(knex: Knex): Promise<void> {
  for (const schema of Object.values(ENV_SCHEMAS)) {
    await knex.raw(
      `UPDATE ??.payment_methods pm SET cvc_encrypted = NULL
        WHERE pm.cvc_encrypted IS NOT NULL AND pm.payment_id IS NULL
          AND NOT EXISTS (SELECT 1 FROM ??.payments p WHERE p.payment_method_id = pm.id AND p.status IN ('PROCESSING', 'REQUIRES_ACTION'))`,
      [schema, schema],
    );
  }
}

/** A wiped CVC cannot be brought back. */
export async function down(): Promise<void> {}
