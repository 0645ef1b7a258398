import {
  allHandlersFinished, condition, proxyActivities, setCurrentDetails, setHandler, upsertSearchAttributes,
} from '@temporalio/workflow';
import { SEARCH_ATTRIBUTES, type ProviderEventSignal } from '../contract';
import {
  RefundAcceptance, RefundActivities, refundQueries, RefundRef, RefundResult, refundSignals, RefundState, RefundStatus, refundUpdates,
  RefundWorkflowInput,
} from './contract';

/** Short Postgres work: quick retries, forever (money state must always land). */
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
    setCurrentDetails([
      `**${status}** · refund of ${state.amount ?? 'all that remains'} on charge ${input.chargeId} · payment ${input.paymentId}`,
      state.failureReason ? `failure: ${state.failureReason}` : '',
      status === 'PENDING' && state.awaitingNotification ? 'received by the processor, waiting for its notification' : '',
      status === 'PENDING' && !state.awaitingNotification ? 'waiting for the provider (a pending refundCharge activity shows its attempts and last error)' : '',
    ].filter(Boolean).join('\n'));
  };
  const publish = async (eventIds: string[]) => {
    if (eventIds.length) await records.fanOutEvents({ environment: input.environment, eventIds });
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

  const reservation = await records.reserveRefund(input);
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
  await publish(reservation.eventIds);

  if (state.status === 'PENDING') {
    const ref: RefundRef = {
      refundId: input.refundId, accountId: input.accountId, workspaceId: input.workspaceId, environment: input.environment,
      paymentId: input.paymentId, chargeId: input.chargeId, context: input.context,
    };
    let result: RefundResult = await providers.refundCharge(ref);
    if (result.awaitingNotification) {
      state.awaitingNotification = true;
      setStatus('PENDING');
      // Still awaiting after one: the signal named no stored event about this refund (forged); the next one may.
      while (result.awaitingNotification) {
        await condition(() => notifications.length > 0);
        result = await records.settleRefundNotification({ ...ref, notification: notifications.shift()! });
      }
      state.awaitingNotification = false;
    }
    state.failureReason = result.failureReason;
    setStatus(result.status);
    await publish(result.eventIds);
  }
  await condition(allHandlersFinished);
  return state;
}
