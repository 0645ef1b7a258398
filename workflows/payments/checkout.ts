import { getExternalWorkflowHandle, log } from '@temporalio/workflow';
import { checkoutSignals, checkoutWorkflowId, paysSession } from '../../contracts/checkout';
import type { PaymentCore } from './core';

/**
 * Tells the payment's checkout session, when it has one, that the payment is paid (SUCCEEDED, or
 * AUTHORIZED when it is captured later), so that the session completes now rather than at its expiry.
 * Never fails: a session that has ended refuses the signal, which changes nothing. The workflow awaits
 * it before it ends, because a signal still pending when its sender closes is dropped.
 */
export function tellCheckoutSession(core: PaymentCore): Promise<void> | undefined {
  const sessionId = core.input.checkoutSessionId;
  if (!sessionId || !paysSession(core.status, core.input.autoCapture)) return undefined;
  return getExternalWorkflowHandle(checkoutWorkflowId(sessionId))
    .signal(checkoutSignals.paymentSettled, { paymentId: core.input.paymentId, status: core.status })
    .catch((err: unknown) => log.warn('the payment\'s checkout session was not told it is paid', { paymentId: core.input.paymentId, error: String(err) }));
}
