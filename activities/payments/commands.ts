import { ApplicationFailure } from '@temporalio/activity';
import type { Knex } from 'knex';
import { appendEvents } from '../../db/events';
import { eraseSingleUseCards } from '../../db/payment-methods';
import { ChargeRow, findCharge, findPayment, lockPaymentStatus, updateCharge, updatePayment } from '../../db/payments';
import { claimCommand } from '../../db/payment-commands';
import type { Environment } from '../../db/environments';
import {
  allows, operationKey, PAYMENT_ACTIVITY_FAILURES, type CancelArgs, type CancelResult, type CaptureArgs, type CaptureResult, type PaymentActivities,
  type PaymentRef, type SettleArgs, type SettleResult,
} from '../../contracts/payments';
import type { RequestContext } from '../../contracts/temporal';
import { withHeartbeat } from '../heartbeat';
import { notificationExchange } from '../providers/exchange';
import { openProvider } from '../providers/open';
import type { ProviderExchange } from '../providers/types';
import type { PaymentActivityDeps } from './deps';
import { notificationTarget, verifiedNotification } from './notifications';
import { chargeEvent, paymentEvent } from './events';
import { MissingRowError } from '../../lib/data-errors';
import { commandSeals, refuseCommand } from './seals';

interface Recording extends PaymentRef { chargeId: string; context: RequestContext }

/** A capture the processor confirmed (at once, or by its notification): charge CAPTURED, payment SUCCEEDED. */
async function recordCapture(db: Knex, args: Recording, capturedAmount: number, exchange: ProviderExchange): Promise<SettleResult> {
  const env = args.environment;
  return db.transaction(async (trx) => {
    const updated = await updateCharge(trx, env, args.chargeId, { status: 'CAPTURED', captured_amount: capturedAmount, exchanges: [exchange] });
    const payment = await updatePayment(trx, env, args.paymentId, {
      status: 'SUCCEEDED', amount_capturable: 0, amount_received: capturedAmount, pending_operation: null, last_error: null,
    });
    await eraseSingleUseCards(trx, env, args.paymentId);
    await appendEvents(trx, env, [
      chargeEvent(args, 'charge.succeeded', updated, args.context),
      paymentEvent(args, 'payment_intent.succeeded', payment, args.context, { chargeId: args.chargeId }),
    ]);
    return { paymentStatus: 'SUCCEEDED' as const, capturedAmount };
  });
}

/** A cancel, after the processor voided the authorization (or there was none): payment CANCELED. */
async function recordCancel(db: Knex, args: PaymentRef & { chargeId?: string; reason: string; context: RequestContext }, voidExchange?: ProviderExchange) {
  const env = args.environment;
  return db.transaction(async (trx) => {
    const status = await lockPaymentStatus(trx, env, args.paymentId);
    // Canceled (or expired): no card bound to the payment will ever be charged.
    await eraseSingleUseCards(trx, env, args.paymentId);
    if (status === 'CANCELED') return;
    // The row decides, not the workflow's belief: one whose confirm the server aborted after the charge,
    // and nobody sent again, may still reach its expiry believing it CREATED. A payment that took money
    // (SUCCEEDED, refunded) or has an attempt in flight (PROCESSING) is never canceled, and an AUTHORIZED
    // one only once its authorization was voided (a charge named): otherwise the hold would outlive it.
    if (!status || !allows('cancel', status) || (status === 'AUTHORIZED' && !args.chargeId)) return;
    if (args.chargeId && voidExchange) await updateCharge(trx, env, args.chargeId, { status: 'VOIDED', exchanges: [voidExchange] });
    const payment = await updatePayment(trx, env, args.paymentId, {
      status: 'CANCELED', amount_capturable: 0, cancellation_reason: args.reason, pending_operation: null, next_action: null,
    });
    await appendEvents(trx, env, [paymentEvent(args, 'payment_intent.canceled', payment, args.context)]);
  });
}

/**
 * A capture or void the processor refused, at once or by its notification: the payment stays AUTHORIZED
 * (no longer awaiting it), `last_error` says why, and `charge.capture_failed` / `charge.void_failed` is emitted.
 */
async function recordRefusal(db: Knex, args: Recording, operation: 'capture' | 'void', refusal: { declineCode: string; message?: string }, exchange: ProviderExchange): Promise<SettleResult> {
  const env = args.environment;
  const code = `${operation}_failed`;
  return db.transaction(async (trx) => {
    const updated = await updateCharge(trx, env, args.chargeId, { exchanges: [exchange] });
    const payment = await updatePayment(trx, env, args.paymentId, {
      pending_operation: null,
      last_error: { code, decline_code: refusal.declineCode, charge_id: args.chargeId, message: refusal.message ?? null },
    });
    await appendEvents(trx, env, [chargeEvent(args, `charge.${code}`, updated, args.context)]);
    return { paymentStatus: payment.status, capturedAmount: Number(payment.amount_received ?? 0) };
  });
}

/** The processor received a capture or void and will report by notification: the payment shows it meanwhile. */
async function recordPending(db: Knex, env: Environment, args: Recording, charge: ChargeRow, type: 'capture' | 'void', exchange: ProviderExchange, amount?: number) {
  await db.transaction(async (trx) => {
    await updateCharge(trx, env, charge.id, { exchanges: [exchange] });
    await updatePayment(trx, env, args.paymentId, {
      pending_operation: { type, charge_id: charge.id, amount: amount ?? null, requested_at: new Date().toISOString() },
    });
  });
}

/** The commands after a walk: capturing an authorization, canceling (voiding one first), and their notifications. */
export function commandActivities(deps: PaymentActivityDeps): Pick<PaymentActivities, 'captureCharge' | 'cancelPayment' | 'settleOperation'> {
  const { db } = deps;
  const seals = commandSeals(deps.vault);

  /**
   * A capture moves only what its seal says: the payment's own charge, and the sealed amount, or with
   * none sealed the whole authorization as the workflow computes it (the payment's amount).
   */
  async function checkCapture(args: CaptureArgs, charge: ChargeRow): Promise<void> {
    const refuse = (why: string) => refuseCommand(args.environment, args.paymentId, 'capture', why);
    if (charge.payment_id !== args.paymentId) refuse('the charge is not this payment\'s');
    const sealed = args.command?.amount ?? Number((await findPayment(db, args.environment, args.paymentId))?.amount);
    if (args.amount !== sealed) refuse('the amount is not the one sealed');
  }

  /**
   * Claims the capture's one-time command id for this capture (its processor key): a retry of it goes on,
   * its seal copied from history into a new capture (after a refused one) is refused.
   */
  async function claimCapture(args: CaptureArgs, commandId: string): Promise<void> {
    const usedBy = operationKey(args.chargeId, 'capture', args.sequence);
    if (!(await claimCommand(db, args.environment, { paymentId: args.paymentId, commandId, kind: 'capture', usedBy }))) {
      refuseCommand(args.environment, args.paymentId, 'capture', 'its command was used already');
    }
  }

  return {
    /**
     * Manual capture of an AUTHORIZED payment (partial allowed); the rest of the authorization is
     * released. A processor that only receives it (Adyen) answers `pending`: the payment stays
     * AUTHORIZED, shows the pending capture, and its notification completes it (settleOperation).
     */
    async captureCharge(args: CaptureArgs): Promise<CaptureResult> {
      const commandId = seals.capture(args);
      const env = args.environment;
      const charge = await findCharge(db, env, args.chargeId);
      if (!charge) throw new MissingRowError('charge', args.chargeId);
      await checkCapture(args, charge);
      if (charge.status === 'CAPTURED') {
        return { paymentStatus: 'SUCCEEDED', capturedAmount: Number(charge.captured_amount) };
      }
      await claimCapture(args, commandId);
      const { credentials, adapter } = await openProvider(deps, env, charge.payment_provider_config_id ?? '');
      const result = await withHeartbeat(adapter.capture({
        credentials, idempotencyKey: operationKey(args.chargeId, 'capture', args.sequence), providerReference: charge.provider_reference ?? '', amount: args.amount, currency: charge.currency,
      }));
      const { outcome } = result;
      if (outcome.kind === 'transport_error' || outcome.kind === 'unknown') {
        throw ApplicationFailure.retryable(`capture not confirmed: ${outcome.error}`, PAYMENT_ACTIVITY_FAILURES.capturePending);
      }
      if (outcome.kind === 'pending') {
        await recordPending(db, env, args, charge, 'capture', result.exchange, args.amount);
        return { paymentStatus: 'AUTHORIZED', capturedAmount: 0, pending: true };
      }
      if (outcome.kind !== 'approved') {
        // Refused at once: recorded as a refusal the processor notifies is (settleOperation), for the
        // workflow to answer with; the payment stays AUTHORIZED and may be captured again.
        const declined = { declineCode: outcome.kind === 'requires_action' ? 'authentication_required' : outcome.declineCode, ...('message' in outcome && outcome.message ? { message: outcome.message } : {}) };
        return { ...(await recordRefusal(db, args, 'capture', declined, result.exchange)), declined };
      }
      return recordCapture(db, args, outcome.capturedAmount, result.exchange);
    },

    /**
     * Cancels a payment; an AUTHORIZED one has its authorization voided at the provider first. A void
     * the processor only receives answers `pending`: the payment stays AUTHORIZED until its notification.
     */
    async cancelPayment(args: CancelArgs): Promise<CancelResult> {
      seals.cancel(args);
      const env = args.environment;
      let voidExchange: ProviderExchange | undefined;
      if (args.chargeId) {
        const charge = await findCharge(db, env, args.chargeId);
        if (!charge) throw new MissingRowError('charge', args.chargeId);
        if (charge.status === 'AUTHORIZED') {
          const { credentials, adapter } = await openProvider(deps, env, charge.payment_provider_config_id ?? '');
          const result = await withHeartbeat(adapter.void({ credentials, idempotencyKey: operationKey(args.chargeId, 'void', args.sequence), providerReference: charge.provider_reference ?? '' }));
          const { outcome } = result;
          // A soft decline (rate limit, processing error) released nothing either: try again, as for no answer.
          if (outcome.kind === 'transport_error' || outcome.kind === 'unknown' || outcome.kind === 'soft_decline') {
            const why = 'error' in outcome ? outcome.error : outcome.declineCode;
            throw ApplicationFailure.retryable(`void not confirmed: ${why}`, PAYMENT_ACTIVITY_FAILURES.voidPending);
          }
          if (outcome.kind === 'pending') {
            await recordPending(db, env, { ...args, chargeId: charge.id }, charge, 'void', result.exchange);
            return { pending: true };
          }
          voidExchange = result.exchange;
        }
      }
      await recordCancel(db, args, voidExchange);
      return {};
    },

    /**
     * The processor's notification about a pending capture or void. Approved: captured (SUCCEEDED) or
     * voided (CANCELED). Refused: the payment stays AUTHORIZED with the reason in `last_error`, and
     * `charge.capture_failed` / `charge.void_failed` is emitted. A repeat finds the work done. A signal
     * with no stored event about this operation behind it changes nothing: `pending`, still waiting.
     */
    async settleOperation(args: SettleArgs): Promise<SettleResult> {
      const env = args.environment;
      const { pending, notification } = args;
      const recording = { ...args, chargeId: pending.chargeId };
      const charge = await findCharge(db, env, pending.chargeId);
      if (!charge) throw new MissingRowError('charge', pending.chargeId);
      if (charge.status === 'CAPTURED') return { paymentStatus: 'SUCCEEDED', capturedAmount: Number(charge.captured_amount) };
      if (charge.status === 'VOIDED') return { paymentStatus: 'CANCELED', capturedAmount: 0 };
      // Only a stored, verified event about this operation settles it; a forged signal leaves it pending.
      const stored = await verifiedNotification(db, env, notification, notificationTarget(pending.operation, charge));
      if (!stored) return { paymentStatus: 'AUTHORIZED', capturedAmount: 0, pending: true };
      const exchange = notificationExchange(stored, `${pending.chargeId}:${pending.operation}`);
      const { outcome } = stored;
      if (outcome.kind === 'approved') {
        if (pending.operation === 'capture') return recordCapture(db, recording, outcome.capturedAmount || (pending.amount ?? Number(charge.authorized_amount)), exchange);
        await recordCancel(db, { ...args, chargeId: pending.chargeId, reason: pending.reason ?? 'requested_by_customer' }, exchange);
        return { paymentStatus: 'CANCELED', capturedAmount: 0 };
      }
      return recordRefusal(db, recording, pending.operation, outcome, exchange);
    },
  };
}
