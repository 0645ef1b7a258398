import {
  allHandlersFinished, condition, log, proxyActivities, setCurrentDetails, setHandler, upsertSearchAttributes,
} from '@temporalio/workflow';
import { PERMANENT_DATA_ERROR, permanentDataFailure, type PermanentDataFailure } from '../../lib/data-errors';
import { SEARCH_ATTRIBUTES, type ProviderEventSignal } from '../../contracts/temporal';
import type { PaymentActivities } from '../../contracts/payments';
import {
  RefundAcceptance, RefundActivities, refundQueries, RefundRef, RefundResult, refundSignals, RefundState, RefundStatus, refundUpdates,
  RefundWorkflowInput,
} from '../../contracts/refunds';

/**
 * Short Postgres work: quick retries, forever while the database is away (money state must always land).
 * A write Postgres refuses for good fails at once (`permanent_data_error`, the worker's interceptor): see attended.
 */
const records = proxyActivities<RefundActivities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

/**
 * The provider's refund. No schedule-to-close limit: a processor that is down or does not answer is
 * asked again, durably, until it does (the refund stays PENDING meanwhile). Safe because every call
 * carries the refund id as idempotency key. The heartbeat notices a dead worker within seconds.
 */
const providers = proxyActivities<RefundActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '5s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', nonRetryableErrorTypes: ['not_found'] },
});

/** Flags the refund's payment for an operator when a step meets a permanent data error (see `attended`). */
const attention = proxyActivities<Pick<PaymentActivities, 'flagPaymentNeedsAttention'>>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

const FINAL: RefundState['status'][] = ['SUCCEEDED', 'FAILED'];
/** `create` answers with the final status if the refund settles this soon, else with PENDING. */
const ANSWER_WAIT = '5 seconds';

/**
 * One short workflow per refund (`refund/<re_id>`), started with its `create` update. First the
 * amount is reserved on the charge (or the refund is refused and nothing is written); then the
 * provider is asked, as long as it takes, and the verdict settled: SUCCEEDED moves the reservation to
 * refunded, FAILED (a hard decline) releases it. Events fan out to webhooks after each step.
 */
export async function refundWorkflow(input: RefundWorkflowInput): Promise<RefundState> {
  const state: RefundState = { refundId: input.refundId, paymentId: input.paymentId, chargeId: input.chargeId, status: 'RESERVING', amount: input.amount };
  let acceptance: RefundAcceptance | undefined;

  const setStatus = (status: RefundState['status']) => {
    state.status = status;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.RefundStatus, value: status }]);
    describe();
  };
  const describe = () => {
    const { status } = state;
    setCurrentDetails([
      `**${status}** · refund of ${state.amount ?? 'all that remains'} on charge ${input.chargeId} · payment ${input.paymentId}`,
      state.failureReason ? `failure: ${state.failureReason}` : '',
      status === 'PENDING' && state.awaitingNotification ? 'received by the processor, waiting for its notification' : '',
      status === 'PENDING' && !state.awaitingNotification ? 'waiting for the provider (a pending refundCharge activity shows its attempts and last error)' : '',
      status === 'SUCCEEDED' && state.reversibleUntil ? `listening until ${new Date(state.reversibleUntil).toISOString()} for the processor reporting the refund failed after all` : '',
      state.needsAttention ? `NEEDS ATTENTION: ${state.needsAttention.step} stopped on ${state.needsAttention.reason}; the payment is flagged` : '',
    ].filter(Boolean).join('\n'));
  };

  setHandler(refundQueries.state, () => state);
  // The processor's notifications about this refund, each stored event once, until one settles it.
  const notifications: ProviderEventSignal[] = [];
  const signalled = new Set<string>();
  setHandler(refundSignals.providerEvent, (event: ProviderEventSignal) => {
    // Anyone reaching Temporal can signal: a malformed one must not fail the workflow task.
    if (typeof event?.eventId !== 'string' || event.operation !== 'refund' || signalled.has(event.eventId)) return;
    signalled.add(event.eventId);
    notifications.push(event);
  });
  setHandler(refundUpdates.create, async (): Promise<RefundAcceptance> => {
    await condition(() => acceptance !== undefined);
    if (acceptance!.outcome === 'rejected') return acceptance!;
    await condition(() => FINAL.includes(state.status), ANSWER_WAIT);
    return { outcome: 'accepted', status: state.status as RefundStatus };
  });

  const reservation = await attended('reserve', () => records.reserveRefund(input));
  if (reservation.outcome === 'rejected') {
    acceptance = reservation;
    setStatus('REJECTED');
    await condition(allHandlersFinished);
    return state;
  }
  state.amount = reservation.amount;
  acceptance = { outcome: 'accepted', status: reservation.status };
  if (reservation.providerConfigId) {
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.ProviderConfigId, value: reservation.providerConfigId }]);
  }
  setStatus(reservation.status);

  if (state.status === 'PENDING') {
    const ref: RefundRef = {
      refundId: input.refundId, accountId: input.accountId, workspaceId: input.workspaceId, environment: input.environment,
      paymentId: input.paymentId, chargeId: input.chargeId, context: input.context,
    };
    let result: RefundResult = await attended('refundCharge', () => providers.refundCharge(ref));
    if (result.awaitingNotification) {
      state.awaitingNotification = true;
      setStatus('PENDING');
      // Still awaiting after one: the signal named no stored event about this refund (forged); the next one may.
      while (result.awaitingNotification) {
        await condition(() => notifications.length > 0);
        result = await attended('settle', () => records.settleRefundNotification({ ...ref, notification: notifications.shift()! }));
      }
      state.awaitingNotification = false;
    }
    state.failureReason = result.failureReason;
    setStatus(result.status);
    if (result.status === 'SUCCEEDED' && result.reversalWindowMs) await watchForReversal(ref, result.reversalWindowMs);
  }
  await condition(allHandlersFinished);
  return state;

  /**
   * One step's activity. Postgres refusing its write for good (`permanent_data_error`, never retried)
   * ends the refund visibly instead of looping: it keeps its status, its payment is flagged
   * `needs_attention` naming it (docs/operators.md#needs-attention), and the failure fails the workflow.
   */
  async function attended<T>(step: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (err) {
      const failure = permanentDataFailure(err);
      if (failure) await flagForOperator(step, failure);
      throw err;
    }
  }

  async function flagForOperator(step: string, failure: PermanentDataFailure): Promise<void> {
    state.needsAttention = { reason: PERMANENT_DATA_ERROR, step, since: Date.now() };
    describe();
    try {
      await attention.flagPaymentNeedsAttention({
        paymentId: input.paymentId, accountId: input.accountId, workspaceId: input.workspaceId, environment: input.environment,
        reason: PERMANENT_DATA_ERROR, step: `refund ${step}`, refundId: input.refundId, failure,
      });
    } catch (flagErr) {
      log.error('flagging the refund\'s payment failed', { refundId: input.refundId, error: String(flagErr) });
    }
  }

  /**
   * A processor may report a refund failed after it reported it succeeded (the card closed meanwhile): for
   * its window the workflow listens for that notification, one durable timer, and reverses the refund
   * once (db/refunds.ts). Approvals change nothing and are not even asked about; a refusal whose stored
   * event does not back it (forged) leaves the refund SUCCEEDED and the watch on.
   */
  async function watchForReversal(ref: RefundRef, windowMs: number): Promise<void> {
    const until = Date.now() + windowMs;
    state.reversibleUntil = until;
    describe();
    try {
      for (;;) {
        const remaining = until - Date.now();
        if (remaining <= 0 || !(await condition(() => notifications.length > 0, remaining))) return;
        const notification = notifications.shift()!;
        if (notification.outcome?.kind === 'approved') continue;
        const reversal = await attended('reversal', () => records.settleRefundNotification({ ...ref, notification }));
        if (reversal.status !== 'FAILED') continue;
        state.failureReason = reversal.failureReason;
        setStatus('FAILED');
        return;
      }
    } finally {
      state.reversibleUntil = undefined;
      describe();
    }
  }
}
