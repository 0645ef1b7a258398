import { ApplicationFailure } from '@temporalio/activity';
import { refunds } from './metrics';
import type { Db } from '../db/knex';
import type { Config } from '../lib/config';
import type { Vault } from '../lib/vault';
import { withArticle } from '../lib/errors';
import { logger } from '../lib/logger';
import { appendEvents, EventRecord } from '../db/events';
import type { ChargeRow } from '../db/payments';
import { findRefundWithCharge, RefundRow, reserveRefund, settleRefund } from '../db/refunds';
import { serializeCharge } from '../resources/payments';
import { serializeRefund } from '../resources/refunds';
import { updateCharge } from '../db/payments';
import { notificationExchange } from './providers/exchange';
import { openProvider } from './providers/open';
import type { OperationOutput, ProviderAdapter, ProviderExchange, ProviderOutcome } from './providers/types';
import type { ProviderEventSignal, RequestContext } from '../contracts/temporal';
import { refundCommand, type RefundActivities, type RefundRef, type RefundResult, type ReservationResult, type RefundWorkflowInput } from '../contracts/refunds';
import { withHeartbeat } from './heartbeat';
import { notificationTarget, verifiedNotification } from './payments/notifications';

export interface RefundActivityDeps {
  db: Db;
  config: Config;
  vault: Vault;
}

function actorOf(context: RequestContext): Partial<EventRecord> {
  return {
    actorType: context.actor.type, actorId: context.actor.id, apiKeyId: context.actor.apiKeyId,
    requestId: context.requestId, traceId: context.traceId, spanId: context.spanId,
  };
}

function refundEvent(ref: RefundRef, event: string, refund: RefundRow): EventRecord {
  return {
    event, accountId: ref.accountId, workspaceId: ref.workspaceId, subjectType: 'refund', subjectId: refund.id,
    paymentId: ref.paymentId, chargeId: ref.chargeId, refundId: refund.id,
    data: { object: serializeRefund(refund) }, ...actorOf(ref.context),
  };
}

function chargeRefundedEvent(ref: RefundRef, charge: ChargeRow): EventRecord {
  return {
    event: 'charge.refunded', accountId: ref.accountId, workspaceId: ref.workspaceId, subjectType: 'charge', subjectId: charge.id,
    paymentId: ref.paymentId, chargeId: charge.id, refundId: ref.refundId, routingPlanId: charge.routing_plan_id ?? undefined,
    data: { object: serializeCharge(charge) }, ...actorOf(ref.context),
  };
}

/**
 * A refund that has just SUCCEEDED at a processor that may still report it failed carries how long the
 * workflow listens for that (the adapter's `refundReversalWindowMs`).
 */
function withReversalWindow(result: RefundResult, adapter: Pick<ProviderAdapter, 'refundReversalWindowMs'>): RefundResult {
  const windowMs = adapter.refundReversalWindowMs;
  return result.status === 'SUCCEEDED' && windowMs ? { ...result, reversalWindowMs: windowMs } : result;
}

/** The refund activities; the workflow proxies them through the contract's RefundActivities. */
export function refundActivities({ db, config, vault }: RefundActivityDeps) {
  /**
   * Records the provider's verdict once, with its events, in one transaction (db/refunds.ts
   * settleRefund): SUCCEEDED moves the reserved amount to refunded, FAILED releases it, and a refusal of
   * a SUCCEEDED refund (the processor reversing it) takes the refunded amount back.
   */
  async function settle(ref: RefundRef, outcome: ProviderOutcome, exchange: ProviderExchange): Promise<RefundResult> {
    const env = ref.environment;
    const failureReason = outcome.kind === 'approved' ? undefined : 'declineCode' in outcome ? outcome.declineCode : 'provider_error';
    let settledNow: 'succeeded' | 'failed' | 'reversed' | undefined;
    const result = await db.transaction(async (trx): Promise<RefundResult> => {
      const verdict = failureReason === undefined ? { approved: true as const } : { approved: false as const, failureReason };
      const settled = await settleRefund(trx, env, ref.refundId, verdict, exchange);
      if (!settled) throw ApplicationFailure.nonRetryable(`refund ${ref.refundId} does not exist`, 'not_found');
      if (settled.outcome === 'unchanged') {
        return { status: settled.refund.status, failureReason: settled.refund.failure_reason ?? undefined };
      }
      settledNow = settled.outcome;
      if (settled.outcome === 'succeeded') {
        await appendEvents(trx, env, [refundEvent(ref, 'refund.succeeded', settled.refund), chargeRefundedEvent(ref, settled.charge)]);
        return { status: 'SUCCEEDED' as const };
      }
      await appendEvents(trx, env, [refundEvent(ref, 'refund.failed', settled.refund)]);
      return { status: 'FAILED' as const, failureReason, ...(settled.outcome === 'reversed' ? { reversed: true } : {}) };
    });
    if (settledNow) refunds.inc({ outcome: settledNow });
    return result;
  }

  return {
    async reserveRefund(input: RefundWorkflowInput): Promise<ReservationResult> {
      const env = input.environment;
      // Only the API's refunds move money: a refund workflow started by anyone else who reaches Temporal
      // (with ids read from search attributes) has no valid seal.
      if (!vault.sealed('refund', refundCommand(input), input.seal)) {
        logger.warn({ environment: env, refund_id: input.refundId.slice(0, 64), charge_id: input.chargeId.slice(0, 64) }, 'refund refused: its workflow was not started by the API');
        throw ApplicationFailure.nonRetryable('the refund was not started by the API (no valid seal)', 'unsealed_command');
      }
      return db.transaction(async (trx): Promise<ReservationResult> => {
        const reservation = await reserveRefund(trx, input);
        switch (reservation.outcome) {
          case 'existing':
            return { outcome: 'accepted', status: reservation.refund.status, amount: Number(reservation.refund.amount), providerConfigId: reservation.providerConfigId };
          case 'reserved': {
            await appendEvents(trx, env, [refundEvent(input, 'refund.created', reservation.refund)]);
            return { outcome: 'accepted', status: 'PENDING', amount: Number(reservation.refund.amount), providerConfigId: reservation.providerConfigId };
          }
          case 'invalid_state': {
            const status = reservation.chargeStatus;
            return { outcome: 'rejected', reason: 'invalid_state', message: `${withArticle(status)} charge cannot be refunded; only captured charges can.`, details: { status } };
          }
          case 'exceeds_available': {
            const { available } = reservation;
            return {
              outcome: 'rejected', reason: 'refund_exceeds_available', details: { available },
              message: input.amount === undefined ? 'Nothing is left to refund on this charge.' : `The refund of ${input.amount} is larger than the ${available} left to refund.`,
            };
          }
        }
      });
    },

    /**
     * Asks the charge's provider to refund, with the refund id as idempotency key, and settles on its
     * verdict. Approved or hard-declined: settled here. Anything else (processor down, no answer, a
     * soft decline) throws a retryable failure: the activity's retry policy asks again, for as long as
     * it takes, with the same key — so the processor refunds at most once, however often we ask.
     */
    async refundCharge(ref: RefundRef): Promise<RefundResult> {
      const env = ref.environment;
      const found = await findRefundWithCharge(db, env, ref.refundId);
      if (!found) throw ApplicationFailure.nonRetryable(`refund ${ref.refundId} does not exist`, 'not_found');
      const { refund, charge } = found;
      const configId = charge?.payment_provider_config_id;
      if (!configId) throw ApplicationFailure.nonRetryable(`charge ${refund.charge_id} has no provider config`, 'not_found');
      // Loaded just in time; never returned, so never in workflow history.
      const { credentials, adapter: provider } = await openProvider({ db, vault, config }, env, configId);
      // Settled by an earlier try of this activity (its completion lost): the same answer, window included.
      if (refund.status !== 'PENDING') return withReversalWindow({ status: refund.status, failureReason: refund.failure_reason ?? undefined }, provider);

      let result: OperationOutput = await withHeartbeat(provider.refund({
        credentials, idempotencyKey: refund.id, providerReference: charge.provider_reference ?? '', amount: Number(refund.amount), currency: refund.currency,
      }));
      if (result.outcome.kind === 'unknown' && provider.capabilities.statusLookup) {
        // The call may have landed: the processor's own record under our key tells.
        const status = await withHeartbeat(provider.getStatus({ credentials, idempotencyKey: refund.id, providerReference: charge.provider_reference ?? undefined }));
        if (status.lookup === 'found' && status.operation === 'refund') result = { outcome: status.outcome, exchange: status.exchange };
      }
      const { outcome } = result;
      if (outcome.kind === 'approved' || outcome.kind === 'hard_decline') return withReversalWindow(await settle(ref, outcome, result.exchange), provider);
      if (outcome.kind === 'pending') {
        // Received (Adyen; a Stripe refund still pending): the processor's notification settles it.
        await updateCharge(db, env, charge.id, { exchanges: [result.exchange] });
        return { status: 'PENDING', awaitingNotification: true };
      }
      const why = outcome.kind === 'soft_decline' ? outcome.declineCode : outcome.kind === 'requires_action' ? 'an authentication request' : outcome.error;
      throw ApplicationFailure.retryable(`refund not confirmed (${outcome.kind}: ${why}); asking again with the same key`, `refund_${outcome.kind}`);
    },

    /**
     * The processor's notification about a refund it received: approved settles it, a refusal releases
     * the amount. A signal with no stored event about this refund behind it changes nothing: still
     * `awaitingNotification` while the refund is PENDING.
     */
    async settleRefundNotification({ notification, ...ref }: RefundRef & { notification: ProviderEventSignal }): Promise<RefundResult> {
      const env = ref.environment;
      const found = await findRefundWithCharge(db, env, ref.refundId);
      if (!found?.charge) throw ApplicationFailure.nonRetryable(`refund ${ref.refundId} does not exist`, 'not_found');
      // Only a stored, verified event about this refund settles it; a forged signal leaves it waiting.
      const stored = await verifiedNotification(db, env, notification, notificationTarget('refund', found.charge, found.refund.id));
      if (!stored) return { status: found.refund.status, failureReason: found.refund.failure_reason ?? undefined, awaitingNotification: found.refund.status === 'PENDING' };
      const outcome = stored.outcome.kind === 'soft_decline' ? { ...stored.outcome, kind: 'hard_decline' as const } : stored.outcome;
      const settled = await settle(ref, outcome, notificationExchange(stored, ref.refundId));
      if (settled.status !== 'SUCCEEDED') return settled;
      const { adapter } = await openProvider({ db, vault, config }, env, found.charge.payment_provider_config_id ?? '');
      return withReversalWindow(settled, adapter);
    },
  } satisfies RefundActivities;
}
