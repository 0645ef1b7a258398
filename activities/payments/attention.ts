import { insertNotificationsOnce } from '../../db/notifications';
import { findPayment, flagNeedsAttention } from '../../db/payments';
import { logger } from '../../lib/logger';
import { paymentWorkflowId, type NeedsAttentionArgs, type PaymentActivities } from '../../contracts/payments';
import type { PaymentActivityDeps } from './deps';

/** One `payment.needs_attention` notification per payment: its id is derived from the payment's. */
export const needsAttentionNotificationId = (paymentId: string) => `ntf_${paymentId.replace(/^pay_/, '')}attention`;

/** The activity a payment workflow calls when it stops acting on a payment (docs/operators.md#needs-attention). */
export function attentionActivities({ db }: PaymentActivityDeps): Pick<PaymentActivities, 'flagPaymentNeedsAttention'> {
  return {
    /**
     * Flags the row (its status and amounts untouched) and tells the account's people, both at most once,
     * so a retry writes nothing twice. A row that is gone (the very failure, sometimes) is told about all
     * the same, to the account the workflow names.
     */
    async flagPaymentNeedsAttention(args: NeedsAttentionArgs): Promise<void> {
      const env = args.environment;
      const row = await findPayment(db, env, args.paymentId);
      if (row) await flagNeedsAttention(db, env, args.paymentId, args.reason);
      const { facts } = args.failure;
      await insertNotificationsOnce(db, [{
        id: needsAttentionNotificationId(args.paymentId),
        accountId: row?.account_id ?? args.accountId,
        type: 'payment.needs_attention',
        details: {
          payment_id: args.paymentId, ...(args.refundId ? { refund_id: args.refundId } : {}), environment: env,
          status: row?.status ?? args.status ?? null, reason: args.reason, step: args.step,
          message: args.failure.message, ...(facts?.sqlstate ? { sqlstate: facts.sqlstate } : {}),
          ...(facts?.table ? { table: facts.table } : {}), ...(facts?.constraint ? { constraint: facts.constraint } : {}),
          row_missing: !row, workflow_id: paymentWorkflowId(args.paymentId),
        },
      }]);
      logger.warn({ payment_id: args.paymentId, environment: env, step: args.step, reason: args.reason }, 'payment flagged: needs attention');
    },
  };
}
