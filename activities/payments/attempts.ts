import { ApplicationFailure } from '@temporalio/activity';
import type { Knex } from 'knex';
import { setRoutingPlanIndex } from '../../db/routing-plans';
import { cardForAuthorization, loadCardForAuthorization, wipeCvc } from '../../db/payment-methods';
import {
  chargeInsertWithPayment, findCharge, findPayment, insertCharge, newChargeRow, updateCharge, type ChargeRow, type NewCharge, type PaymentRow,
} from '../../db/payments';
import type { NamedAlongside } from '../../db/knex';
import {
  firstAttemptOf, PAYMENT_ACTIVITY_FAILURES, type AttemptArgs, type AttemptResult, type PaymentActivities, type ReconcileArgs,
  type ReconcileResult,
} from '../../contracts/payments';
import type { ProviderEventSignal } from '../../contracts/temporal';
import { notificationExchange } from '../providers/exchange';
import { withHeartbeat } from '../heartbeat';
import { openProvider, type OpenProvider } from '../providers/open';
import type { Approved, ExternalAuthentication, OperationOutput, ProviderAdapter, ProviderOutcome, RecurringAuthorization, ThreeDSecureRequest } from '../providers/types';
import { authenticationReturnUrl, providerWebhookUrl } from '../../lib/public-urls';
import type { PaymentActivityDeps } from './deps';
import { applyOutcome, PAYMENT_METHOD_UNAVAILABLE, recordedAttempt } from './outcomes';
import { notificationTarget, verifiedNotification } from './notifications';
import { cardUse, type CreateAndPlan, type Written } from './records';
import { MissingRowError } from '../../lib/data-errors';

/**
 * What an attempt tells the processor of its stored-credential use. A merchant-initiated one references
 * the card's anchoring network transaction id. Its step-up (3-D Secure asked for after the issuer's
 * `authentication_required`) brings the customer back to authenticate: that retry is customer-initiated.
 */
export function recurringOf(args: Pick<AttemptArgs, 'recurring' | 'threeDSecure'>, networkTransactionId: string | null): RecurringAuthorization | undefined {
  const recurring = args.recurring;
  if (!recurring) return undefined;
  if (recurring.initiator === 'customer' || args.threeDSecure?.requested) return { model: recurring.model, initiator: 'customer' };
  return { model: recurring.model, initiator: 'merchant', ...(networkTransactionId ? { networkTransactionId } : {}) };
}

/** Captures an approved authorization right away (auto_capture), idempotently under `<charge>:capture`. */
async function captureAfterApproval(args: AttemptArgs, approved: Approved, provider: OpenProvider, currency: string): Promise<OperationOutput> {
  const result = await withHeartbeat(provider.adapter.capture({
    credentials: provider.credentials, idempotencyKey: `${args.chargeId}:capture`, providerReference: approved.providerReference,
    amount: approved.authorizedAmount, currency,
  }));
  if (result.outcome.kind === 'transport_error' || result.outcome.kind === 'unknown') {
    // The authorization stands; the capture will be retried by the activity with the same key.
    throw ApplicationFailure.retryable(`capture not confirmed: ${result.outcome.error}`, PAYMENT_ACTIVITY_FAILURES.capturePending);
  }
  return result;
}

/** What the provider said, and the capture that follows an approval when the payment captures at once. */
export async function withAutoCapture(args: AttemptArgs, operation: { outcome: ProviderOutcome; exchange: OperationOutput['exchange'] }, provider: OpenProvider, currency: string) {
  const exchanges = [operation.exchange];
  let captured: ProviderOutcome | undefined;
  // A provider that captured with the authorization (capture_method automatic) needs no second call.
  const capturedAlready = operation.outcome.kind === 'approved' && operation.outcome.capturedAmount > 0
    && operation.outcome.capturedAmount >= operation.outcome.authorizedAmount;
  if (capturedAlready) captured = operation.outcome;
  else if (operation.outcome.kind === 'approved' && args.capture) {
    const capture = await captureAfterApproval(args, operation.outcome, provider, currency);
    exchanges.push(capture.exchange);
    captured = capture.outcome;
  }
  return { exchanges, captured };
}

/**
 * An approval captured with the authorization, at a processor that may still report that capture failed
 * (the adapter's captureFailureWindowMs): the window goes with the result, for the workflow to listen that long.
 */
export function withCaptureFailureWindow<T extends AttemptResult>(result: T, adapter: Pick<ProviderAdapter, 'captureFailureWindowMs'>): T {
  const windowMs = adapter.captureFailureWindowMs;
  return windowMs && result.outcome === 'approved' && result.paymentStatus === 'SUCCEEDED' ? { ...result, captureFailureWindowMs: windowMs } : result;
}

/**
 * An authorization as its notification reports it. A processor that captures by itself when asked to
 * capture at once (Adyen) reports the approval uncaptured; it is captured all the same.
 */
export function notifiedAuthorization(args: AttemptArgs, notification: ProviderEventSignal, provider: OpenProvider): OperationOutput {
  const { outcome } = notification;
  const capturedBySelf = outcome.kind === 'approved' && args.capture && provider.adapter.capturesWithAuthorization;
  return {
    outcome: capturedBySelf ? { ...outcome, capturedAmount: outcome.authorizedAmount } : outcome,
    exchange: notificationExchange(notification, args.chargeId),
  };
}

/**
 * A create that carries a confirm: the row, its plan and the plan's first
 * charge (one statement), then the first attempt, in one local activity — the workflow takes one
 * activation and one local activity fewer per payment. Idempotent as its parts are: a retry finds the row
 * and the plan, and the charge row (answered from it once recorded, else sent again under the same
 * idempotency key). An attempt that fails for good (its provider config deleted meanwhile) is left out of
 * the answer: the walk makes it again as its own activity, and ends as it always did on such a failure.
 */
export function firstAttemptWithRow(createAndPlan: CreateAndPlan, authorize: Authorize, prepare: PrepareCharge): PaymentActivities['createPaymentPlanAndAuthorize'] {
  return async ({ attempt, ...args }) => {
    let first: FirstCharge | undefined;
    const { plan, written } = await createAndPlan(args, async (planned, row) => {
      const candidate = planned.candidates[0];
      if (!candidate) return [];
      try {
        const prepared = await prepare(firstAttemptOf(attempt, planned, candidate), row);
        first = prepared.first;
        return [prepared.insert];
      } catch (err) {
        // Its config is gone: the row and plan go in without the charge, and the attempt fails below.
        if (err instanceof ApplicationFailure && err.nonRetryable) return [];
        throw err;
      }
    });
    const candidate = plan.candidates[0];
    if (!candidate) return plan;
    try {
      // The charge went in with the row only when the row did (`written`): a retry's is read.
      return { ...plan, first: await authorize(firstAttemptOf(attempt, plan, candidate), written && { ...written, first }) };
    } catch (err) {
      if (err instanceof ApplicationFailure && err.nonRetryable) return plan;
      throw err;
    }
  };
}

/** A first attempt's provider, opened, and its charge as written with the payment's row. */
export interface FirstCharge { provider: OpenProvider; charge: ChargeRow }

/** Opens an attempt's provider and builds its charge's insert, to run with the payment's (chargeInsertWithPayment). */
export type PrepareCharge = (args: AttemptArgs, payment: PaymentRow) => Promise<{ first: FirstCharge; insert: NamedAlongside }>;

/**
 * One attempt; `written` is what the same activity just wrote and found with the plan (the payment row
 * as it left it, the card it checked against that row, and the attempt's charge with its provider when
 * it went in with the row): then no charge of the payment can exist but that one, and none of them is
 * read again.
 */
export type Authorize = (args: AttemptArgs, written?: Written & { first?: FirstCharge }) => Promise<AttemptResult>;

/** An attempt's charge row, before it is written. */
function newCharge(args: AttemptArgs, payment: PaymentRow, provider: OpenProvider): NewCharge {
  return {
    id: args.chargeId,
    payment_id: args.paymentId,
    payment_method_id: args.paymentMethodId,
    customer_id: payment.customer_id,
    account_id: args.accountId,
    amount: payment.amount,
    currency: payment.currency,
    installments: payment.installments,
    attempt_no: args.attemptNo,
    routing_plan_id: args.routingPlanId,
    payment_provider_id: args.candidate.providerId,
    payment_provider_config_id: args.candidate.providerConfigId,
    payment_provider_method_id: args.candidate.methodId,
    security: { secure_mode: payment.secure_mode },
    payment_provider_config_snapshot: {
      id: provider.config.id, name: provider.config.name, payment_provider_id: provider.config.payment_provider_id,
      provider: { name: provider.provider.name, identifier: provider.provider.identifier },
      merchant_capabilities: provider.config.merchant_capabilities ?? {},
    },
  };
}

/** The attempt activities: a charge at the provider, and the reconciliation of one whose outcome is unknown. */
export function attemptActivities(deps: PaymentActivityDeps): Pick<PaymentActivities, 'authorizeCharge' | 'reconcileCharge'> & { authorize: Authorize; prepareCharge: PrepareCharge } {
  const { db, vault } = deps;

  /** The outcome an earlier try recorded, with the capture-failure window its provider gives a captured one. */
  async function recorded(args: AttemptArgs): Promise<AttemptResult> {
    const result = await recordedAttempt(db, args);
    if (result.outcome !== 'approved' || result.paymentStatus !== 'SUCCEEDED') return result;
    return withCaptureFailureWindow(result, (await openProvider(deps, args.environment, args.candidate.providerConfigId)).adapter);
  }

  /** What the attempt asks of 3-D Secure: a challenge (step-up), and an earlier charge's authentication passed on. */
  async function threeDSecureOf(args: AttemptArgs): Promise<ThreeDSecureRequest | undefined> {
    const asked = args.threeDSecure;
    if (!asked) return undefined;
    const earlier = asked.authenticatedBy ? await findCharge(db, args.environment, asked.authenticatedBy) : undefined;
    // Only this payment's own charge: an earlier authentication never travels to another payment.
    const sealed = earlier?.payment_id === args.paymentId ? earlier.authentication_sealed : null;
    const external = sealed ? vault.decryptJson<ExternalAuthentication>(sealed) : undefined;
    return { ...(asked.requested ? { requested: true } : {}), ...(external ? { external } : {}) };
  }

  /**
   * One attempt: the charge row, then the provider's authorize with the charge id as idempotency key
   * (so a retry of this activity, after a crash anywhere, can never charge twice), then the outcome.
   */
  const authorize: Authorize = async (args, written) => {
    const env = args.environment;
    const [existing, payment] = written ? [undefined, written.payment] : await Promise.all([findCharge(db, env, args.chargeId), findPayment(db, env, args.paymentId)]);
    // A retry after this activity committed its outcome (the worker died before reporting it): answer
    // with what was recorded instead of calling the processor again.
    if (existing && existing.status !== 'CREATED') return recorded(args);
    // The workflow writes the row before any attempt and only then schedules one: a missing row was deleted.
    if (!payment) throw new MissingRowError('payment', args.paymentId);
    const provider = written?.first?.provider ?? await openProvider(deps, env, args.candidate.providerConfigId);
    // The charge as this attempt writes it (undefined when an earlier try wrote it): its outcome is
    // recorded from it without reading it again.
    let charge: ChargeRow | undefined = written?.first?.charge;
    if (!existing && !charge) {
      // A plan starts at its first candidate: only a later one moves its index (with the charge, atomically).
      const index = args.candidateIndex ?? args.attemptNo - 1;
      const write = async (q: Knex) => {
        charge = await insertCharge(q, env, newCharge(args, payment, provider));
        if (index > 0) await setRoutingPlanIndex(q, env, args.routingPlanId, index);
      };
      await (index > 0 ? db.transaction(write) : write(db));
    }

    // Re-checked here, against the payment's account and customer in Postgres: an attempt told a card
    // of another account, another customer or another payment (a forged workflow start, say), or one
    // deleted or used up meanwhile, declines without anything sent to the processor. Made with the row,
    // the check its plan made a moment ago in this same activity, against the row it wrote, stands.
    const card = written?.card ? cardForAuthorization(vault, written.card) : await loadCardForAuthorization(db, vault, env, cardUse(args, payment));
    if (!card) {
      return applyOutcome(db, args, { kind: 'hard_decline', declineCode: PAYMENT_METHOD_UNAVAILABLE, message: 'The payment method cannot be used for this payment.' }, [], { written: charge, payment });
    }
    const threeDSecure = await threeDSecureOf(args);
    const recurring = recurringOf(args, card.networkTransactionId);
    // Off-session, the customer is absent: no CVC goes, whatever the card holds (a saved one keeps none).
    const cvc = recurring?.initiator === 'merchant' ? undefined : card.cvc ?? undefined;
    const authorization = await withHeartbeat(provider.adapter.authorize({
      credentials: provider.credentials,
      idempotencyKey: args.chargeId,
      amount: Number(payment.amount),
      currency: payment.currency,
      installments: payment.installments,
      card: { number: card.number, exp_month: card.expMonth, exp_year: card.expYear, cvc, holder_name: card.holderName ?? undefined },
      metadata: { payment_id: args.paymentId, account_id: args.accountId },
      capture: args.capture,
      returnUrl: authenticationReturnUrl(deps.config.publicUrl, args.paymentId, args.chargeId),
      notificationUrl: providerWebhookUrl(deps.config.publicUrl, args.candidate.providerConfigId),
      ...(threeDSecure ? { threeDSecure } : {}),
      ...(recurring ? { recurring } : {}),
    }));
    // Sent once, never kept: the CVC goes as soon as the processor has answered, in the statement that
    // records its answer (a saved card has none left) — or on its own if that is not reached now.
    let auto: Awaited<ReturnType<typeof withAutoCapture>>;
    try {
      auto = await withAutoCapture(args, authorization, provider, payment.currency);
    } catch (err) {
      if (card.cvc) await wipeCvc(db, env, args.paymentMethodId);
      throw err;
    }
    return withCaptureFailureWindow(await applyOutcome(db, args, authorization.outcome, auto.exchanges, {
      captured: auto.captured, cardNetwork: card.network, written: charge, payment, wipeCvc: !!card.cvc,
    }), provider.adapter);
  };

  return {
    authorize,
    async prepareCharge(args, payment) {
      const provider = await openProvider(deps, args.environment, args.candidate.providerConfigId);
      // Its timestamps its payment's, written in the same statement.
      const charge = newChargeRow(newCharge(args, payment, provider), payment.created_at);
      return { first: { provider, charge }, insert: ['first_charge', chargeInsertWithPayment(db, args.environment, charge)] };
    },
    authorizeCharge: (args: AttemptArgs) => authorize(args),

    /**
     * Settles a charge whose authorize got no answer. The processor's notification, when one came, is
     * the final word. Otherwise the provider is asked by the idempotency key: `not_found` is conclusive
     * only once the original call can no longer arrive; then the charge is treated as never made (a
     * transport error), which is the one case where cascading is safe.
     */
    async reconcileCharge({ notification, ...args }: ReconcileArgs): Promise<ReconcileResult> {
      const env = args.environment;
      const charge = await findCharge(db, env, args.chargeId);
      if (!charge) throw new MissingRowError('charge', args.chargeId);
      if (charge.status !== 'UNKNOWN') return { ...(await recorded(args)), pending: false };
      const provider = await openProvider(deps, env, args.candidate.providerConfigId);
      // A signal without a stored event behind it is ignored: the processor is asked, as when none came.
      const stored = notification && await verifiedNotification(db, env, notification, notificationTarget('authorize', charge));
      if (stored) {
        const notified = notifiedAuthorization(args, stored, provider);
        const { exchanges, captured } = await withAutoCapture(args, notified, provider, charge.currency);
        return { ...withCaptureFailureWindow(await applyOutcome(db, args, notified.outcome, exchanges, { captured }), provider.adapter), pending: false };
      }
      const status = await withHeartbeat(provider.adapter.getStatus({ credentials: provider.credentials, idempotencyKey: args.chargeId }));
      if (status.lookup === 'failed') {
        await updateCharge(db, env, args.chargeId, { exchanges: [status.exchange] });
        return { outcome: 'unknown', paymentStatus: 'PROCESSING', pending: true };
      }
      if (status.lookup === 'not_found') {
        const since = charge.details?.unknown_since ? Date.parse(charge.details.unknown_since) : charge.updated_at.getTime();
        const settled = Date.now() - since > Math.max(2 * deps.config.providerTimeoutMs, provider.adapter.notFoundSettleMs ?? 0);
        if (!settled) return { outcome: 'unknown', paymentStatus: 'PROCESSING', pending: true };
        const result = await applyOutcome(db, args, { kind: 'transport_error', error: 'the provider has no record of the charge' }, [status.exchange]);
        return { ...result, pending: false };
      }
      const { exchanges, captured } = await withAutoCapture(args, status, provider, charge.currency);
      const result = await applyOutcome(db, args, status.outcome, exchanges, { captured });
      return { ...withCaptureFailureWindow(result, provider.adapter), pending: false };
    },
  };
}
