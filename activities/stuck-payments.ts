import type { Db } from '../db/knex';
import { envTable, type Environment } from '../db/environments';
import type { Config } from '../lib/config';
import { paymentWorkflowId } from '../workflows/shared';
import type { StuckPaymentCheck } from '../workflows/watchdog-shared';

const ENVIRONMENTS: Environment[] = ['production', 'sandbox'];
/** Bounds one check; the rest are found by the next one. */
const BATCH = 500;

/**
 * The notification for a stuck payment has an id derived from the payment's, so however many checks
 * (or retried activities) see the payment, it gets exactly one.
 */
export const stuckNotificationId = (paymentId: string) => `ntf_${paymentId.replace(/^pay_/, '')}`;

export function stuckPaymentActivities({ db, config }: { db: Db; config: Config }) {
  return {
    /** One `payment.stuck` notification per payment PROCESSING (untouched) for longer than the threshold. */
    async notifyStuckPayments(args: { thresholdMs?: number } = {}): Promise<StuckPaymentCheck> {
      const thresholdMs = args.thresholdMs ?? config.stuckPaymentThresholdMs;
      const cutoff = new Date(Date.now() - thresholdMs);
      const notified: string[] = [];
      let stuck = 0;
      for (const env of ENVIRONMENTS) {
        const rows = await db(envTable(env, 'payments')).where({ status: 'PROCESSING' }).where('updated_at', '<', cutoff)
          .orderBy('updated_at').limit(BATCH).select('id', 'account_id', 'amount', 'currency', 'updated_at');
        stuck += rows.length;
        if (!rows.length) continue;
        const inserted = await db('core.notifications').insert(rows.map((p: any) => ({
          id: stuckNotificationId(p.id),
          account_id: p.account_id,
          type: 'payment.stuck',
          details: JSON.stringify({
            payment_id: p.id, environment: env, amount: Number(p.amount), currency: p.currency,
            processing_since: new Date(p.updated_at).toISOString(), threshold_seconds: Math.round(thresholdMs / 1000),
            workflow_id: paymentWorkflowId(p.id),
          }),
        }))).onConflict('id').ignore().returning('id');
        notified.push(...inserted.map((r: { id: string }) => `pay_${r.id.replace(/^ntf_/, '')}`));
      }
      return { notified, stuck };
    },
  };
}
