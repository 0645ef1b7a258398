import { ApplicationFailure } from '@temporalio/activity';
import { appendEvents, idsToPublish } from '../../db/events';
import { eraseSingleUseCards } from '../../db/payment-methods';
import { findCharge, lockPaymentStatus, updateCharge, updatePayment } from '../../db/payments';
import {
  PAYMENT_ACTIVITY_FAILURES, type CancelArgs, type CaptureArgs, type CaptureResult, type PaymentActivities, type RecordedEvents,
} from '../../workflows/payments/contract';
import { withHeartbeat } from '../heartbeat';
import { openProvider } from '../providers/open';
import type { ProviderExchange } from '../providers/types';
import type { PaymentActivityDeps } from './deps';
import { chargeEvent, paymentEvent } from './events';

/** The commands after a walk: capturing an authorization, and canceling (voiding one first). */
export function commandActivities(deps: PaymentActivityDeps): Pick<PaymentActivities, 'captureCharge' | 'cancelPayment'> {
  const { db } = deps;
  return {
    /** Manual capture of an AUTHORIZED payment (partial allowed); the rest of the authorization is released. */
    async captureCharge(args: CaptureArgs): Promise<CaptureResult> {
      const env = args.environment;
      const charge = await findCharge(db, env, args.chargeId);
      if (!charge) throw new Error(`charge ${args.chargeId} is missing`);
      if (charge.status === 'CAPTURED') {
        return { paymentStatus: 'SUCCEEDED', capturedAmount: Number(charge.captured_amount), eventIds: [] };
      }
      const { credentials, adapter } = await openProvider(deps, env, charge.payment_provider_config_id ?? '');
      const result = await withHeartbeat(adapter.capture({
        credentials, idempotencyKey: `${args.chargeId}:capture`, providerReference: charge.provider_reference ?? '', amount: args.amount,
      }));
      if (result.outcome.kind === 'transport_error' || result.outcome.kind === 'unknown') {
        throw ApplicationFailure.retryable(`capture not confirmed: ${result.outcome.error}`, PAYMENT_ACTIVITY_FAILURES.capturePending);
      }
      if (result.outcome.kind === 'pending') {
        throw ApplicationFailure.retryable('capture pending at the provider', PAYMENT_ACTIVITY_FAILURES.capturePending);
      }
      if (result.outcome.kind !== 'approved') {
        await updateCharge(db, env, args.chargeId, { exchanges: [result.exchange] });
        throw ApplicationFailure.nonRetryable(`the provider refused the capture: ${result.outcome.declineCode}`, PAYMENT_ACTIVITY_FAILURES.captureDeclined);
      }
      const capturedAmount = result.outcome.capturedAmount;
      return db.transaction(async (trx) => {
        const updated = await updateCharge(trx, env, args.chargeId, { status: 'CAPTURED', captured_amount: capturedAmount, exchanges: [result.exchange] });
        const payment = await updatePayment(trx, env, args.paymentId, { status: 'SUCCEEDED', amount_capturable: 0, amount_received: capturedAmount });
        await eraseSingleUseCards(trx, env, args.paymentId);
        const eventIds = await idsToPublish(trx, env, args.accountId, await appendEvents(trx, env, [
          chargeEvent(args, 'charge.succeeded', updated, args.context),
          paymentEvent(args, 'payment_intent.succeeded', payment, args.context, { chargeId: args.chargeId }),
        ]));
        return { paymentStatus: 'SUCCEEDED' as const, capturedAmount, eventIds };
      });
    },

    /** Cancels a payment; an AUTHORIZED one has its authorization voided at the provider first. */
    async cancelPayment(args: CancelArgs): Promise<RecordedEvents> {
      const env = args.environment;
      let voidExchange: ProviderExchange | undefined;
      if (args.chargeId) {
        const charge = await findCharge(db, env, args.chargeId);
        if (!charge) throw new Error(`charge ${args.chargeId} is missing`);
        if (charge.status === 'AUTHORIZED') {
          const { credentials, adapter } = await openProvider(deps, env, charge.payment_provider_config_id ?? '');
          const result = await withHeartbeat(adapter.void({ credentials, idempotencyKey: `${args.chargeId}:void`, providerReference: charge.provider_reference ?? '' }));
          // A soft decline (rate limit, processing error) released nothing either: try again, as for no answer.
          if (result.outcome.kind === 'transport_error' || result.outcome.kind === 'unknown' || result.outcome.kind === 'soft_decline') {
            const why = 'error' in result.outcome ? result.outcome.error : result.outcome.declineCode;
            throw ApplicationFailure.retryable(`void not confirmed: ${why}`, PAYMENT_ACTIVITY_FAILURES.voidPending);
          }
          voidExchange = result.exchange;
        }
      }
      return db.transaction(async (trx) => {
        const status = await lockPaymentStatus(trx, env, args.paymentId);
        // Canceled (or expired): no card bound to the payment will ever be charged.
        await eraseSingleUseCards(trx, env, args.paymentId);
        if (status === 'CANCELED') return { eventIds: [] };
        if (args.chargeId && voidExchange) await updateCharge(trx, env, args.chargeId, { status: 'VOIDED', exchanges: [voidExchange] });
        const payment = await updatePayment(trx, env, args.paymentId, { status: 'CANCELED', amount_capturable: 0, cancellation_reason: args.reason });
        const eventIds = await appendEvents(trx, env, [paymentEvent(args, 'payment_intent.canceled', payment, args.context)]);
        return { eventIds: await idsToPublish(trx, env, args.accountId, eventIds) };
      });
    },
  };
}
