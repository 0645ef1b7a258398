import {
  allHandlersFinished, ApplicationFailure, condition, log, proxyActivities, proxyLocalActivities, setCurrentDetails, setHandler,
  sleep, upsertSearchAttributes,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { AttemptArgs, AttemptResult } from '../activities/payments';
import { workflowId } from './ids';
import {
  CancelInput, CommandResult, ConfirmInput, CreateInput, PaymentInput, PaymentState, PaymentStatus, paymentQueries, paymentUpdates, SEARCH_ATTRIBUTES,
} from './shared';

/** Short Postgres work: quick retries, forever (money state must always land). */
const records = proxyActivities<Activities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

/**
 * The two Postgres-only steps on the hot path (writing the payment row, planning the route) run as
 * local activities: inside the workflow task, with no round trip through the server for scheduling.
 * Both are idempotent, so the at-least-once replays local activities allow are harmless.
 */
const localRecords = proxyLocalActivities<Activities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

/**
 * Provider calls. The heartbeat notices a dead worker within seconds; retries are safe because every
 * provider call carries an idempotency key (the charge id), so a retry can never charge twice.
 */
const providers = proxyActivities<Activities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '5s',
  retry: {
    initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s',
    nonRetryableErrorTypes: ['not_found', 'capture_declined'],
  },
});

const FINAL: PaymentStatus[] = ['SUCCEEDED', 'CANCELED'];
const CONFIRMABLE: PaymentStatus[] = ['CREATED', 'FAILED'];
const CANCELABLE: PaymentStatus[] = ['CREATED', 'FAILED', 'AUTHORIZED'];
const RECONCILE_MAX_DELAY_MS = 5 * 60_000;

function invalidState(status: PaymentStatus, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: 'invalid_state', message, details: [{ status }], nonRetryable: true });
}

/**
 * One workflow per payment (`payment/<pay_id>`). It writes the payment row first (answering the
 * `create` update sent with the start), then serves confirm, capture and cancel as updates whose
 * validators reject a wrong state before anything is written. Confirm walks the routing plan: one
 * charge per attempt, hard declines stop, soft declines and transport errors move on, unknown outcomes
 * are reconciled with the provider and never cascaded. Durable timers void a stale authorization and
 * cancel a payment that never succeeded.
 */
export async function paymentWorkflow(input: PaymentInput): Promise<PaymentState> {
  const ref = { paymentId: input.paymentId, accountId: input.accountId, workspaceId: input.workspaceId, environment: input.environment };
  const state: PaymentState = {
    paymentId: input.paymentId, status: 'CREATED', amount: input.amount, currency: input.currency,
    candidates: [], attempts: [], authorizedAmount: 0, capturedAmount: 0, reconciling: false,
  };
  let created = false;
  /** A confirm walk, a capture or a cancel is running: other commands wait their turn (409). */
  let busy = false;
  let lastOutcome: CommandResult['outcome'];
  let authorizedAt = 0;
  let approvedChargeId: string | undefined;

  /** What the search attributes say now: only changes are upserted, together, as one history event. */
  const visible: { status: PaymentStatus; providerConfigId?: string } = { status: 'CREATED' };
  const setStatus = (status: PaymentStatus, providerConfigId?: string) => {
    if (status === 'AUTHORIZED' && state.status !== 'AUTHORIZED') authorizedAt = Date.now();
    state.status = status;
    const changes = [
      ...(status !== visible.status ? [{ key: SEARCH_ATTRIBUTES.PaymentStatus, value: status }] : []),
      ...(providerConfigId && providerConfigId !== visible.providerConfigId ? [{ key: SEARCH_ATTRIBUTES.ProviderConfigId, value: providerConfigId }] : []),
    ];
    if (changes.length) upsertSearchAttributes(changes);
    visible.status = status;
    visible.providerConfigId = providerConfigId ?? visible.providerConfigId;
    describe();
  };
  const describe = () => {
    const current = state.currentIndex !== undefined ? state.candidates[state.currentIndex] : undefined;
    setCurrentDetails([
      `**${state.status}** · ${(input.amount / 100).toFixed(2)} ${input.currency} · account ${input.accountId}`,
      current ? `candidate ${state.currentIndex! + 1}/${state.candidates.length}: ${current.providerConfigId}` : 'no candidate yet',
      state.reconciling ? 'reconciling an unknown provider outcome' : '',
      state.lastError ? `last error: ${state.lastError.code}` : '',
    ].filter(Boolean).join('\n'));
  };
  const publish = async (eventIds: string[]) => {
    if (eventIds.length) await records.fanOutEvents({ environment: input.environment, eventIds });
  };

  setHandler(paymentQueries.state, () => state);

  // Answers once the row is written; with a confirm (create and confirm in one request), once that
  // confirm's walk has ended, exactly as the `confirm` update would have. Histories recorded before the
  // argument existed carry none and take the first path unchanged.
  setHandler(paymentUpdates.create, async (args?: CreateInput): Promise<CommandResult> => {
    // Busy from the start: no confirm, capture or cancel can slip in before this confirm's walk.
    if (args?.confirm) busy = true;
    await condition(() => created);
    if (args?.confirm) return runConfirm(args.confirm);
    return { status: state.status };
  });

  // Answers when the walk ends. The API stops waiting after 10 s and says PROCESSING; the update itself
  // runs on (a timer here would cost every payment a timer started and canceled in its history).
  setHandler(paymentUpdates.confirm, (args: ConfirmInput) => runConfirm(args), {
    validator: (_args: ConfirmInput) => {
      if (!created) throw invalidState(state.status, 'The payment is still being created.');
      if (busy || !CONFIRMABLE.includes(state.status)) throw invalidState(state.status, `A ${state.status} payment cannot be confirmed.`);
    },
  });

  setHandler(paymentUpdates.capture, async ({ amount, context }): Promise<CommandResult> => {
    busy = true;
    try {
      const result = await providers.captureCharge({ ...ref, chargeId: approvedChargeId!, amount: amount ?? state.authorizedAmount, context });
      state.capturedAmount = result.capturedAmount;
      setStatus(result.paymentStatus);
      await publish(result.eventIds);
      return { status: state.status, outcome: 'captured' };
    } finally {
      busy = false;
    }
  }, {
    validator: ({ amount }) => {
      if (busy || state.status !== 'AUTHORIZED') throw invalidState(state.status, `A ${state.status} payment cannot be captured.`);
      if (amount !== undefined && amount > state.authorizedAmount) {
        throw ApplicationFailure.create({
          type: 'amount_exceeds_capturable', nonRetryable: true, details: [{ capturable: state.authorizedAmount }],
          message: `At most ${state.authorizedAmount} can be captured.`,
        });
      }
    },
  });

  setHandler(paymentUpdates.cancel, async ({ reason, context }): Promise<CommandResult> => {
    busy = true;
    try {
      await cancel(reason ?? 'requested_by_customer', context);
      return { status: state.status, outcome: 'canceled' };
    } finally {
      busy = false;
    }
  }, {
    validator: (_args: CancelInput) => {
      if (busy || !CANCELABLE.includes(state.status)) throw invalidState(state.status, `A ${state.status} payment cannot be canceled.`);
    },
  });

  /** One confirm, from the `confirm` update or a `create` that carries one: the walk, the payment busy meanwhile. */
  async function runConfirm(args: ConfirmInput): Promise<CommandResult> {
    busy = true;
    // PROCESSING at once for validators and queries; the search attributes follow with the first
    // candidate, in the same workflow task, as one upsert.
    state.status = 'PROCESSING';
    try {
      await walk(args);
    } finally {
      busy = false;
    }
    return { status: state.status, outcome: lastOutcome };
  }

  async function cancel(reason: string, context = input.context): Promise<void> {
    const { eventIds } = await providers.cancelPayment({
      ...ref, chargeId: state.status === 'AUTHORIZED' ? approvedChargeId : undefined, reason, context,
    });
    setStatus('CANCELED');
    await publish(eventIds);
  }

  /** Walks the routing plan of one confirm. Never throws: the payment always ends the walk in a status. */
  async function walk(confirm: ConfirmInput): Promise<void> {
    try {
      const plan = await localRecords.planRoute({
        ...ref, routingPlanId: workflowId('rp'), paymentMethodId: confirm.paymentMethodId,
        installments: confirm.installments, routing: confirm.routing, context: confirm.context,
      });
      state.routingPlanId = plan.routingPlanId;
      state.candidates = plan.candidates.map((c) => ({ providerConfigId: c.providerConfigId, providerId: c.providerId, methodId: c.methodId, estimatedFee: c.estimatedFee }));
      state.currentIndex = undefined;
      await publish(plan.eventIds);
      if (plan.candidates.length === 0) {
        state.lastError = { code: 'no_eligible_provider' };
        lastOutcome = 'no_eligible_provider';
        setStatus('FAILED');
        return;
      }
      for (let i = 0; i < plan.candidates.length; i++) {
        const candidate = plan.candidates[i];
        state.currentIndex = i;
        setStatus('PROCESSING', candidate.providerConfigId);
        const args: AttemptArgs = {
          ...ref, chargeId: workflowId('ch'), routingPlanId: plan.routingPlanId, attemptNo: i + 1, candidate,
          paymentMethodId: confirm.paymentMethodId, capture: input.autoCapture,
          lastCandidate: i === plan.candidates.length - 1, context: confirm.context,
        };
        const attempt = { chargeId: args.chargeId, attemptNo: args.attemptNo, providerConfigId: candidate.providerConfigId, outcome: 'pending' as const };
        state.attempts.push(attempt);
        let result = await providers.authorizeCharge(args);
        if (result.outcome === 'unknown') result = await reconcile(args, attempt);
        state.attempts[state.attempts.length - 1] = { ...attempt, outcome: result.outcome, declineCode: result.declineCode };
        if (result.outcome === 'approved') {
          approvedChargeId = args.chargeId;
          state.authorizedAmount = input.amount;
          if (result.paymentStatus === 'SUCCEEDED') state.capturedAmount = input.amount;
        }
        if (result.declineCode) state.lastError = { code: result.declineCode };
        setStatus(result.paymentStatus);
        await publish(result.eventIds);
        if (result.outcome === 'approved' || result.outcome === 'hard_decline') break;
      }
      lastOutcome = state.status === 'SUCCEEDED' ? 'succeeded' : state.status === 'AUTHORIZED' ? 'authorized' : 'failed';
    } catch (err) {
      // Only a non-retryable activity failure lands here; the payment stays visible for an operator.
      log.error('payment walk failed', { paymentId: input.paymentId, error: String(err) });
      state.lastError = { code: 'internal_error', message: String(err) };
      lastOutcome = 'failed';
      setStatus(state.status);
    }
  }

  /** Asks the provider, with backoff, until it tells what became of a charge. Never moves on before. */
  async function reconcile(args: AttemptArgs, attempt: PaymentState['attempts'][number]): Promise<AttemptResult> {
    state.reconciling = true;
    state.attempts[state.attempts.length - 1] = { ...attempt, outcome: 'unknown' };
    describe();
    let delay = 1000;
    try {
      for (;;) {
        await sleep(delay);
        const result = await providers.reconcileCharge(args);
        if (!result.pending) return result;
        delay = Math.min(delay * 2, RECONCILE_MAX_DELAY_MS);
      }
    } finally {
      state.reconciling = false;
    }
  }

  // The payment row exists before anything else happens; `create` answers once it does.
  const { eventIds } = await localRecords.createPaymentRecord(input);
  created = true;
  describe();
  await publish(eventIds);

  // Each expiry is one durable timer, armed once and never canceled: a finished workflow simply drops it.
  let paymentExpired = false;
  let authExpired = false;
  let authTimerArmed = false;
  void sleep(input.paymentExpiryMs).then(() => { paymentExpired = true; });
  const moment = () => `${state.status}/${busy}/${paymentExpired}/${authExpired}`;
  for (;;) {
    if (FINAL.includes(state.status) && !busy) break;
    if (!busy && state.status === 'AUTHORIZED') {
      if (!authTimerArmed) {
        authTimerArmed = true;
        void sleep(Math.max(authorizedAt + input.authExpiryMs - Date.now(), 1)).then(() => { authExpired = true; });
      }
      if (authExpired) {
        busy = true;
        await cancel('authorization_expired');
        busy = false;
        continue;
      }
    } else if (!busy && paymentExpired && CONFIRMABLE.includes(state.status)) {
      busy = true;
      await cancel('expired');
      busy = false;
      continue;
    }
    const seen = moment();
    await condition(() => moment() !== seen);
  }
  await condition(allHandlersFinished);
  return state;
}
