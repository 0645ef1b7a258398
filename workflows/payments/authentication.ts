import { ApplicationFailure, condition } from '@temporalio/workflow';
import { UNSEALED_COMMAND, type AttemptArgs, type AttemptResult } from '../../contracts/payments';
import type { PaymentCore } from './core';
import { providers } from './proxies';

/** An activity refused the command it was given: no valid seal (PaymentCommand in the contract), nothing written or sent. */
export function isUnsealed(err: unknown): boolean {
  // A scheduled activity's failure comes wrapped in an ActivityFailure, a local one's as thrown.
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof ApplicationFailure && e.type === UNSEALED_COMMAND) return true;
  }
  return false;
}

/** How a wait for the customer ended: the charge's outcome, and whether a cancel asked to end it (the cancel then takes over). */
export interface AuthenticationEnd { result: AttemptResult; canceled: boolean }

/**
 * Waits, durably, for the customer to authenticate: the processor's notification or the customer's
 * return completes the step; AUTHENTICATION_TIMEOUT fails the payment (`authentication_timeout`, a
 * hard stop); a cancel ends the wait. Either way the charge is settled before the walk goes on.
 */
export async function awaitAuthentication(core: PaymentCore, args: AttemptArgs): Promise<AuthenticationEnd> {
  const timeoutMs = core.input.authenticationTimeoutMs;
  const since = Date.now();
  core.phase = { kind: 'awaitingAuthentication', chargeId: args.chargeId, since };
  const waiting = () => (core.phase.kind === 'awaitingAuthentication' ? core.phase : undefined);
  const customerDone = () => waiting()?.cancel !== undefined || waiting()?.returned === true || core.notifications.has('authorize', args.chargeId);
  core.describe();
  try {
    for (;;) {
      const remaining = since + timeoutMs - Date.now();
      const woken = remaining > 0 && await condition(customerDone, remaining);
      const notification = core.notifications.take('authorize', args.chargeId);
      if (notification) {
        // `requires_action` still: the signal named no stored event (forged), so the wait goes on.
        const result = await providers.completeAuthentication({ ...args, notification });
        if (result.outcome !== 'requires_action') return { result, canceled: waiting()?.cancel !== undefined };
        continue;
      }
      if (!woken || waiting()?.cancel) {
        const abandoned = await abandon(core, args);
        if (!abandoned) continue;
        if (abandoned.result.lateAuthorizationWindowMs) core.notifications.givenUp.set(args.chargeId, Date.now() + abandoned.result.lateAuthorizationWindowMs);
        return abandoned;
      }
      core.phase = { ...waiting()!, returned: false };
      const result = await providers.completeAuthentication({ ...args, returned: true });
      if (result.outcome !== 'requires_action') return { result, canceled: waiting()?.cancel !== undefined };
    }
  } finally {
    core.phase = { kind: 'walking' };
    core.describe();
  }
}

/** Gives the wait up (timed out, or canceled); undefined when the cancel had no valid seal: the wait goes on. */
async function abandon(core: PaymentCore, args: AttemptArgs): Promise<AuthenticationEnd | undefined> {
  const cancel = core.phase.kind === 'awaitingAuthentication' ? core.phase.cancel : undefined;
  try {
    const result = await providers.abandonAuthentication({ ...args, reason: cancel ? 'canceled' : 'authentication_timeout', ...(cancel ? { command: cancel.command } : {}) });
    return { result, canceled: cancel !== undefined };
  } catch (err) {
    if (!isUnsealed(err)) throw err;
    if (core.phase.kind === 'awaitingAuthentication') core.phase = { ...core.phase, cancel: undefined };
    return undefined;
  }
}
