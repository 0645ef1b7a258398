import type { Knex } from 'knex';
import { paymentTransitions } from '../metrics';
import { EventRecord } from '../../db/events';
import { cardDisplay } from '../../db/payment-methods';
import type { Environment } from '../../db/environments';
import { ChargePatch, ChargeRow, ChargeState, findCharge, findPayment, NextAction, PaymentPatch, type PaymentRow } from '../../db/payments';
import { recordOutcomeAtOnce, recordOutcomeInTransaction, type OutcomeWrites } from '../../db/payment-outcomes';
import type { HealthSample } from '../../db/provider-health';
import type { AttemptArgs, AttemptOutcome, AttemptResult, PaymentStatus } from '../../contracts/payments';
import { nextStep, walkGoesOn, type DeclineRow, type NextStep } from '../../lib/payments/cascade';
import { declineRowOf } from '../../lib/providers/decline-rows';
import type { ProviderExchange, ProviderOutcome } from '../providers/types';
import { chargeEvent, paymentEvent } from './events';
import { MissingRowError } from '../../lib/data-errors';

/** The decline recorded when an attempt is told a card its payment may not use (or one used up meanwhile). */
export const PAYMENT_METHOD_UNAVAILABLE = 'payment_method_unavailable';

/** A charge's recorded status as the outcome of its attempt (FAILED is told apart by its decline code). */
const RECORDED_OUTCOME: Partial<Record<ChargeRow['status'], AttemptOutcome>> = {
  AUTHORIZED: 'approved', CAPTURED: 'approved', VOIDED: 'approved', PARTIALLY_REFUNDED: 'approved', REFUNDED: 'approved',
  DECLINED: 'hard_decline', UNKNOWN: 'unknown', REQUIRES_ACTION: 'requires_action',
};

/** The statuses an attempt's outcome can end a walk in. */
const WALK_ENDS: readonly PaymentStatus[] = ['FAILED', 'AUTHORIZED', 'SUCCEEDED'];

/** Declines about the customer's authentication: the payment's last_error says so itself, not `card_declined`. */
const AUTHENTICATION_CODES = new Set(['authentication_failed', 'authentication_timeout']);

/** What an outcome means for the charge, the payment and their events (no I/O: decided first, written after). */
interface Transition {
  charge: ChargePatch;
  payment?: PaymentPatch;
  paymentStatus: PaymentStatus;
  chargeEvent?: string;
  paymentEvent?: string;
}

/** A decline's row in the adapter's table (the cascade's columns); none for other outcomes. */
function declineOf(outcome: ProviderOutcome): DeclineRow | undefined {
  if (outcome.kind === 'soft_decline') return declineRowOf(outcome.declineCode, 'soft');
  if (outcome.kind === 'hard_decline') return declineRowOf(outcome.declineCode, 'hard');
  return undefined;
}

/** What the walk does after this outcome (lib/payments/cascade.ts): the workflow asks the same question of the result. */
function cascadeOf(args: AttemptArgs, outcome: ProviderOutcome): NextStep {
  const kind = outcome.kind === 'pending' ? 'unknown' : outcome.kind;
  return nextStep({ outcome: kind, decline: declineOf(outcome), lastCandidate: args.lastCandidate, stepUpAsked: args.threeDSecure?.requested === true });
}

function transition(args: AttemptArgs, outcome: ProviderOutcome, current: ChargeState, captured?: ProviderOutcome): Transition {
  switch (outcome.kind) {
    case 'approved': {
      const capturedOutcome = captured?.kind === 'approved' ? captured : undefined;
      const charge: ChargePatch = {
        status: capturedOutcome ? 'CAPTURED' : 'AUTHORIZED',
        authorized_amount: outcome.authorizedAmount,
        captured_amount: capturedOutcome ? capturedOutcome.capturedAmount : 0,
        provider_reference: outcome.providerReference,
        decline_code: null,
      };
      return capturedOutcome
        ? {
            charge, paymentStatus: 'SUCCEEDED', chargeEvent: 'charge.succeeded', paymentEvent: 'payment_intent.succeeded',
            payment: { status: 'SUCCEEDED', amount_capturable: 0, amount_received: capturedOutcome.capturedAmount, last_error: null },
          }
        : {
            charge, paymentStatus: 'AUTHORIZED', paymentEvent: 'payment_intent.amount_capturable_updated',
            payment: { status: 'AUTHORIZED', amount_capturable: outcome.authorizedAmount, last_error: null },
          };
    }
    case 'hard_decline':
      return {
        charge: { status: 'DECLINED', decline_code: outcome.declineCode },
        paymentStatus: 'FAILED',
        payment: {
          status: 'FAILED',
          failedConfirmation: true,
          last_error: {
            code: outcome.declineCode === PAYMENT_METHOD_UNAVAILABLE || AUTHENTICATION_CODES.has(outcome.declineCode) ? outcome.declineCode : 'card_declined',
            decline_code: outcome.declineCode, charge_id: args.chargeId, message: outcome.message ?? null,
          },
        },
        chargeEvent: 'charge.failed',
        paymentEvent: 'payment_intent.payment_failed',
      };
    case 'soft_decline':
    case 'transport_error': {
      const code = outcome.kind === 'soft_decline' ? outcome.declineCode : 'provider_unavailable';
      const charge: ChargePatch = { status: 'FAILED', decline_code: code };
      // Another candidate follows (or the same one again, with 3-D Secure: a step-up): the payment stays
      // PROCESSING and only the charge failed.
      const step = cascadeOf(args, outcome);
      if (walkGoesOn(step)) return { charge, paymentStatus: 'PROCESSING', chargeEvent: 'charge.failed' };
      const reason = step.kind === 'stop' && step.because === 'declined' ? 'card_declined' : 'all_providers_failed';
      return {
        charge, paymentStatus: 'FAILED', chargeEvent: 'charge.failed', paymentEvent: 'payment_intent.payment_failed',
        payment: { status: 'FAILED', failedConfirmation: true, last_error: { code: reason, decline_code: code, charge_id: args.chargeId } },
      };
    }
    case 'requires_action': {
      const nextAction: NextAction = {
        type: 'redirect_to_url',
        redirect_to_url: { url: outcome.redirectUrl, return_url: args.returnUrl ?? null },
        since: new Date().toISOString(),
        charge_id: args.chargeId,
      };
      return {
        charge: { status: 'REQUIRES_ACTION', provider_reference: outcome.providerReference, decline_code: null },
        paymentStatus: 'REQUIRES_ACTION',
        payment: { status: 'REQUIRES_ACTION', next_action: nextAction, last_error: null },
        paymentEvent: 'payment_intent.requires_action',
      };
    }
    // An authorization never pends; were one to, it is reconciled like an unknown outcome.
    case 'pending':
    case 'unknown':
      return {
        charge: {
          status: 'UNKNOWN',
          details: { ...(current.details ?? {}), unknown_since: current.details?.unknown_since ?? new Date().toISOString(), unknown_reason: outcome.kind === 'unknown' ? outcome.error : 'pending at the provider' },
        },
        paymentStatus: 'PROCESSING',
      };
  }
}

/** How long the authorize call took, if this outcome came from one (a processor's notification is no call). */
function authorizeLatency(exchanges: ProviderExchange[]): number | null {
  const call = exchanges.find((e) => e.operation === 'authorize' && e.request.method !== 'NOTIFICATION');
  return call ? call.duration_ms : null;
}

/**
 * The outcome as its provider config's health counts it (db/provider-health.ts), to record in the
 * transaction that records the outcome (none when there is nothing to count): it is counted exactly once,
 * since a retry after the commit answers from the record (`recordedAttempt`) without coming here. The
 * charge's first outcome is its attempt; a later one (an unknown reconciled, an authentication completed)
 * adds its class only.
 */
async function healthSample(
  db: Knex, env: Environment, charge: ChargeState, outcome: ProviderOutcome, exchanges: ProviderExchange[], cardNetwork?: string,
): Promise<HealthSample | undefined> {
  // Refused before any call: nothing happened at the provider.
  if (outcome.kind === 'hard_decline' && outcome.declineCode === PAYMENT_METHOD_UNAVAILABLE) return undefined;
  if (!charge.payment_provider_config_id) return undefined;
  const card = cardNetwork !== undefined || !charge.payment_method_id ? undefined : await cardDisplay(db, env, charge.account_id, charge.payment_method_id);
  return {
    providerConfigId: charge.payment_provider_config_id,
    accountId: charge.account_id,
    at: new Date(),
    cardNetwork: cardNetwork ?? card?.card_network ?? '',
    currency: charge.currency,
    attempt: charge.status === 'CREATED',
    outcome: outcome.kind === 'pending' ? 'unknown' : outcome.kind,
    latencyMs: authorizeLatency(exchanges),
  };
}

/** The charge's side of a transition from `current`: its patch, with the exchanges and their time added. */
function chargePatch(next: Transition, current: ChargeState, exchanges: ProviderExchange[]): ChargePatch {
  const performance = current.performance ?? {};
  return {
    ...next.charge,
    exchanges,
    performance: {
      ...performance,
      duration: (performance.duration ?? 0) + exchanges.reduce((sum, e) => sum + e.duration_ms, 0),
      provider_calls: (performance.provider_calls ?? 0) + exchanges.length,
    },
  };
}

/**
 * The single-use cards a transition's walk is over with, to erase: the card it used is never charged
 * again (capture, void and refunds need only the provider's reference). A FAILED payment may be confirmed
 * again, with another card, so only this walk's card goes; from AUTHORIZED or SUCCEEDED no confirm can
 * follow, so every card bound to the payment goes. Only once the walk is over: a payment waiting for the
 * customer, or going on to the next candidate after an authentication, may still need the card.
 */
function walkEndErasure(args: AttemptArgs, next: Transition): { paymentId: string; paymentMethodId?: string } | undefined {
  if (!next.payment || !WALK_ENDS.includes(next.paymentStatus)) return undefined;
  return { paymentId: args.paymentId, ...(next.paymentStatus === 'FAILED' ? { paymentMethodId: args.paymentMethodId } : {}) };
}

/** A transition's events, showing the charge and (when it changed) the payment as it leaves them. */
function outcomeEvents(args: AttemptArgs, next: Transition, charge: ChargeRow, payment: PaymentRow | undefined): EventRecord[] {
  const events: EventRecord[] = [];
  if (next.chargeEvent) events.push(chargeEvent(args, next.chargeEvent, charge, args.context));
  if (payment && next.paymentEvent) {
    events.push(paymentEvent(args, next.paymentEvent, payment, args.context, { chargeId: charge.id, routingPlanId: args.routingPlanId }));
  }
  return events;
}

/** What the attempt answers the workflow once its outcome is recorded, with the decline's row for the walk's cascade. */
function attemptResult(outcome: ProviderOutcome, paymentStatus: PaymentStatus): AttemptResult {
  const decline = declineOf(outcome);
  return {
    outcome: outcome.kind === 'pending' ? 'unknown' : outcome.kind,
    declineCode: 'declineCode' in outcome ? outcome.declineCode : undefined,
    paymentStatus,
    ...(decline ? { decline } : {}),
  };
}

/** What else applyOutcome is given about the outcome it records. */
export interface RecordOptions {
  /** The capture that followed an approval (a payment that captures at once). */
  captured?: ProviderOutcome;
  /** The charged card's network, when the caller has the card at hand (else read for the health count). */
  cardNetwork?: string;
  /**
   * The charge as the caller's attempt just wrote it (CREATED): the transition is computed from it and
   * the charge updated only while it is still CREATED, without locking and reading it first; when an
   * outcome was recorded meanwhile (a retry of the same attempt beside it), the charge is locked and the
   * transition computed from it, as without.
   */
  written?: ChargeRow;
  /**
   * The payment's row as the caller's attempt read or wrote it: with `written`, the whole outcome is one
   * statement while both rows are still as the attempt knows them (recordOutcomeAtOnce, db/payment-outcomes.ts).
   */
  payment?: PaymentRow;
  /** The card's CVC goes with the outcome (it was sent with this attempt's authorize). */
  wipeCvc?: boolean;
}

/** What recording `outcome` writes, decided from the charge it starts from (db/payment-outcomes.ts writes it). */
interface DecidedWrites extends OutcomeWrites {
  next: Transition;
}

function decideWrites(args: AttemptArgs, outcome: ProviderOutcome, exchanges: ProviderExchange[], options: RecordOptions, current: ChargeState): DecidedWrites {
  const next = transition(args, outcome, current, options.captured);
  // The customer's step is over: the payment no longer shows it (and waits for nothing while the walk goes on).
  if (current.status === 'REQUIRES_ACTION' && outcome.kind !== 'requires_action') {
    next.payment = { status: next.paymentStatus, ...(next.payment ?? {}), next_action: null };
  }
  const erase = walkEndErasure(args, next);
  // The approval's network transaction id: a saved card keeps its first (db/payment-methods.ts cardsUpdate).
  const networkTransactionId = outcome.kind === 'approved' ? outcome.networkTransactionId : undefined;
  return {
    next,
    charge: chargePatch(next, current, exchanges),
    ...(next.payment ? { payment: next.payment } : {}),
    ...(options.wipeCvc ? { wipeCvcOf: args.paymentMethodId } : {}),
    ...(erase ? { erase } : {}),
    ...(networkTransactionId ? { anchor: { paymentMethodId: args.paymentMethodId, networkTransactionId } } : {}),
    health: (db) => healthSample(db, args.environment, current, outcome, exchanges, options.cardNetwork),
    events: (charge, payment) => outcomeEvents(args, next, charge, payment),
  };
}

/**
 * Records what a provider said about a charge, and what it means for the payment: charge status,
 * amounts, exchanges and duration; payment status; the events; the provider config's health (by the
 * charged card's network). In one statement when the attempt knows both rows as written (`written`,
 * `payment`) and they still are; else in one transaction (db/payment-outcomes.ts: the same rows).
 */
export async function applyOutcome(
  db: Knex, args: AttemptArgs, outcome: ProviderOutcome, exchanges: ProviderExchange[], options: RecordOptions = {},
): Promise<AttemptResult> {
  const env = args.environment;
  const { written, payment } = options;
  const decide = (current: ChargeState) => decideWrites(args, outcome, exchanges, options, current);
  if (written && payment) {
    const writes = decide(written);
    if (await recordOutcomeAtOnce(db, env, args, { written, payment }, writes)) return counted(writes.next, attemptResult(outcome, writes.next.paymentStatus));
  }
  const writes = await recordOutcomeInTransaction(db, env, args, written, decide);
  // Counted once committed: a rolled-back attempt (retried by Temporal) changed nothing.
  return counted(writes.next, attemptResult(outcome, writes.next.paymentStatus));
}

/** `result`, the payment status its transition entered counted (paymentTransitions). */
function counted(next: Transition, result: AttemptResult): AttemptResult {
  if (next.payment?.status) paymentTransitions.inc({ status: next.payment.status });
  return result;
}

/**
 * The outcome already recorded for a charge, as the attempt that recorded it answered: for activity
 * retries after a commit whose completion never reached Temporal. Its events went out with the commit.
 */
export async function recordedAttempt(db: Knex, args: AttemptArgs): Promise<AttemptResult> {
  const env = args.environment;
  const charge = await findCharge(db, env, args.chargeId);
  const payment = await findPayment(db, env, args.paymentId);
  if (!charge) throw new MissingRowError('charge', args.chargeId);
  if (!payment) throw new MissingRowError('payment', args.paymentId);
  const outcome = RECORDED_OUTCOME[charge.status] ?? (charge.decline_code === 'provider_unavailable' ? 'transport_error' : 'soft_decline');
  const declineCode = charge.decline_code ?? undefined;
  const decision = outcome === 'hard_decline' ? 'hard' : outcome === 'soft_decline' ? 'soft' : undefined;
  return {
    outcome,
    declineCode,
    paymentStatus: payment.status,
    ...(declineCode && decision ? { decline: declineRowOf(declineCode, decision) } : {}),
  };
}
