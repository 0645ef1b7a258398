import { ApplicationFailure } from '@temporalio/activity';
import type { Knex } from 'knex';
import type { Db } from '../db/knex';
import type { Config } from '../lib/config';
import type { Vault } from '../lib/vault';
import { envTable, Environment } from '../db/environments';
import { serializeCharge, serializeRefund } from '../db/serialize';
import { loadConfigCredentials } from '../db/repositories/routing';
import { getAdapter } from './providers/registry';
import type { OperationOutput, ProviderExchange, ProviderOutcome } from './providers/types';
import { appendEvents, EventRecord } from './events';
import type { RefundRef, RefundRejection, RefundStatus, RefundWorkflowInput, RequestContext } from '../workflows/shared';
import { withHeartbeat } from './heartbeat';

export interface RefundActivityDeps {
  db: Db;
  config: Config;
  vault: Vault;
}

export type ReservationResult =
  | { outcome: 'accepted'; status: RefundStatus; amount: number; providerConfigId: string | null; eventIds: string[] }
  | RefundRejection;

export interface RefundResult {
  status: RefundStatus;
  failureReason?: string;
  eventIds: string[];
}

/** Charge statuses a refund can be reserved against (REFUNDED only to say "nothing left"). */
const REFUNDABLE = ['CAPTURED', 'PARTIALLY_REFUNDED'];
const CAPTURED_ONCE = [...REFUNDABLE, 'REFUNDED'];


function actorOf(context: RequestContext): Partial<EventRecord> {
  return {
    actorType: context.actor.type, actorId: context.actor.id, apiKeyId: context.actor.apiKeyId,
    requestId: context.requestId, traceId: context.traceId,
  };
}

function refundEvent(ref: RefundRef, event: string, refund: any): EventRecord {
  return {
    event, accountId: ref.accountId, workspaceId: ref.workspaceId, subjectType: 'refund', subjectId: refund.id,
    paymentId: ref.paymentId, chargeId: ref.chargeId, refundId: refund.id,
    data: { object: serializeRefund(refund) }, ...actorOf(ref.context),
  };
}

function chargeRefundedEvent(ref: RefundRef, charge: any): EventRecord {
  return {
    event: 'charge.refunded', accountId: ref.accountId, workspaceId: ref.workspaceId, subjectType: 'charge', subjectId: charge.id,
    paymentId: ref.paymentId, chargeId: charge.id, refundId: ref.refundId, routingPlanId: charge.routing_plan_id ?? undefined,
    data: { object: serializeCharge(charge) }, ...actorOf(ref.context),
  };
}

export function refundActivities({ db, config, vault }: RefundActivityDeps) {
  const adapter = (identifier: string) => getAdapter(identifier, { simulatorUrl: config.simulatorUrl, requestTimeoutMs: config.providerTimeoutMs });
  const table = (env: Environment, name: string, trx: Knex = db) => trx(envTable(env, name));

  /** Why the reservation did not match: the charge is not refundable, or less is left than asked. */
  async function rejection(trx: Knex, env: Environment, chargeId: string, amount: number | undefined): Promise<RefundRejection> {
    const charge = await table(env, 'charges', trx).where({ id: chargeId }).first('status', 'captured_amount', 'refunded_amount', 'pending_refund_amount');
    if (!charge || !CAPTURED_ONCE.includes(charge.status)) {
      const status = charge?.status ?? 'UNKNOWN';
      return { outcome: 'rejected', reason: 'invalid_state', message: `A ${status} charge cannot be refunded; only captured charges can.`, details: { status } };
    }
    const available = Number(charge.captured_amount) - Number(charge.refunded_amount) - Number(charge.pending_refund_amount);
    return {
      outcome: 'rejected', reason: 'refund_exceeds_available', details: { available },
      message: amount === undefined ? 'Nothing is left to refund on this charge.' : `The refund of ${amount} is larger than the ${available} left to refund.`,
    };
  }

  /**
   * Records the provider's verdict in one transaction, once: the refund row is locked and must still
   * be PENDING. SUCCEEDED moves the reserved amount to refunded (charge and payment); FAILED releases it.
   */
  async function settle(ref: RefundRef, outcome: ProviderOutcome, exchange: ProviderExchange): Promise<RefundResult> {
    const env = ref.environment;
    return db.transaction(async (trx) => {
      const refund = await table(env, 'refunds', trx).where({ id: ref.refundId }).forUpdate().first();
      if (refund.status !== 'PENDING') return { status: refund.status, failureReason: refund.failure_reason ?? undefined, eventIds: [] };
      const amount = Number(refund.amount);
      const log = trx.raw('exchanges || ?::jsonb', [JSON.stringify([exchange])]);
      if (outcome.kind === 'approved') {
        const [charge] = await table(env, 'charges', trx).where({ id: refund.charge_id }).update({
          refunded_amount: trx.raw('refunded_amount + ?', [amount]),
          pending_refund_amount: trx.raw('pending_refund_amount - ?', [amount]),
          status: trx.raw(`CASE WHEN refunded_amount + ? >= captured_amount THEN 'REFUNDED' ELSE 'PARTIALLY_REFUNDED' END`, [amount]),
          exchanges: log,
          updated_at: trx.fn.now(),
        }).returning('*');
        // A payment has one captured charge, so the payment follows it.
        await table(env, 'payments', trx).where({ id: refund.payment_id }).update({
          amount_refunded: trx.raw('amount_refunded + ?', [amount]), status: charge.status, updated_at: trx.fn.now(),
        });
        const [settled] = await table(env, 'refunds', trx).where({ id: refund.id })
          .update({ status: 'SUCCEEDED', updated_at: trx.fn.now() }).returning('*');
        const eventIds = await appendEvents(trx, env, [refundEvent(ref, 'refund.succeeded', settled), chargeRefundedEvent(ref, charge)]);
        return { status: 'SUCCEEDED' as const, eventIds };
      }
      const failureReason = 'declineCode' in outcome ? outcome.declineCode : 'provider_error';
      await table(env, 'charges', trx).where({ id: refund.charge_id }).update({
        pending_refund_amount: trx.raw('pending_refund_amount - ?', [amount]), exchanges: log, updated_at: trx.fn.now(),
      });
      const [failed] = await table(env, 'refunds', trx).where({ id: refund.id })
        .update({ status: 'FAILED', failure_reason: failureReason, updated_at: trx.fn.now() }).returning('*');
      const eventIds = await appendEvents(trx, env, [refundEvent(ref, 'refund.failed', failed)]);
      return { status: 'FAILED' as const, failureReason, eventIds };
    });
  }

  return {
    /**
     * Accepts a refund or refuses it, atomically: one conditional UPDATE reserves the amount on the
     * charge (it matches only while captured − refunded − pending covers it), in the same transaction
     * as the PENDING refund row and `refund.created`. Idempotent: a refund row that exists is returned.
     */
    async reserveRefund(input: RefundWorkflowInput): Promise<ReservationResult> {
      const env = input.environment;
      const ref: RefundRef = input;
      return db.transaction(async (trx) => {
        const existing = await table(env, 'refunds', trx).where({ id: input.refundId }).first();
        const charge = await table(env, 'charges', trx).where({ id: input.chargeId }).first('payment_provider_config_id');
        if (existing) {
          return { outcome: 'accepted' as const, status: existing.status, amount: Number(existing.amount), providerConfigId: charge?.payment_provider_config_id ?? null, eventIds: [] };
        }
        let amount = input.amount;
        if (amount === undefined) {
          // "All that remains", read under the row lock so that no other reservation moves it meanwhile.
          const locked = await table(env, 'charges', trx).where({ id: input.chargeId }).forUpdate()
            .first('captured_amount', 'refunded_amount', 'pending_refund_amount');
          const remaining = locked ? Number(locked.captured_amount) - Number(locked.refunded_amount) - Number(locked.pending_refund_amount) : 0;
          if (remaining <= 0) return rejection(trx, env, input.chargeId, undefined);
          amount = remaining;
        }
        const reserved = await trx.raw(
          `UPDATE ?? SET pending_refund_amount = pending_refund_amount + ?, updated_at = now()
            WHERE id = ? AND account_id = ? AND status IN ('CAPTURED', 'PARTIALLY_REFUNDED')
              AND captured_amount - refunded_amount - pending_refund_amount >= ?
            RETURNING id, currency`,
          [envTable(env, 'charges'), amount, input.chargeId, input.accountId, amount],
        );
        if (reserved.rows.length === 0) return rejection(trx, env, input.chargeId, input.amount);
        const [refund] = await table(env, 'refunds', trx).insert({
          id: input.refundId,
          account_id: input.accountId,
          charge_id: input.chargeId,
          payment_id: input.paymentId,
          status: 'PENDING',
          reason: input.reason ?? null,
          reason_other: input.reasonOther ?? null,
          amount,
          currency: reserved.rows[0].currency,
          metadata: JSON.stringify(input.metadata ?? {}),
        }).returning('*');
        const eventIds = await appendEvents(trx, env, [refundEvent(ref, 'refund.created', refund)]);
        return { outcome: 'accepted' as const, status: 'PENDING' as const, amount, providerConfigId: charge?.payment_provider_config_id ?? null, eventIds };
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
      const refund = await table(env, 'refunds').where({ id: ref.refundId }).first();
      if (!refund) throw ApplicationFailure.nonRetryable(`refund ${ref.refundId} does not exist`, 'not_found');
      if (refund.status !== 'PENDING') return { status: refund.status, failureReason: refund.failure_reason ?? undefined, eventIds: [] };
      const charge = await table(env, 'charges').where({ id: refund.charge_id }).first('payment_provider_config_id', 'provider_reference');
      const providerConfig = await db(`${envTable(env, 'payment_provider_configs')} as c`)
        .join(`${envTable(env, 'payment_providers')} as p`, 'p.id', 'c.payment_provider_id')
        .where('c.id', charge.payment_provider_config_id).first('p.identifier');
      if (!providerConfig) throw ApplicationFailure.nonRetryable(`provider config ${charge.payment_provider_config_id} is gone`, 'not_found');
      // Loaded just in time; never returned, so never in workflow history.
      const credentials = await loadConfigCredentials(db, vault, env, charge.payment_provider_config_id);
      const provider = adapter(providerConfig.identifier);

      let result: OperationOutput = await withHeartbeat(provider.refund({
        credentials, idempotencyKey: refund.id, providerReference: charge.provider_reference, amount: Number(refund.amount),
      }));
      if (result.outcome.kind === 'unknown' && provider.capabilities.statusLookup) {
        // The call may have landed: the processor's own record under our key tells.
        const status = await withHeartbeat(provider.getStatus({ credentials, idempotencyKey: refund.id }));
        if (status.lookup === 'found' && status.operation === 'refund') result = { outcome: status.outcome, exchange: status.exchange };
      }
      const { outcome } = result;
      if (outcome.kind === 'approved' || outcome.kind === 'hard_decline') return settle(ref, outcome, result.exchange);
      const why = outcome.kind === 'soft_decline' ? outcome.declineCode : outcome.error;
      throw ApplicationFailure.retryable(`refund not confirmed (${outcome.kind}: ${why}); asking again with the same key`, `refund_${outcome.kind}`);
    },
  };
}
