import { ApplicationFailure } from '@temporalio/workflow';
import { withArticle } from '../../lib/errors';
import type { ProviderEventSignal } from '../../contracts/temporal';
import { allows, PAYMENT_FAILURES, type CaptureInput, type CommandResult, type PendingOperation, type SealedCommand } from '../../contracts/payments';
import { invalidState, type PaymentCore } from './core';
import { providers, records } from './proxies';

/** A capture of the approved charge (under the lock); the processor may only receive it (pending) or refuse it. */
export async function capture(core: PaymentCore, { amount, seal, context }: CaptureInput): Promise<CommandResult> {
  refuseCapture(core, amount);
  const chargeId = core.approvedChargeId!;
  const captureAmount = amount ?? core.facts.authorizedAmount;
  const command: SealedCommand = { ...(amount !== undefined ? { amount } : {}), ...(seal ? { seal } : {}) };
  const result = await providers.captureCharge({ ...core.ref, chargeId, amount: captureAmount, sequence: (core.sent.capture += 1), command, context });
  if (result.pending) {
    core.phase = { kind: 'authorized', pending: { operation: 'capture', chargeId, amount: captureAmount } };
    core.describe();
    return { status: core.status, outcome: 'capture_pending' };
  }
  if (result.declined) {
    core.facts.lastError = { code: 'capture_failed', message: result.declined.message };
    throw ApplicationFailure.create({
      type: PAYMENT_FAILURES.captureDeclined, nonRetryable: true, details: [{ decline_code: result.declined.declineCode }],
      message: `The processor refused the capture (${result.declined.declineCode}); the payment stays AUTHORIZED.`,
    });
  }
  core.facts.capturedAmount = result.capturedAmount;
  core.setStatus(result.paymentStatus);
  return { status: core.status, outcome: 'captured' };
}

/** What a capture is refused for, whatever the lock: an operator's attention, a pending operation, too much asked. */
export function refuseCapture(core: PaymentCore, amount: number | undefined): void {
  if (core.facts.needsAttention || pendingOperation(core)) refuseCommand(core, 'capture', 'captured');
  const capturable = core.facts.authorizedAmount;
  if (amount !== undefined && amount > capturable) {
    throw ApplicationFailure.create({
      type: PAYMENT_FAILURES.amountExceedsCapturable, nonRetryable: true, details: [{ capturable }],
      message: `At most ${capturable} can be captured.`,
    });
  }
}

export function pendingOperation(core: PaymentCore): PendingOperation | undefined {
  return core.phase.kind === 'authorized' ? core.phase.pending : undefined;
}

/**
 * A command's validator: no operator's attention needed, no capture or void awaiting the processor's
 * notification, the lock free, and the table allowing the transition from the current status.
 */
export function refuseCommand(core: PaymentCore, transition: 'confirm' | 'capture' | 'cancel', verb: string): void {
  const { status } = core;
  if (core.facts.needsAttention) throw invalidState(status, `The payment needs an operator's attention (${core.facts.needsAttention.reason}); it takes no more commands.`);
  // A walk waiting for the customer's authentication holds the lock, but a cancel may end the wait.
  if (transition === 'cancel' && core.phase.kind === 'awaitingAuthentication' && status === 'REQUIRES_ACTION') return;
  const pending = pendingOperation(core);
  if (pending) throw invalidState(status, `The payment cannot be ${verb} while its ${pending.operation} awaits the processor's notification.`);
  if (core.lock.isLocked() || !allows(transition, status)) throw invalidState(status, `${withArticle(status)} payment cannot be ${verb}.`);
}

/** A cancel: by the update (`command`, its seal checked by the activity), or by an expiry timer (none). */
export async function cancel(core: PaymentCore, reason: string, context = core.input.context, command?: SealedCommand): Promise<void> {
  const chargeId = core.status === 'AUTHORIZED' ? core.approvedChargeId : undefined;
  const { pending } = await providers.cancelPayment({
    ...core.ref, chargeId, reason, ...(chargeId ? { sequence: (core.sent.void += 1) } : {}), ...(command ? { command } : {}), context,
  });
  if (pending && chargeId) {
    // The processor received the void; its notification completes the cancel (settle).
    core.phase = { kind: 'authorized', pending: { operation: 'void', chargeId, reason } };
    core.describe();
    return;
  }
  core.setStatus('CANCELED');
}

/** Records the processor's notification about the pending capture or void, and where it leaves the payment. */
export async function settle(core: PaymentCore, pending: PendingOperation, notification: ProviderEventSignal): Promise<void> {
  const result = await records.settleOperation({ ...core.ref, pending, notification, context: core.input.context });
  // The signal named no stored event about the operation (forged): it still awaits its notification.
  if (result.pending) return;
  core.phase = { kind: 'authorized' };
  core.facts.capturedAmount = result.capturedAmount;
  // What the stored event said, not the signal: an approved capture or void ends the payment.
  if (result.paymentStatus !== 'SUCCEEDED' && result.paymentStatus !== 'CANCELED') core.facts.lastError = { code: `${pending.operation}_failed` };
  core.setStatus(result.paymentStatus);
}
