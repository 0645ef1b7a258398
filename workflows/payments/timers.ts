import { condition, log, sleep, workflowInfo } from '@temporalio/workflow';
import { permanentDataFailure } from '../../lib/data-errors';
import type { ProviderEventSignal } from '../../contracts/temporal';
import { allows, CAPTURE_FAILED_AFTER_REFUND, LATE_AUTHORIZATION_NOT_REVERSED, type CaptureFailureResult } from '../../contracts/payments';
import type { PaymentCore } from './core';
import { IllegalTransition } from './phase';
import { providers, records } from './proxies';

/**
 * The two expiries, each one durable timer, armed once and never canceled: a finished workflow simply
 * drops it. The payment's expiry is armed only once the payment waits in a status it can expire from,
 * counted from the workflow's start: a create and confirm that succeeds at once never starts a timer
 * (each one a task in the server). The authorization's is armed once the payment is AUTHORIZED.
 */
export class Expiries {
  private readonly armed = { payment: false, authorization: false };
  private readonly over = { payment: false, authorization: false };

  constructor(private readonly core: PaymentCore) {}

  /** The expiry the payment's status is exposed to: `arm` (not armed yet), `due` (it fired), or nothing to do. */
  due(): { expiry: 'authExpiry' | 'paymentExpiry'; action: 'arm' | 'run' } | undefined {
    const status = this.core.status;
    const which = allows('authExpiry', status) ? 'authorization' : allows('paymentExpiry', status) ? 'payment' : undefined;
    if (!which) return undefined;
    const expiry = which === 'authorization' ? 'authExpiry' : 'paymentExpiry';
    if (!this.armed[which]) return { expiry, action: 'arm' };
    return this.over[which] ? { expiry, action: 'run' } : undefined;
  }

  arm(expiry: 'authExpiry' | 'paymentExpiry'): void {
    const { input, authorizedAt } = this.core;
    const which = expiry === 'authExpiry' ? 'authorization' : 'payment';
    const deadline = which === 'authorization' ? authorizedAt + input.authExpiryMs : workflowInfo().startTime.getTime() + input.paymentExpiryMs;
    this.armed[which] = true;
    void sleep(Math.max(deadline - Date.now(), 1)).then(() => { this.over[which] = true; });
  }
}

/**
 * Listens, one durable timer, until the capture's window ends for the processor reporting the capture made
 * with the authorization failed. Approvals change nothing and are not even asked about; a failure the stored
 * event backs takes the payment back to AUTHORIZED (true: it goes on as any AUTHORIZED payment) or, the
 * charge refunded meanwhile, flags it for an operator. A forged one changes nothing: the watch goes on.
 */
export async function watchForCaptureFailure(core: PaymentCore, watch: { chargeId: string; until: number }): Promise<boolean> {
  core.captureWatch = undefined;
  core.facts.captureFailureWatch = watch;
  core.describe();
  let over = false;
  void sleep(Math.max(watch.until - Date.now(), 1)).then(() => { over = true; });
  const { notifications } = core;
  try {
    for (;;) {
      await condition(() => over || notifications.has('capture', watch.chargeId) || lateNotice(core));
      const notification = notifications.take('capture', watch.chargeId);
      if (!notification && !over) {
        // A given-up charge's notification: the loop applies it, then the watch goes on.
        core.captureWatch = watch;
        return true;
      }
      if (!notification) return false;
      if (notification.outcome?.kind === 'approved') continue;
      const outcome = await core.run('captureFailed', () => captureFailed(core, watch.chargeId, notification));
      if (outcome !== 'ignored') return outcome === 'reverted';
    }
  } catch (err) {
    await core.unlessNeedsAttention('captureFailed', err);
    return false;
  } finally {
    core.facts.captureFailureWatch = undefined;
    core.describe();
  }
}

/** Applies one capture-failure notification (its stored event decides, settleCaptureFailure); answers what it did. */
async function captureFailed(core: PaymentCore, chargeId: string, notification: ProviderEventSignal): Promise<CaptureFailureResult['outcome']> {
  const result = await records.settleCaptureFailure({ ...core.ref, chargeId, notification, context: core.input.context });
  if (result.outcome === 'needs_attention') {
    const message = `The processor reported the capture failed (provider event ${notification.eventId}) with the money state no longer as captured (${result.message}).`;
    await core.needsAttention('captureFailed', { message }, CAPTURE_FAILED_AFTER_REFUND);
  }
  if (result.outcome !== 'reverted') return result.outcome;
  // Whatever arrived about that capture meanwhile is stale; and its key is spent: a capture now goes under the next.
  core.notifications.captureFailedCharge = chargeId;
  core.notifications.dropCaptures(chargeId);
  core.sent.capture = Math.max(core.sent.capture, 1);
  core.facts.capturedAmount = 0;
  core.facts.lastError = { code: 'capture_failed' };
  core.setStatus('AUTHORIZED');
  return result.outcome;
}

/** A notification about a given-up charge is waiting, and the payment still takes them. */
export function lateNotice(core: PaymentCore): boolean {
  return !core.facts.needsAttention && core.notifications.hasLateNotice();
}

/**
 * Applies one notification about a given-up charge, under the lock (reverseLateAuthorization decides from
 * the charge's stored notifications): reversed, or voided after all, the charge is listened for no more; a
 * reversal the processor refused flags the payment for an operator. A forged one changes nothing.
 */
export async function reverseLate(core: PaymentCore, notification: ProviderEventSignal): Promise<void> {
  const { chargeId } = notification;
  try {
    const result = await core.lock.runExclusive('reverseLateAuthorization', () => providers.reverseLateAuthorization({ ...core.ref, chargeId, notification, context: core.input.context }));
    if (result.outcome === 'reversed' || result.outcome === 'voided' || result.outcome === 'refused') core.notifications.givenUp.delete(chargeId);
    core.describe();
    if (result.outcome === 'refused') {
      const message = `The processor authorized the given-up charge ${chargeId} and refused its reversal (${result.message ?? 'no reason'}).`;
      await core.needsAttention('reverseLateAuthorization', { message }, LATE_AUTHORIZATION_NOT_REVERSED);
    }
  } catch (err) {
    if (err instanceof IllegalTransition) throw err;
    const permanent = permanentDataFailure(err);
    if (permanent) return core.needsAttention('reverseLateAuthorization', permanent);
    // Failed for good (its provider config gone): the stored event stays for an operator; the payment goes on.
    log.error('reversing a late authorization failed', { paymentId: core.input.paymentId, chargeId, error: String(err) });
  }
}

/**
 * A final payment with given-up charges the processor may still report authorized: listens (one durable
 * timer) until the last one's window ends. True when a notification about one came (the loop applies it).
 */
export async function listenForLateAuthorizations(core: PaymentCore): Promise<boolean> {
  const until = Math.max(0, ...core.notifications.givenUp.values());
  if (core.facts.needsAttention || until <= Date.now()) return false;
  let over = false;
  void sleep(until - Date.now()).then(() => { over = true; });
  await condition(() => over || lateNotice(core));
  return lateNotice(core);
}
