// The store of used command ids (docs/security.md §16): the only module that queries payment_commands.
// A sealed confirm or capture carries a one-time id; the activity that acts on it claims the id for one
// use (the routing plan it makes, the capture it sends) before it acts, and refuses an id claimed by
// another use. A retry of the same use finds its own claim.

import type { Knex } from 'knex';
import { envTable, Environment } from './environments';
import { insertIfFirstWrote } from './knex';
import { PAYMENT_WRITTEN } from './payment-rows';

export interface CommandClaim {
  paymentId: string;
  commandId: string;
  kind: 'confirm' | 'capture';
  /** The one use the command is for: a confirm's routing plan id, a capture's processor idempotency key. */
  usedBy: string;
}

const commands = (db: Knex, env: Environment) => db(envTable(env, 'payment_commands'));

/** Claims the command for `usedBy`: true when it is now, or already was, claimed for it; false when for another use. */
export async function claimCommand(db: Knex, env: Environment, claim: CommandClaim): Promise<boolean> {
  const key = { payment_id: claim.paymentId, command_id: claim.commandId };
  await commands(db, env).insert({ ...key, kind: claim.kind, used_by: claim.usedBy }).onConflict(['payment_id', 'command_id']).ignore();
  const row: { used_by: string } | undefined = await commands(db, env).where(key).first('used_by');
  return row?.used_by === claim.usedBy;
}

/**
 * The claim of a command for a payment being created, not yet run: written only with the payment's row
 * (insertIfFirstWrote, db/knex.ts), in the statement that writes it.
 */
export function commandClaimWithPayment(db: Knex, env: Environment, claim: CommandClaim): Knex.QueryBuilder {
  return insertIfFirstWrote(db, envTable(env, 'payment_commands'), [
    { payment_id: claim.paymentId, command_id: claim.commandId, kind: claim.kind, used_by: claim.usedBy },
  ], PAYMENT_WRITTEN);
}
