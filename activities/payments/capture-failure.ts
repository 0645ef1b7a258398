import type { Knex } from 'knex';
import { appendEvents } from '../../db/events';
import { findCharge, lockCharge, lockPaymentStatus, updateCharge, updatePayment, type ChargeRow } from '../../db/payments';
import { MissingRowError } from '../../lib/data-errors';
import {
  allows, type CaptureFailureArgs, type CaptureFailureResult, type PaymentActivities,
} from '../../contracts/payments';
import type { ProviderEventSignal } from '../../contracts/temporal';
import { notificationExchange } from '../providers/exchange';
import type { PaymentActivityDeps } from './deps';
import { chargeEvent } from './events';
import { notificationTarget, verifiedNotification } from './notifications';

/** The charge has refunds (settled or under way): taking its capture back would leave them without money behind them. */
const hasRefunds = (charge: ChargeRow) => Number(charge.refunded_amount) > 0 || Number(charge.pending_refund_amount) > 0;

/**
 * The revert, in one transaction with the charge and the payment locked: the charge AUTHORIZED with nothing
 * captured, the payment AUTHORIZED (captureFailed in the table) with nothing received, `last_error`
 * capture_failed, and `charge.capture_failed`. The charge's status decides, so it happens once: a repeat
 * (another notification, a retry after the commit) finds it AUTHORIZED and writes nothing.
 */
async function revert(db: Knex, args: CaptureFailureArgs, stored: ProviderEventSignal): Promise<CaptureFailureResult> {
  const env = args.environment;
  return db.transaction(async (trx) => {
    const charge = await lockCharge(trx, env, args.chargeId);
    if (!charge) throw new MissingRowError('charge', args.chargeId);
    const status = await lockPaymentStatus(trx, env, args.paymentId);
    if (!status) throw new MissingRowError('payment', args.paymentId);
    if (charge.status === 'AUTHORIZED') {
      // Reverted by an earlier try whose answer was lost (its events went out with its commit).
      return { outcome: 'reverted', paymentStatus: status };
    }
    if (hasRefunds(charge) || !allows('captureFailed', status) || charge.status !== 'CAPTURED') {
      return { outcome: 'needs_attention', paymentStatus: status, message: `charge ${charge.status}, payment ${status}` };
    }
    const outcome = stored.outcome.kind === 'approved' ? undefined : stored.outcome;
    const updated = await updateCharge(trx, env, charge.id, {
      status: 'AUTHORIZED', captured_amount: 0, exchanges: [notificationExchange(stored, `${charge.id}:capture`)],
    });
    await updatePayment(trx, env, args.paymentId, {
      status: 'AUTHORIZED', amount_capturable: Number(charge.authorized_amount), amount_received: 0,
      last_error: { code: 'capture_failed', decline_code: outcome?.declineCode ?? 'capture_failed', charge_id: charge.id, message: outcome?.message ?? null },
    });
    await appendEvents(trx, env, [chargeEvent(args, 'charge.capture_failed', updated, args.context)]);
    return { outcome: 'reverted', paymentStatus: 'AUTHORIZED' };
  });
}

/** The activity a payment workflow calls for a capture notification while it watches a capture made with the authorization. */
export function captureFailureActivities({ db }: PaymentActivityDeps): Pick<PaymentActivities, 'settleCaptureFailure'> {
  return {
    /**
     * Only a stored, verified notification about this charge's capture that reports a failure changes
     * anything (docs/security.md): a forged signal, or a capture approval, is `ignored`.
     */
    async settleCaptureFailure(args: CaptureFailureArgs): Promise<CaptureFailureResult> {
      const env = args.environment;
      const charge = await findCharge(db, env, args.chargeId);
      if (!charge) throw new MissingRowError('charge', args.chargeId);
      const stored = await verifiedNotification(db, env, args.notification, notificationTarget('capture', charge));
      if (!stored || stored.outcome.kind === 'approved') return { outcome: 'ignored', paymentStatus: 'SUCCEEDED' };
      return revert(db, args, stored);
    },
  };
}

