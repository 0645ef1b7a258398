import { ApplicationFailure } from '@temporalio/activity';
import type { Knex } from 'knex';
import type { Db } from '../db/knex';
import type { Config } from '../lib/config';
import type { Vault } from '../lib/vault';
import { envTable, Environment } from '../db/environments';
import { serializeCharge, serializePayment } from '../api/resources/payments';
import { eraseSingleUseCards, findUsableCard, loadCardForAuthorization, wipeCvc } from '../db/repositories/payment-methods';
import { loadRoutingInputs } from '../db/repositories/routing';
import { insertGuestCustomer } from '../db/repositories/customers';
import { buildRoutingPlan } from '../lib/routing/plan';
import { getAdapter } from './providers/registry';
import type { OperationOutput, ProviderExchange, ProviderOutcome } from './providers/types';
import { appendEvents, EventRecord, idsToPublish } from './events';
import { withHeartbeat } from './heartbeat';
import type { RequestContext } from '../workflows/contract';
import type {
  AttemptArgs, AttemptOutcome, AttemptResult, PaymentInput, PaymentRef, PaymentStatus, PlannedCandidate, PlanResult, ReconcileResult,
  RoutingHintsInput,
} from '../workflows/payments/contract';

export interface PaymentActivityDeps {
  db: Db;
  config: Config;
  vault: Vault;
}

const now = () => new Date();

/** The decline recorded when an attempt is told a card its payment may not use (or one used up meanwhile). */
const PAYMENT_METHOD_UNAVAILABLE = 'payment_method_unavailable';

/**
 * Which card the payment `row` may be charged with: the one it was told, re-checked against the
 * payment's account and customer as Postgres has them (a workflow's input is not trusted for this).
 */
function cardUse(args: PaymentRef & { paymentMethodId: string }, row: any) {
  return {
    paymentMethodId: args.paymentMethodId,
    // A payment row of another account than the workflow's matches no card at all.
    accountId: row?.account_id === args.accountId ? args.accountId : '',
    paymentId: args.paymentId,
    customerId: row?.customer_id ?? null,
  };
}

/** A charge's recorded status as the outcome of its attempt (FAILED is told apart by its decline code). */
const RECORDED_OUTCOME: Record<string, AttemptOutcome> = {
  AUTHORIZED: 'approved', CAPTURED: 'approved', VOIDED: 'approved', PARTIALLY_REFUNDED: 'approved', REFUNDED: 'approved',
  DECLINED: 'hard_decline', UNKNOWN: 'unknown',
};


function paymentEvent(ref: PaymentRef, event: string, payment: any, context: RequestContext, extra: Partial<EventRecord> = {}): EventRecord {
  return {
    event,
    accountId: ref.accountId,
    workspaceId: ref.workspaceId,
    subjectType: 'payment',
    subjectId: ref.paymentId,
    paymentId: ref.paymentId,
    checkoutSessionId: payment.checkout_session_id ?? undefined,
    data: { object: serializePayment(payment) },
    actorType: context.actor.type,
    actorId: context.actor.id,
    apiKeyId: context.actor.apiKeyId,
    requestId: context.requestId,
    traceId: context.traceId,
    ...extra,
  };
}

function chargeEvent(ref: PaymentRef, event: string, charge: any, context: RequestContext): EventRecord {
  return {
    event,
    accountId: ref.accountId,
    workspaceId: ref.workspaceId,
    subjectType: 'charge',
    subjectId: charge.id,
    paymentId: ref.paymentId,
    chargeId: charge.id,
    routingPlanId: charge.routing_plan_id ?? undefined,
    attemptId: `${charge.id}#${charge.attempt_no}`,
    data: { object: serializeCharge(charge) },
    actorType: context.actor.type,
    actorId: context.actor.id,
    apiKeyId: context.actor.apiKeyId,
    requestId: context.requestId,
    traceId: context.traceId,
  };
}

export function paymentActivities({ db, config, vault }: PaymentActivityDeps) {
  const adapter = (identifier: string) => getAdapter(identifier, { simulatorUrl: config.simulatorUrl, requestTimeoutMs: config.providerTimeoutMs });
  const payments = (env: Environment, trx: Knex = db) => trx(envTable(env, 'payments'));
  const charges = (env: Environment, trx: Knex = db) => trx(envTable(env, 'charges'));

  async function updatePayment(trx: Knex, ref: PaymentRef, patch: Record<string, unknown>) {
    const [row] = await payments(ref.environment, trx).where({ id: ref.paymentId }).update({ ...patch, updated_at: now() }).returning('*');
    return row;
  }

  /** The provider and credentials behind a charge's config, loaded just in time (never returned). */
  async function providerFor(env: Environment, configId: string) {
    const providerConfig = await db(`${envTable(env, 'payment_provider_configs')} as c`)
      .join(`${envTable(env, 'payment_providers')} as p`, 'p.id', 'c.payment_provider_id')
      .where('c.id', configId)
      .first('c.id', 'c.name', 'c.payment_provider_id', 'c.merchant_capabilities', 'c.credentials_encrypted', 'p.identifier', 'p.name as provider_name');
    if (!providerConfig) throw ApplicationFailure.nonRetryable(`provider config ${configId} is gone`, 'not_found');
    // Decrypted here, in activity memory only, and never returned.
    const credentials = vault.decryptJson<Record<string, unknown>>(providerConfig.credentials_encrypted);
    delete providerConfig.credentials_encrypted;
    return { providerConfig, credentials, adapter: adapter(providerConfig.identifier) };
  }

  /**
   * Records what a provider said about a charge, and what it means for the payment, in one
   * transaction: charge status, amounts, exchanges and duration; payment status; the events.
   */
  async function applyOutcome(
    args: AttemptArgs,
    outcome: ProviderOutcome,
    exchanges: ProviderExchange[],
    captured?: ProviderOutcome,
  ): Promise<AttemptResult> {
    return db.transaction(async (trx) => {
      const ref: PaymentRef = args;
      const current = await charges(args.environment, trx).where({ id: args.chargeId }).forUpdate().first();
      const duration = exchanges.reduce((sum, e) => sum + e.duration_ms, 0);
      const patch: Record<string, unknown> = {
        exchanges: trx.raw('exchanges || ?::jsonb', [JSON.stringify(exchanges)]),
        performance: JSON.stringify({ ...(current.performance ?? {}), duration: (current.performance?.duration ?? 0) + duration, provider_calls: (current.performance?.provider_calls ?? 0) + exchanges.length }),
        updated_at: now(),
      };
      const events: EventRecord[] = [];
      let paymentPatch: Record<string, unknown> | undefined;
      let paymentStatus: PaymentStatus = 'PROCESSING';
      let chargeEventName: string | undefined;
      let paymentEventName: string | undefined;

      switch (outcome.kind) {
        case 'approved': {
          const capturedOutcome = captured?.kind === 'approved' ? captured : undefined;
          Object.assign(patch, {
            status: capturedOutcome ? 'CAPTURED' : 'AUTHORIZED',
            authorized_amount: outcome.authorizedAmount,
            captured_amount: capturedOutcome ? capturedOutcome.capturedAmount : 0,
            provider_reference: outcome.providerReference,
            decline_code: null,
          });
          if (capturedOutcome) {
            paymentStatus = 'SUCCEEDED';
            paymentPatch = { status: paymentStatus, amount_capturable: 0, amount_received: capturedOutcome.capturedAmount, last_error: null };
            chargeEventName = 'charge.succeeded';
            paymentEventName = 'payment_intent.succeeded';
          } else {
            paymentStatus = 'AUTHORIZED';
            paymentPatch = { status: paymentStatus, amount_capturable: outcome.authorizedAmount, last_error: null };
            paymentEventName = 'payment_intent.amount_capturable_updated';
          }
          break;
        }
        case 'hard_decline':
          Object.assign(patch, { status: 'DECLINED', decline_code: outcome.declineCode });
          paymentStatus = 'FAILED';
          paymentPatch = { status: paymentStatus, last_error: JSON.stringify({
            code: outcome.declineCode === PAYMENT_METHOD_UNAVAILABLE ? PAYMENT_METHOD_UNAVAILABLE : 'card_declined',
            decline_code: outcome.declineCode, charge_id: args.chargeId, message: outcome.message ?? null,
          }) };
          chargeEventName = 'charge.failed';
          paymentEventName = 'payment_intent.payment_failed';
          break;
        case 'soft_decline':
        case 'transport_error': {
          const code = outcome.kind === 'soft_decline' ? outcome.declineCode : 'provider_unavailable';
          Object.assign(patch, { status: 'FAILED', decline_code: code });
          chargeEventName = 'charge.failed';
          if (args.lastCandidate) {
            paymentStatus = 'FAILED';
            paymentPatch = { status: paymentStatus, last_error: JSON.stringify({ code: 'all_providers_failed', decline_code: code, charge_id: args.chargeId }) };
            paymentEventName = 'payment_intent.payment_failed';
          }
          break;
        }
        case 'unknown':
          Object.assign(patch, {
            status: 'UNKNOWN',
            details: JSON.stringify({ ...(current.details ?? {}), unknown_since: current.details?.unknown_since ?? now().toISOString(), unknown_reason: outcome.error }),
          });
          break;
      }

      const [charge] = await charges(args.environment, trx).where({ id: args.chargeId }).update(patch).returning('*');
      if (chargeEventName) events.push(chargeEvent(ref, chargeEventName, charge, args.context));
      if (paymentPatch) {
        const payment = await updatePayment(trx, ref, paymentPatch);
        if (paymentEventName) events.push(paymentEvent(ref, paymentEventName, payment, args.context, { chargeId: charge.id, routingPlanId: args.routingPlanId }));
        // The walk is over: the card it used is never charged again (capture, void and refunds need only
        // the provider's reference). A FAILED payment may be confirmed again, with another card, so only
        // this walk's card goes; from AUTHORIZED or SUCCEEDED no confirm can follow, so every card bound
        // to the payment goes.
        await eraseSingleUseCards(trx, args.environment, args.paymentId, paymentStatus === 'FAILED' ? args.paymentMethodId : undefined);
      }
      const eventIds = await idsToPublish(trx, args.environment, args.accountId, await appendEvents(trx, args.environment, events));
      return {
        outcome: outcome.kind,
        declineCode: 'declineCode' in outcome ? outcome.declineCode : undefined,
        paymentStatus,
        eventIds,
      };
    });
  }

  /**
   * The outcome already recorded for a charge, as the attempt that recorded it answered: for activity
   * retries after a commit whose completion never reached Temporal. Its events are offered to the
   * fan-out again (which is idempotent), since the first answer may have been lost before publishing.
   */
  async function recordedAttempt(args: AttemptArgs): Promise<AttemptResult> {
    const env = args.environment;
    const charge = await charges(env).where({ id: args.chargeId }).first('status', 'decline_code');
    const payment = await payments(env).where({ id: args.paymentId }).first('status');
    const eventIds = await db(envTable(env, 'events')).where({ charge_id: args.chargeId }).orderBy('id').pluck('id');
    return {
      outcome: RECORDED_OUTCOME[charge.status] ?? (charge.decline_code === 'provider_unavailable' ? 'transport_error' : 'soft_decline'),
      declineCode: charge.decline_code ?? undefined,
      paymentStatus: payment.status,
      eventIds: await idsToPublish(db, env, args.accountId, eventIds),
    };
  }

  /** Captures an approved authorization right away (auto_capture), idempotently under `<charge>:capture`. */
  async function captureAfterApproval(args: AttemptArgs, providerReference: string, credentials: Record<string, unknown>, identifier: string): Promise<OperationOutput> {
    const result = await withHeartbeat(adapter(identifier).capture({ credentials, idempotencyKey: `${args.chargeId}:capture`, providerReference }));
    if (result.outcome.kind === 'transport_error' || result.outcome.kind === 'unknown') {
      // The authorization stands; the capture will be retried by the activity with the same key.
      throw ApplicationFailure.retryable(`capture not confirmed: ${result.outcome.error}`, 'capture_pending');
    }
    return result;
  }

  return {
    /** Writes the payment row (and a guest customer) and `payment_intent.created`. Idempotent. */
    async createPaymentRecord(input: PaymentInput): Promise<{ eventIds: string[] }> {
      const ref: PaymentRef = input;
      return db.transaction(async (trx) => {
        if (input.guestCustomer) await insertGuestCustomer(trx, input.environment, input.accountId, input.guestCustomer);
        const inserted = await payments(input.environment, trx).insert({
          id: input.paymentId,
          account_id: input.accountId,
          customer_id: input.guestCustomer?.id ?? input.customerId ?? null,
          checkout_session_id: input.checkoutSessionId ?? null,
          amount: input.amount,
          currency: input.currency,
          status: 'CREATED',
          auto_capture: input.autoCapture,
          secure_mode: input.secureMode,
          installments: input.installments,
          routing: JSON.stringify(input.routing ?? {}),
          metadata: JSON.stringify(input.metadata ?? {}),
        }).onConflict('id').ignore().returning('*');
        if (!inserted.length) return { eventIds: [] };
        const eventIds = await appendEvents(trx, input.environment, [paymentEvent(ref, 'payment_intent.created', inserted[0], input.context)]);
        return { eventIds: await idsToPublish(trx, input.environment, input.accountId, eventIds) };
      });
    },

    /**
     * Builds and stores the routing plan for a confirm, and moves the payment to PROCESSING (or to
     * FAILED with no_eligible_provider when nothing can take it). Idempotent on the plan id.
     */
    async planRoute(args: PaymentRef & {
      routingPlanId: string; paymentMethodId: string; installments?: number; routing?: RoutingHintsInput; context: RequestContext;
    }): Promise<PlanResult> {
      const existing = await db(envTable(args.environment, 'routing_plans')).where({ id: args.routingPlanId }).first();
      if (existing) {
        return { routingPlanId: existing.id, candidates: existing.metadata.planned ?? [], eventIds: [] };
      }
      const env = args.environment;
      const payment = await payments(env).where({ id: args.paymentId }).first();
      const card = await findUsableCard(db, env, cardUse(args, payment));
      const customer = payment.customer_id
        ? await db(envTable(env, 'customers')).where({ id: payment.customer_id }).first('country')
        : undefined;
      const installments = args.installments ?? payment.installments;
      const hints = { ...(payment.routing ?? {}), ...(args.routing ?? {}) };
      const inputs = await loadRoutingInputs(db, env, args.accountId);
      const plan = card
        ? buildRoutingPlan({
            payment: {
              amount: Number(payment.amount), currency: payment.currency, installments,
              card: { network: card.card_network, country: card.card_country ?? undefined },
              customer: customer ? { country: customer.country ?? undefined } : undefined,
              metadata: payment.metadata ?? {},
            },
            configs: inputs.configs,
            providers: inputs.providers,
            routing: hints,
          })
        : { candidates: [], ineligible: [] };
      const planned: PlannedCandidate[] = plan.candidates.map((c) => ({
        providerConfigId: c.payment_provider_config_id, providerId: c.payment_provider_id,
        methodId: c.payment_provider_method_id, estimatedFee: c.estimated_fee,
      }));

      return db.transaction(async (trx) => {
        await trx(envTable(env, 'routing_plans')).insert({
          id: args.routingPlanId,
          account_id: args.accountId,
          payment_id: args.paymentId,
          request_id: args.context.requestId ?? null,
          trace_id: args.context.traceId ?? null,
          current_index: 0,
          candidates: JSON.stringify(plan.candidates),
          metadata: JSON.stringify({ ineligible: plan.ineligible, hints, planned, payment_method_id: args.paymentMethodId }),
        }).onConflict('id').ignore();
        const failed = planned.length === 0;
        const row = await updatePayment(trx, args, {
          status: failed ? 'FAILED' : 'PROCESSING',
          payment_method_id: args.paymentMethodId,
          installments,
          last_error: !failed ? null : JSON.stringify(card
            ? { code: 'no_eligible_provider', message: 'No payment provider can take this payment.' }
            : { code: PAYMENT_METHOD_UNAVAILABLE, message: 'The payment method cannot be used for this payment.' }),
        });
        // A confirm that ends here has used up its single-use card, as one that ends after attempts does.
        if (failed) await eraseSingleUseCards(trx, env, args.paymentId, args.paymentMethodId);
        const eventIds = await appendEvents(trx, env, [
          paymentEvent(args, failed ? 'payment_intent.payment_failed' : 'payment_intent.processing', row, args.context, { routingPlanId: args.routingPlanId }),
        ]);
        return { routingPlanId: args.routingPlanId, candidates: planned, eventIds: await idsToPublish(trx, env, args.accountId, eventIds) };
      });
    },

    /**
     * One attempt: the charge row, then the provider's authorize with the charge id as idempotency key
     * (so a retry of this activity, after a crash anywhere, can never charge twice), then the outcome.
     */
    async authorizeCharge(args: AttemptArgs): Promise<AttemptResult> {
      const env = args.environment;
      const existing = await charges(env).where({ id: args.chargeId }).first('status');
      // A retry after this activity committed its outcome (the worker died before reporting it): answer
      // with what was recorded instead of calling the processor again.
      if (existing && existing.status !== 'CREATED') return recordedAttempt(args);
      const payment = await payments(env).where({ id: args.paymentId }).first();
      const { providerConfig, credentials, adapter: provider } = await providerFor(env, args.candidate.providerConfigId);
      if (!existing) {
        await db.transaction(async (trx) => {
          await charges(env, trx).insert({
            id: args.chargeId,
            payment_id: args.paymentId,
            payment_method_id: args.paymentMethodId,
            customer_id: payment.customer_id,
            account_id: args.accountId,
            status: 'CREATED',
            amount: payment.amount,
            currency: payment.currency,
            installments: payment.installments,
            attempt_no: args.attemptNo,
            routing_plan_id: args.routingPlanId,
            payment_provider_id: args.candidate.providerId,
            payment_provider_config_id: args.candidate.providerConfigId,
            payment_provider_method_id: args.candidate.methodId,
            security: JSON.stringify({ secure_mode: payment.secure_mode }),
            payment_provider_config_snapshot: JSON.stringify({
              id: providerConfig.id, name: providerConfig.name, payment_provider_id: providerConfig.payment_provider_id,
              provider: { name: providerConfig.provider_name, identifier: providerConfig.identifier },
              merchant_capabilities: providerConfig.merchant_capabilities ?? {},
            }),
          }).onConflict('id').ignore();
          await trx(envTable(env, 'routing_plans')).where({ id: args.routingPlanId }).update({ current_index: args.attemptNo - 1, updated_at: now() });
        });
      }

      // Re-checked here, against the payment's account and customer in Postgres: an attempt told a card
      // of another account, another customer or another payment (a forged workflow start, say), or one
      // deleted or used up meanwhile, declines without anything sent to the processor.
      const card = await loadCardForAuthorization(db, vault, env, cardUse(args, payment));
      if (!card) {
        return applyOutcome(args, { kind: 'hard_decline', declineCode: PAYMENT_METHOD_UNAVAILABLE, message: 'The payment method cannot be used for this payment.' }, []);
      }
      const authorization = await withHeartbeat(provider.authorize({
        credentials,
        idempotencyKey: args.chargeId,
        amount: Number(payment.amount),
        currency: payment.currency,
        installments: payment.installments,
        card: { number: card.number, exp_month: card.expMonth, exp_year: card.expYear, cvc: card.cvc ?? undefined, holder_name: card.holderName ?? undefined },
        metadata: { payment_id: args.paymentId, account_id: args.accountId },
      }));
      await wipeCvc(db, env, args.paymentMethodId);
      const exchanges = [authorization.exchange];
      let captured: ProviderOutcome | undefined;
      if (authorization.outcome.kind === 'approved' && args.capture) {
        const capture = await captureAfterApproval(args, authorization.outcome.providerReference, credentials, providerConfig.identifier);
        exchanges.push(capture.exchange);
        captured = capture.outcome;
      }
      return applyOutcome(args, authorization.outcome, exchanges, captured);
    },

    /**
     * Asks the provider what became of a charge whose authorize got no answer, by its idempotency key.
     * `not_found` is conclusive only once the original call can no longer arrive; then the charge is
     * treated as never made (a transport error), which is the one case where cascading is safe.
     */
    async reconcileCharge(args: AttemptArgs): Promise<ReconcileResult> {
      const env = args.environment;
      const charge = await charges(env).where({ id: args.chargeId }).first();
      if (charge.status !== 'UNKNOWN') return { ...(await recordedAttempt(args)), pending: false };
      const { providerConfig, credentials, adapter: provider } = await providerFor(env, args.candidate.providerConfigId);
      const status = await withHeartbeat(provider.getStatus({ credentials, idempotencyKey: args.chargeId }));
      if (status.lookup === 'failed') {
        await charges(env).where({ id: args.chargeId }).update({ exchanges: db.raw('exchanges || ?::jsonb', [JSON.stringify([status.exchange])]), updated_at: now() });
        return { outcome: 'unknown', paymentStatus: 'PROCESSING', eventIds: [], pending: true };
      }
      if (status.lookup === 'not_found') {
        const since = Date.parse(charge.details?.unknown_since ?? charge.updated_at);
        const settled = Date.now() - since > 2 * config.providerTimeoutMs;
        if (!settled) return { outcome: 'unknown', paymentStatus: 'PROCESSING', eventIds: [], pending: true };
        const result = await applyOutcome(args, { kind: 'transport_error', error: 'the provider has no record of the charge' }, [status.exchange]);
        return { ...result, pending: false };
      }
      const exchanges = [status.exchange];
      let captured: ProviderOutcome | undefined;
      if (status.outcome.kind === 'approved' && args.capture) {
        const capture = await captureAfterApproval(args, status.outcome.providerReference, credentials, providerConfig.identifier);
        exchanges.push(capture.exchange);
        captured = capture.outcome;
      }
      const result = await applyOutcome(args, status.outcome, exchanges, captured);
      return { ...result, pending: false };
    },

    /** Manual capture of an AUTHORIZED payment (partial allowed); the rest of the authorization is released. */
    async captureCharge(args: PaymentRef & { chargeId: string; amount: number; context: RequestContext }): Promise<{ paymentStatus: PaymentStatus; capturedAmount: number; eventIds: string[] }> {
      const env = args.environment;
      const charge = await charges(env).where({ id: args.chargeId }).first();
      if (charge.status === 'CAPTURED') {
        return { paymentStatus: 'SUCCEEDED', capturedAmount: Number(charge.captured_amount), eventIds: [] };
      }
      const { credentials, adapter: provider } = await providerFor(env, charge.payment_provider_config_id);
      const result = await withHeartbeat(provider.capture({ credentials, idempotencyKey: `${args.chargeId}:capture`, providerReference: charge.provider_reference, amount: args.amount }));
      if (result.outcome.kind === 'transport_error' || result.outcome.kind === 'unknown') {
        throw ApplicationFailure.retryable(`capture not confirmed: ${result.outcome.error}`, 'capture_pending');
      }
      if (result.outcome.kind !== 'approved') {
        await charges(env).where({ id: args.chargeId }).update({ exchanges: db.raw('exchanges || ?::jsonb', [JSON.stringify([result.exchange])]), updated_at: now() });
        throw ApplicationFailure.nonRetryable(`the provider refused the capture: ${result.outcome.declineCode}`, 'capture_declined');
      }
      const capturedAmount = result.outcome.capturedAmount;
      return db.transaction(async (trx) => {
        const [updated] = await charges(env, trx).where({ id: args.chargeId }).update({
          status: 'CAPTURED', captured_amount: capturedAmount,
          exchanges: trx.raw('exchanges || ?::jsonb', [JSON.stringify([result.exchange])]), updated_at: now(),
        }).returning('*');
        const payment = await updatePayment(trx, args, { status: 'SUCCEEDED', amount_capturable: 0, amount_received: capturedAmount });
        await eraseSingleUseCards(trx, env, args.paymentId);
        const eventIds = await idsToPublish(trx, env, args.accountId, await appendEvents(trx, env, [
          chargeEvent(args, 'charge.succeeded', updated, args.context),
          paymentEvent(args, 'payment_intent.succeeded', payment, args.context, { chargeId: args.chargeId }),
        ]));
        return { paymentStatus: 'SUCCEEDED' as const, capturedAmount, eventIds };
      });
    },

    /** Cancels a payment; an AUTHORIZED one has its authorization voided at the provider first. */
    async cancelPayment(args: PaymentRef & { chargeId?: string; reason: string; context: RequestContext }): Promise<{ eventIds: string[] }> {
      const env = args.environment;
      let voidExchange: ProviderExchange | undefined;
      if (args.chargeId) {
        const charge = await charges(env).where({ id: args.chargeId }).first();
        if (charge.status === 'AUTHORIZED') {
          const { credentials, adapter: provider } = await providerFor(env, charge.payment_provider_config_id);
          const result = await withHeartbeat(provider.void({ credentials, idempotencyKey: `${args.chargeId}:void`, providerReference: charge.provider_reference }));
          if (result.outcome.kind === 'transport_error' || result.outcome.kind === 'unknown') {
            throw ApplicationFailure.retryable(`void not confirmed: ${result.outcome.error}`, 'void_pending');
          }
          voidExchange = result.exchange;
        }
      }
      return db.transaction(async (trx) => {
        const current = await payments(env, trx).where({ id: args.paymentId }).forUpdate().first('status');
        // Canceled (or expired): no card bound to the payment will ever be charged.
        await eraseSingleUseCards(trx, env, args.paymentId);
        if (current.status === 'CANCELED') return { eventIds: [] };
        if (args.chargeId && voidExchange) {
          await charges(env, trx).where({ id: args.chargeId }).update({
            status: 'VOIDED', exchanges: trx.raw('exchanges || ?::jsonb', [JSON.stringify([voidExchange])]), updated_at: now(),
          });
        }
        const payment = await updatePayment(trx, args, { status: 'CANCELED', amount_capturable: 0, cancellation_reason: args.reason });
        const eventIds = await appendEvents(trx, env, [paymentEvent(args, 'payment_intent.canceled', payment, args.context)]);
        return { eventIds: await idsToPublish(trx, env, args.accountId, eventIds) };
      });
    },
  };

}
