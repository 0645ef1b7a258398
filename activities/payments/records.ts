import { ApplicationFailure } from '@temporalio/activity';
import type { Knex } from 'knex';
import { appendEvents, appendEventsOfWrite, type EventRecord } from '../../db/events';
import { customersByIds, type CustomerRow } from '../../db/customers';
import { cardsUpdate, findUsableCard, type CardUse, type PaymentMethodRow } from '../../db/payment-methods';
import { findPayment, newPaymentRow, PAYMENT_WRITTEN, paymentInsert, updatePayment, type NewPayment, type PaymentPatch, type PaymentRow } from '../../db/payments';
import { loadRoutingInputs, type RoutingInputs } from '../../db/providers';
import { findRoutingPlan, routingPlanInsert, routingPlanInsertWithPayment } from '../../db/routing-plans';
import { claimCommand, commandClaimWithPayment } from '../../db/payment-commands';
import { onlyIfFirstWrote, type NamedAlongside } from '../../db/knex';
import { buildRoutingPlan, type RoutingHints, type RoutingPlan, type RoutingPlanInput } from '../../lib/routing/plan';
import type { RoutingSettings } from '../../lib/routing/adaptive-contract';
import type { Environment } from '../../db/environments';
import { healthWindows } from '../../db/provider-health';
import type {
  CreateAndPlanArgs, PaymentActivities, PaymentInput, PaymentRef, PlanArgs, PlannedCandidate, PlanResult,
} from '../../contracts/payments';
import type { PaymentActivityDeps } from './deps';
import { paymentEvent } from './events';
import { PAYMENT_METHOD_UNAVAILABLE } from './outcomes';
import { MissingRowError } from '../../lib/data-errors';
import { withArticle } from '../../lib/errors';
import { allows, UNSEALED_COMMAND } from '../../contracts/payments';
import { commandSeals, currentRunId, refuseCommand } from './seals';

/**
 * Which card the payment `row` may be charged with: the one it was told, re-checked against the
 * payment's account and customer as Postgres has them (a workflow's input is not trusted for this).
 */
export function cardUse(args: PaymentRef & { paymentMethodId: string }, row: Pick<PaymentRow, 'account_id' | 'customer_id'> | undefined): CardUse {
  return {
    paymentMethodId: args.paymentMethodId,
    // A payment row of another account than the workflow's matches no card at all.
    accountId: row?.account_id === args.accountId ? args.accountId : '',
    paymentId: args.paymentId,
    customerId: row?.customer_id ?? null,
  };
}

/** A candidate as a stored plan's metadata keeps it (what the walk was given when the plan was made). */
function isPlannedCandidate(value: unknown): value is PlannedCandidate {
  return typeof value === 'object' && value !== null && 'providerConfigId' in value && 'providerId' in value && 'methodId' in value;
}

/**
 * The row, its plan and their events in one statement; `written` is what this call wrote and found
 * (absent when an earlier try wrote the row: its plan is then found, not made).
 */
export type CreateAndPlan = (args: CreateAndPlanArgs, withRow?: WithRow) => Promise<{ plan: PlanResult; written?: Written }>;

/**
 * Other stores' writes to go in with a create's row and its plan, made from them (the plan's first
 * charge): run in the same statement, and written only if the row is (db/knex.ts's insertIfFirstWrote).
 */
export type WithRow = (planned: Pick<PlanResult, 'routingPlanId' | 'candidates'>, row: PaymentRow) => Promise<NamedAlongside[]>;

/** What a create-and-plan wrote and found: the payment row as it left it, and the card it found usable for it. */
export interface Written { payment: PaymentRow; card: PaymentMethodRow | undefined }

/** A confirm's plan before it is stored: the card it may use (none: nothing is eligible) and the ranked candidates. */
interface Planned { card: PaymentMethodRow | undefined; hints: RoutingHints; routingPlan: RoutingPlan; planned: PlannedCandidate[] }

/** What a plan is made from, read together: the card the payment may use, its customer, the account's routing inputs. */
interface PlanFacts { card: PaymentMethodRow; customer: CustomerRow | undefined; inputs: RoutingInputs }

/** The facts of a payment its plan is made from (a row, or the row a create is about to write). */
type PlannedPayment = Pick<PaymentRow, 'account_id' | 'customer_id' | 'amount' | 'currency' | 'installments' | 'metadata' | 'routing'>;

/** The fields a confirm's plan sets on the payment. */
type PlanFields = 'status' | 'payment_method_id' | 'return_url' | 'next_action' | 'installments' | 'last_error';

/**
 * What a confirm's plan makes of the payment: PROCESSING, or FAILED when nothing can take it (a failed
 * confirmation, counted as one whose attempts all failed is).
 */
function plannedPatch(args: PlanArgs, payment: PlannedPayment, { card, planned }: Planned): Required<Pick<PaymentPatch, PlanFields>> & PaymentPatch {
  const failed = planned.length === 0;
  return {
    ...(failed ? { failedConfirmation: true as const } : {}),
    status: failed ? 'FAILED' : 'PROCESSING',
    payment_method_id: args.paymentMethodId,
    // Each confirm says where the customer goes after authenticating (or nowhere): never an earlier one's.
    return_url: args.returnUrl ?? null,
    next_action: null,
    installments: args.installments ?? payment.installments,
    last_error: !failed ? null : card
      ? { code: 'no_eligible_provider', message: 'No payment provider can take this payment.' }
      : { code: PAYMENT_METHOD_UNAVAILABLE, message: 'The payment method cannot be used for this payment.' },
  };
}

/**
 * Those fields as a payment only created has them: a create that carries a confirm writes its row once,
 * as the plan leaves it, and its `payment_intent.created` shows the row as a create alone writes it.
 */
function asCreated(payment: NewPayment): Pick<PaymentRow, PlanFields> {
  return { status: 'CREATED', payment_method_id: null, return_url: null, next_action: null, installments: payment.installments, last_error: null };
}

/** The payment's record and its routing plans: the Postgres-only steps of the walk (local activities). */
export function recordActivities(deps: PaymentActivityDeps): Pick<PaymentActivities, 'createPaymentRecord' | 'planRoute'> & {
  createPaymentAndPlan: CreateAndPlan;
} {
  const { db } = deps;
  const seals = commandSeals(deps.vault);

  /** The plan for a payment and the card it may use: the account's configs ranked for its facts. */
  async function plan(q: Knex, args: PlanArgs, payment: PlannedPayment, facts: PlanFacts, hints: RoutingHints): Promise<RoutingPlan> {
    const { card, customer, inputs } = facts;
    const adaptive = await adaptiveInputs(q, args.environment, args, inputs.settings, inputs.configs.map((c) => c.id));
    return buildRoutingPlan({
      payment: {
        amount: Number(payment.amount), currency: payment.currency, installments: args.installments ?? payment.installments,
        card: { network: card.card_network, country: card.card_country ?? undefined },
        customer: customer ? { country: customer.country ?? undefined } : undefined,
        metadata: payment.metadata ?? {},
      },
      configs: inputs.configs,
      providers: inputs.providers,
      routing: hints,
      adaptive,
    });
  }

  /**
   * The account's routing settings (read with the routing inputs) and its configs' recent health
   * (docs/routing.md): two indexed reads of the per-minute rollups. Least cost without elimination needs
   * neither window.
   */
  async function adaptiveInputs(q: Knex, env: Environment, args: PlanArgs, settings: RoutingSettings, configIds: string[]): Promise<RoutingPlanInput['adaptive']> {
    if (settings.strategy === 'least_cost' && !settings.elimination.enabled) return undefined;
    const now = new Date();
    const [success, elimination] = await Promise.all([
      settings.strategy === 'success_rate' ? healthWindows(q, env, configIds, settings.success_rate.window_minutes, now) : {},
      settings.elimination.enabled ? healthWindows(q, env, configIds, settings.elimination.window_minutes, now) : {},
    ]);
    return { settings, health: { success, elimination }, paymentId: args.paymentId, now: now.toISOString() };
  }

  /** The confirm's plan for `payment`, not yet stored. */
  async function planFor(q: Knex, args: PlanArgs, payment: PlannedPayment): Promise<Planned> {
    const env = args.environment;
    // Three reads that need nothing of each other, sent at once: one round trip where a payment waits.
    const [card, [customer], inputs] = await Promise.all([
      findUsableCard(q, env, cardUse(args, payment)),
      payment.customer_id ? customersByIds(q, env, [payment.customer_id]) : [],
      loadRoutingInputs(q, env, args.accountId),
    ]);
    const hints: RoutingHints = { ...(payment.routing ?? {}), ...(args.routing ?? {}) };
    // A card the payment may not use makes nothing eligible: the payment fails as payment_method_unavailable.
    const routingPlan = card ? await plan(q, args, payment, { card, customer, inputs }, hints) : { candidates: [], ineligible: [] };
    const planned: PlannedCandidate[] = routingPlan.candidates.map((c) => ({
      providerConfigId: c.payment_provider_config_id, providerId: c.payment_provider_id,
      methodId: c.payment_provider_method_id, estimatedFee: c.estimated_fee,
    }));
    return { card, hints, routingPlan, planned };
  }

  /**
   * The statements that store a confirm's plan, to run with the payment's write that moves it to
   * PROCESSING (or FAILED) with `plannedPatch` (Alongside, db/knex.ts): the plan, and when nothing can take
   * the payment, its single-use card used up (a confirm that ends here has used it, as one that ends
   * after attempts has) and a saved card's CVC, kept for this confirm's authorization, wiped (no
   * authorization follows). Both are idempotent: a retry writes nothing twice. `withRow`: they go in with
   * the payment's insert (PAYMENT_WRITTEN), only if the row is written — a retry that finds the row keeps the
   * plan its first try stored (whose candidates may still need the card), and a row another run wrote gets none.
   */
  function planStatements(q: Knex, args: PlanArgs, planned: Planned, withRow = false): NamedAlongside[] {
    const env = args.environment;
    const { hints, routingPlan } = planned;
    const plan = (withRow ? routingPlanInsertWithPayment : routingPlanInsert)(q, env, {
      id: args.routingPlanId,
      account_id: args.accountId,
      payment_id: args.paymentId,
      request_id: args.context.requestId ?? null,
      trace_id: args.context.traceId ?? null,
      candidates: routingPlan.candidates,
      metadata: { ineligible: routingPlan.ineligible, hints, planned: planned.planned, payment_method_id: args.paymentMethodId },
    });
    if (planned.planned.length) return [['plan_stored', plan]];
    // Only a card this payment may use has its CVC wiped: the confirm named it, and it was found usable.
    const cards = cardsUpdate(q, env, { ...(planned.card ? { cvcOf: args.paymentMethodId } : {}), erase: { paymentId: args.paymentId, paymentMethodId: args.paymentMethodId } })!;
    return [['plan_stored', plan], ['cards_used_up', withRow ? onlyIfFirstWrote(cards, PAYMENT_WRITTEN) : cards]];
  }

  /** The event that says how a confirm's plan left the payment `row`. */
  function plannedEvent(args: PlanArgs, planned: Planned, row: PaymentRow): EventRecord {
    const failed = planned.planned.length === 0;
    return paymentEvent(args, failed ? 'payment_intent.payment_failed' : 'payment_intent.processing', row, args.context, { routingPlanId: args.routingPlanId });
  }

  function newPaymentOf(input: PaymentInput): NewPayment {
    return {
      id: input.paymentId,
      account_id: input.accountId,
      customer_id: input.customerId ?? null,
      checkout_session_id: input.checkoutSessionId ?? null,
      amount: input.amount,
      currency: input.currency,
      auto_capture: input.autoCapture,
      secure_mode: input.secureMode,
      installments: input.installments,
      routing: input.routing ?? {},
      metadata: input.metadata ?? {},
      workflow_run_id: currentRunId() ?? null,
    };
  }

  /**
   * Refuses a start whose payment row another workflow run wrote: a closed payment's workflow started
   * again with its start seal copied from history writes nothing. Answers whether the row is there (an
   * earlier try of this run wrote it). Asked only once the row's insert found it there (no read on the way of a create).
   */
  async function writtenByThisRun(input: PaymentInput): Promise<boolean> {
    const row = await findPayment(db, input.environment, input.paymentId);
    if (row && row.workflow_run_id !== (currentRunId() ?? null)) {
      refuseCommand(input.environment, input.paymentId, 'start', 'its payment was written by another workflow run');
    }
    return !!row;
  }

  /** Claims a confirm's one-time command id for its plan: a confirm seal used already (copied from history) is refused. */
  async function claimConfirm(args: PlanArgs, commandId: string): Promise<void> {
    const claim = { paymentId: args.paymentId, commandId, kind: 'confirm' as const, usedBy: args.routingPlanId };
    if (!(await claimCommand(db, args.environment, claim))) refuseCommand(args.environment, args.paymentId, 'confirm', 'its command was used already');
  }

  async function planRoute(args: PlanArgs): Promise<PlanResult> {
    const commandId = seals.confirm(args);
    const existing = await findRoutingPlan(db, args.environment, args.routingPlanId);
    if (existing) {
      return { routingPlanId: existing.id, candidates: (existing.metadata.planned ?? []).filter(isPlannedCandidate) };
    }
    await claimConfirm(args, commandId);
    const payment = await findPayment(db, args.environment, args.paymentId);
    if (!payment) throw new MissingRowError('payment', args.paymentId);
    // A new plan only for a payment its row says may be confirmed: a sealed confirm sent again to a
    // payment that has moved on (copied from its history into a new run) charges nothing.
    if (!allows('confirm', payment.status)) {
      throw ApplicationFailure.nonRetryable(`${withArticle(payment.status)} payment cannot be confirmed again.`, UNSEALED_COMMAND);
    }
    const planned = await planFor(db, args, payment);
    return db.transaction(async (trx) => {
      const row = await updatePayment(trx, args.environment, args.paymentId, plannedPatch(args, payment, planned), planStatements(trx, args, planned));
      await appendEvents(trx, args.environment, [plannedEvent(args, planned, row)]);
      return { routingPlanId: args.routingPlanId, candidates: planned.planned };
    });
  }

  return {
    /** Writes the payment row and `payment_intent.created`, in one statement. Idempotent. */
    async createPaymentRecord(input: PaymentInput): Promise<void> {
      seals.start(input);
      const row = newPaymentRow(newPaymentOf(input), {}, new Date());
      const created = paymentEvent(input, 'payment_intent.created', row, input.context);
      const written = await appendEventsOfWrite(db, input.environment, [created], [PAYMENT_WRITTEN, paymentInsert(db, input.environment, row)]);
      // The row was there: an earlier try of this run wrote it, or another run did (refused).
      if (!written) await writtenByThisRun(input);
    },

    /**
     * Builds and stores the routing plan for a confirm, and moves the payment to PROCESSING (or to
     * FAILED with no_eligible_provider when nothing can take it). Idempotent on the plan id.
     */
    planRoute,

    createPaymentAndPlan,
  };

  async function createPaymentAndPlan({ payment: input, plan: args }: CreateAndPlanArgs, withRow?: WithRow): ReturnType<CreateAndPlan> {
    const env = input.environment;
    seals.start(input);
    const commandId = seals.confirm(args);
    // Planned from the row about to be written, which is then written once, as the plan leaves it: the
    // row, its plan and both events in one statement, so no transaction is needed around them. The reads
    // before it (the card, the routing inputs) are each one statement, as a transaction at Postgres's
    // default isolation would have read them.
    const payment = newPaymentOf(input);
    const planned = await planFor(db, args, payment);
    const row = newPaymentRow(payment, plannedPatch(args, payment, planned), new Date());
    const created = paymentEvent(input, 'payment_intent.created', { ...row, ...asCreated(payment) }, input.context);
    // The plan goes in with the row (on a retry that finds the row, the plan its first try wrote is kept).
    const also = withRow ? await withRow({ routingPlanId: args.routingPlanId, candidates: planned.planned }, row) : [];
    // The confirm's command id is used with the row (a fresh payment's: no id of it can be used yet).
    const claim = commandClaimWithPayment(db, env, { paymentId: args.paymentId, commandId, kind: 'confirm', usedBy: args.routingPlanId });
    const written = await appendEventsOfWrite(db, env, [created, plannedEvent(args, planned, row)], [PAYMENT_WRITTEN, paymentInsert(db, env, row)], [...planStatements(db, args, planned, true), ...also, ['command_claimed', claim]],
    );
    // The row was there already: written with its plan by an earlier try of this run (which finds that plan), or by another run (refused).
    if (!written) {
      await writtenByThisRun(input);
      return { plan: await planRoute(args) };
    }
    return { plan: { routingPlanId: args.routingPlanId, candidates: planned.planned }, written: { payment: row, card: planned.card } };
  }
}
