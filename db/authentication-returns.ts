import type { Knex } from 'knex';
import { envTable, type Environment } from './environments';

/**
 * The customer's return from 3-D Secure, as the charge keeps it (docs/authentication.md): the
 * processor's return parameters, sealed, written once. Apart from db/payments.ts (the charges' store)
 * only because this one conditional write is all the return route needs.
 */

/** A charge the processor asked to authenticate: waiting now, or an exchange of it answered so. */
const AUTHENTICATED_CHARGE = `(status = 'REQUIRES_ACTION' or exchanges @> '[{"outcome":"requires_action"}]'::jsonb)`;

/**
 * Writes the sealed return parameters of the payment's latest charge, unless a return wrote them
 * already: one statement, so of two returns at once only one wins. True for the return that wrote them
 * (the one the customer's browser is sent on from); false for a repeat, a charge a later one replaced,
 * or a charge that never asked for authentication (its link redirects nowhere: no open redirect).
 * Parameters the processor did not accept are cleared by the activity that tried them
 * (completeAuthentication), so a forged return cannot keep the customer's real one out.
 */
export async function writeReturnParamsOnce(db: Knex, env: Environment, chargeId: string, sealed: string): Promise<boolean> {
  const charges = envTable(env, 'charges');
  const later = db(`${charges} as later`)
    .whereRaw('later.payment_id = ??', [`${charges}.payment_id`])
    .whereRaw('later.created_at > ??', [`${charges}.created_at`]);
  const rows = await db(charges)
    .where({ id: chargeId })
    .whereNull('return_params_sealed')
    .whereRaw(AUTHENTICATED_CHARGE)
    .whereNotExists(later)
    .update({ return_params_sealed: sealed, updated_at: new Date() })
    .returning('id');
  return rows.length === 1;
}
