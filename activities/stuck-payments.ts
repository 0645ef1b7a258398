import { insertNotificationsOnce } from '../db/notifications';
import { processingSince } from '../db/payments';
import type { Environment } from '../contracts/temporal';
import { paymentWorkflowId } from '../contracts/payments';
import { stuckNotificationId, stuckPaymentOf, type StuckPaymentCheck, type WatchdogActivities } from '../contracts/watchdog';
import type { ActivityDeps } from './deps';

const ENVIRONMENTS: Environment[] = ['production', 'sandbox'];
/** Bounds one check; the rest are found by the next one. */
const BATCH = 500;

export function stuckPaymentActivities({ db, config }: ActivityDeps): WatchdogActivities {
  return {
    /** One `payment.stuck` notification per payment PROCESSING (untouched) for longer than the threshold. */
    async notifyStuckPayments(args: { thresholdMs?: number } = {}): Promise<StuckPaymentCheck> {
      const thresholdMs = args.thresholdMs ?? config.stuckPaymentThresholdMs;
      const cutoff = new Date(Date.now() - thresholdMs);
      const notified: string[] = [];
      let stuck = 0;
      for (const env of ENVIRONMENTS) {
        const rows = await processingSince(db, env, cutoff, BATCH);
        stuck += rows.length;
        const written = await insertNotificationsOnce(db, rows.map((p) => ({
          id: stuckNotificationId(p.id),
          accountId: p.account_id,
          type: 'payment.stuck',
          details: {
            payment_id: p.id, environment: env, amount: Number(p.amount), currency: p.currency,
            processing_since: new Date(p.updated_at).toISOString(), threshold_seconds: Math.round(thresholdMs / 1000),
            workflow_id: paymentWorkflowId(p.id),
          },
        })));
        notified.push(...written.map(stuckPaymentOf));
      }
      return { notified, stuck };
    },
  };
}
