import { leadsTo, type PaymentStatus, type PaymentTransition, type PendingOperation, type SealedCommand } from '../../contracts/payments';

/**
 * Where a payment's workflow is, beside the status the merchant reads: what it waits for, if anything.
 * One value instead of flags, so two waits can never both be on.
 * - `creating`: the payment row is not written yet (no command is taken).
 * - `idle`: nothing runs; a confirm, a cancel or the payment's expiry comes next (CREATED, FAILED).
 * - `walking`: a confirm's walk makes its attempts.
 * - `reconciling`: the walk waits for the processor to tell the outcome of an attempt it got no answer to.
 * - `awaitingAuthentication`: the walk waits for the customer's 3-D Secure; `returned` once the customer
 *   is back, `cancel` once a cancel asked to end the wait (with the command its update carried).
 * - `authorized`: the money is held; `pending` while a capture or void the processor received awaits its notification.
 * - `settled`: SUCCEEDED or CANCELED (or refunded): no more commands; the workflow may still listen for a while.
 */
export type Phase =
  | { kind: 'creating' }
  | { kind: 'idle' }
  | { kind: 'walking' }
  | { kind: 'reconciling'; chargeId: string }
  | { kind: 'awaitingAuthentication'; chargeId: string; since: number; returned?: boolean; cancel?: { command: SealedCommand } }
  | { kind: 'authorized'; pending?: PendingOperation }
  | { kind: 'settled' };

/** The phase a payment rests in once no command runs, by its status. */
export function restingPhase(status: PaymentStatus): Phase {
  switch (status) {
    case 'AUTHORIZED': return { kind: 'authorized' };
    case 'SUCCEEDED': case 'CANCELED': case 'PARTIALLY_REFUNDED': case 'REFUNDED': return { kind: 'settled' };
    default: return { kind: 'idle' };
  }
}

/**
 * A status change the transition table does not allow. Thrown as a plain Error, on purpose: it fails
 * the workflow task (retried until fixed code is deployed) instead of the workflow or the update, so
 * no further command acts on a payment whose state the code got wrong, and its history stays replayable
 * once the fix is in. A warning would let the payment go on in a state nothing else expects.
 */
export class IllegalTransition extends Error {
  override name = 'IllegalTransition';
}

/**
 * Throws IllegalTransition unless `by` (the transition holding the lock; undefined for anything else) may
 * leave the payment in `to` by the table.
 */
export function assertLeadsTo(by: PaymentTransition | undefined, from: PaymentStatus, to: PaymentStatus): void {
  if (by === undefined || !leadsTo(by, to)) throw new IllegalTransition(`${by ?? 'no transition'} cannot take a payment from ${from} to ${to}.`);
}
