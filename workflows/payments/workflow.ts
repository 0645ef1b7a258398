import {
  allHandlersFinished, ApplicationFailure, condition, log, proxyActivities, proxyLocalActivities, setCurrentDetails,
  setHandler, sleep, upsertSearchAttributes, workflowInfo,
} from '@temporalio/workflow';
import { permanentDataFailure, type PermanentDataFailure } from '../../lib/data-errors';
import { withArticle } from '../../lib/errors';
import { SEARCH_ATTRIBUTES, type NotifiedOperation, type ProviderEventSignal } from '../contract';
import { idRandom, mintId } from '../ids';
import type { EventFanOutActivities } from '../webhooks/contract';
import {
  allows, AttemptArgs, AttemptResult, AuthenticationReturnInput, CancelInput, CAPTURE_FAILED_AFTER_REFUND, CaptureFailureResult, CaptureInput, CommandResult,
  ConfirmInput, CreateAndAuthorizeResult,
  CreateInput, FINAL_PAYMENT_STATUSES, firstAttemptOf, FirstAttemptArgs, LATE_AUTHORIZATION_NOT_REVERSED, leadsTo, stepsUp,
  PAYMENT_ACTIVITY_FAILURES, PAYMENT_FAILURES, PaymentActivities, PaymentInput, PaymentState, PaymentStatus, PaymentTransition,
  PendingOperation, PlanArgs, PlanResult, paymentQueries, paymentSignals, paymentUpdates, SealedCommand, UNSEALED_COMMAND,
} from './contract';
import { WorkflowLock } from './lock';

/** How long a capture waits for a run holding the lock to end (captureWaitsItsTurn) before it is refused. */
const CAPTURE_WAIT = '10 seconds';

/**
 * Short Postgres work: quick retries, forever while the database is away (money state must always land).
 * A write Postgres refuses for good fails at once (`permanent_data_error`, the worker's interceptor): see needsAttention.
 */
const records = proxyActivities<PaymentActivities & EventFanOutActivities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

/**
 * The two Postgres-only steps on the hot path (writing the payment row, planning the route) run as
 * local activities: inside the workflow task, with no round trip through the server for scheduling.
 * Both are idempotent, so the at-least-once replays local activities allow are harmless.
 */
const localRecords = proxyLocalActivities<PaymentActivities>({
  startToCloseTimeout: '15s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
});

/**
 * Provider calls. The heartbeat notices a dead worker within seconds; retries are safe because every
 * provider call carries an idempotency key (the charge id), so a retry can never charge twice.
 */
const providers = proxyActivities<PaymentActivities>({
  startToCloseTimeout: '2m',
  heartbeatTimeout: '5s',
  retry: {
    initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s',
    nonRetryableErrorTypes: [PAYMENT_ACTIVITY_FAILURES.notFound, PAYMENT_ACTIVITY_FAILURES.captureDeclined],
  },
});

/**
 * The authorization attempts of a walk (PaymentInput.authorizeInTask), as local activities: run by the
 * worker inside the workflow task that reached them, so an approved payment takes one workflow task
 * instead of two, and no activity round trip through the server. What makes `providers` safe holds here
 * too: the attempt is idempotent (the charge id is its processor idempotency key, and the charge row is
 * written before the call), and a worker that dies mid-call loses its workflow task, which the next
 * worker runs again with the same charge id (see mintAt), noticed within the workflow task timeout
 * instead of the heartbeat timeout. Same timeout, same retries, same non-retryable failures.
 */
const attemptsInTask = proxyLocalActivities<PaymentActivities>({
  startToCloseTimeout: '2m',
  retry: {
    initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s',
    nonRetryableErrorTypes: [PAYMENT_ACTIVITY_FAILURES.notFound, PAYMENT_ACTIVITY_FAILURES.captureDeclined],
  },
});

const RECONCILE_MAX_DELAY_MS = 5 * 60_000;
/** AUTHENTICATION_TIMEOUT for payments created before it was part of the input. */
const DEFAULT_AUTHENTICATION_TIMEOUT_MS = 60 * 60_000;

/** What a command answers as `outcome` for the status it leaves the payment in. */
function outcomeOf(status: PaymentStatus): CommandResult['outcome'] {
  switch (status) {
    case 'SUCCEEDED': return 'succeeded';
    case 'AUTHORIZED': return 'authorized';
    case 'FAILED': return 'failed';
    case 'REQUIRES_ACTION': return 'requires_action';
    case 'CANCELED': return 'canceled';
    default: return 'processing';
  }
}

/** An activity refused the command it was given: no valid seal (PaymentCommand in the contract), nothing written or sent. */
function isUnsealed(err: unknown): boolean {
  // A scheduled activity's failure comes wrapped in an ActivityFailure, a local one's as thrown.
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof ApplicationFailure && e.type === UNSEALED_COMMAND) return true;
  }
  return false;
}

function invalidState(status: PaymentStatus, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: PAYMENT_FAILURES.invalidState, message, details: [{ status }], nonRetryable: true });
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
  /**
   * One lock around every command and timer path: a confirm walk, a capture, a cancel or an expiry holds
   * it across its activities, and validators refuse (409) while it is held. `running` says which one.
   */
  const lock = new WorkflowLock();
  let running: PaymentTransition | undefined;
  let lastOutcome: CommandResult['outcome'];
  let authorizedAt = 0;
  let approvedChargeId: string | undefined;
  /** A cancel arrived while the customer was authenticating: the wait ends, then the cancel runs. */
  let abandonRequested = false;
  /** That cancel as its update carried it: the abandon's activity checks its seal before voiding the charge. */
  let abandonCommand: SealedCommand | undefined;
  /** The charge whose customer came back from authenticating (the authenticationReturn update). */
  let customerReturned: string | undefined;
  /** The walk's charge was captured with its authorization, and the processor may still report that capture failed, until `until`. */
  let captureWatch: { chargeId: string; until: number } | undefined;
  /** The charge whose capture failed after the fact: its capture notifications are stale unless a capture of ours awaits one. */
  let captureFailedCharge: string | undefined;
  /**
   * Charges given up while the customer authenticated at a processor that may still report them authorized
   * (AttemptResult.lateAuthorizationWindowMs), and until when a final payment's workflow listens for that.
   */
  const givenUp = new Map<string, number>();

  /** Runs one transition under the lock; every command and timer goes through here. */
  const run = <T>(transition: PaymentTransition, fn: () => Promise<T>): Promise<T> => lock.runExclusive(async () => {
    if (!allows(transition, state.status)) throw invalidState(state.status, `${withArticle(state.status)} payment cannot take ${transition}.`);
    running = transition;
    try {
      return await fn();
    } catch (err) {
      // Checked before any await: a failure of another kind goes on exactly as it always has (replay).
      const permanent = permanentDataFailure(err);
      if (permanent) await needsAttention(transition, permanent);
      throw err;
    } finally {
      running = undefined;
    }
  });
  /**
   * A command's validator: the lock free, no capture or void awaiting the processor's notification, and
   * the table allowing the transition from the current status.
   */
  const refuseUnless = (transition: PaymentTransition, verb: string) => {
    if (state.needsAttention) throw invalidState(state.status, `The payment needs an operator's attention (${state.needsAttention.reason}); it takes no more commands.`);
    // A walk waiting for the customer's authentication holds the lock, but a cancel may end the wait.
    if (transition === 'cancel' && state.authentication && state.status === 'REQUIRES_ACTION') return;
    const pending = state.pendingOperation;
    if (pending) throw invalidState(state.status, `The payment cannot be ${verb} while its ${pending.operation} awaits the processor's notification.`);
    if (lock.isLocked() || !allows(transition, state.status)) throw invalidState(state.status, `${withArticle(state.status)} payment cannot be ${verb}.`);
  };

  /**
   * Processor notifications signalled in (each stored event once), kept until the step waiting for
   * one takes it: a reconciliation (authorize) or a pending capture or void.
   */
  const notifications: ProviderEventSignal[] = [];
  const signalled = new Set<string>();
  setHandler(paymentSignals.providerEvent, (event: ProviderEventSignal) => {
    // Anyone reaching Temporal can signal: a malformed one must not fail the workflow task (the activity
    // applies only the stored event it names, docs/security.md).
    if (typeof event?.eventId !== 'string' || signalled.has(event.eventId)) return;
    signalled.add(event.eventId);
    if (staleCapture(event)) return;
    notifications.push(event);
  });
  /** About the capture that failed after the fact (a late or repeated one), not a capture of ours now: kept, it would settle the next. */
  const staleCapture = (event: ProviderEventSignal) =>
    captureFailedCharge !== undefined && event.operation === 'capture' && event.chargeId === captureFailedCharge && !state.pendingOperation && running !== 'capture';
  const hasNotification = (operation: NotifiedOperation, chargeId: string) =>
    notifications.some((n) => n.operation === operation && n.chargeId === chargeId);
  /** The first notification about a given-up charge that may show its authorization standing: an authorization, or the void's outcome. */
  const lateNotice = () => (state.needsAttention ? -1 : notifications.findIndex((n) => givenUp.has(n.chargeId) && (n.operation === 'authorize' || n.operation === 'void')));
  const takeNotification = (operation: NotifiedOperation, chargeId: string): ProviderEventSignal | undefined => {
    const index = notifications.findIndex((n) => n.operation === operation && n.chargeId === chargeId);
    return index < 0 ? undefined : notifications.splice(index, 1)[0];
  };

  /** What the search attributes say now: only changes are upserted, together, as one history event. */
  const visible: { status: PaymentStatus; providerConfigId?: string } = { status: 'CREATED' };
  /**
   * The candidate shows with the status: the current one unless told otherwise (a no-op where it was
   * upserted as it became current; the one upsert where its attempt's outcome came with the row).
   */
  const setStatus = (status: PaymentStatus, providerConfigId = currentCandidate()?.providerConfigId) => {
    if (running && !leadsTo(running, status)) log.warn('status outside the transition table', { paymentId: input.paymentId, transition: running, status });
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
  const currentCandidate = () => (state.currentIndex !== undefined ? state.candidates[state.currentIndex] : undefined);
  const describe = () => {
    const current = currentCandidate();
    setCurrentDetails([
      `**${state.status}** · ${(input.amount / 100).toFixed(2)} ${input.currency} · account ${input.accountId}`,
      current ? `candidate ${state.currentIndex! + 1}/${state.candidates.length}: ${current.providerConfigId}` : 'no candidate yet',
      state.reconciling ? 'reconciling an unknown provider outcome' : '',
      state.pendingOperation ? `${state.pendingOperation.operation} received by the processor, awaiting its notification` : '',
      state.authentication ? `waiting for customer authentication (since ${new Date(state.authentication.since).toISOString()}, charge ${state.authentication.chargeId})` : '',
      state.lastError ? `last error: ${state.lastError.code}` : '',
      state.needsAttention ? `NEEDS ATTENTION: ${state.needsAttention.step} stopped on ${state.needsAttention.reason}; no more commands` : '',
      state.captureFailureWatch ? `listening until ${new Date(state.captureFailureWatch.until).toISOString()} for the processor reporting the capture failed after all` : '',
      givenUp.size ? `given up, reversed if the processor reports them authorized: ${[...givenUp.keys()].join(', ')}` : '',
    ].filter(Boolean).join('\n'));
  };
  const publish = async (eventIds: string[]) => {
    if (eventIds.length) await records.fanOutEvents({ environment: input.environment, eventIds });
  };

  /**
   * A step met a write Postgres refuses for good (an activity's `permanent_data_error`): retrying would
   * loop forever, so the payment is flagged for an operator, once, keeping the status the money is in,
   * and the workflow takes no more commands and ends (docs/operators.md#needs-attention).
   */
  async function needsAttention(step: string, failure: PermanentDataFailure, reason: string = PAYMENT_ACTIVITY_FAILURES.permanentDataError): Promise<void> {
    if (state.needsAttention) return;
    state.needsAttention = { reason, step, since: Date.now() };
    state.lastError = { code: reason, message: failure.message };
    log.error('payment needs attention', { paymentId: input.paymentId, step, failure: failure.message });
    describe();
    try {
      await records.flagPaymentNeedsAttention({
        ...ref, reason: state.needsAttention.reason, step, status: state.status, failure,
      });
    } catch (flagErr) {
      // The state query and the workflow's details still say it.
      log.error('flagging the payment failed', { paymentId: input.paymentId, error: String(flagErr) });
    }
  }
  /** For steps outside an update (the row's write, the timers): a permanent data error ends the workflow, flagged, instead of failing it. */
  async function unlessNeedsAttention(step: string, err: unknown): Promise<void> {
    const permanent = permanentDataFailure(err);
    if (!permanent) throw err;
    await needsAttention(step, permanent);
  }

  setHandler(paymentQueries.state, () => state);

  /** Starts since the create got lean (PaymentInput.leanCreate); histories from before replay as they ran. */
  const lean = input.leanCreate === true;
  /** Where a walk's authorization attempts run (PaymentInput.authorizeInTask); histories from before replay as they ran. */
  const inTask = input.authorizeInTask === true;
  const attempts = inTask ? attemptsInTask : providers;
  /** Where a create's confirm makes its first attempt (PaymentInput.authorizeWithRow): with the row and the plan. */
  const withRow = lean && inTask && input.authorizeWithRow === true;
  /**
   * That first attempt, for the walk of the create's confirm: its outcome when it was made with the row
   * (absent when it failed for good there: the walk makes it, under the same charge id).
   */
  let firstWithRow: { attempt: FirstAttemptArgs; result?: AttemptResult } | undefined;
  /**
   * The time part of the charge and plan ids. A local activity's ids are minted inside the workflow task
   * that runs it, and a retried task (its worker died) must mint them alike: from the workflow's start
   * (see mintId), or the next worker would charge again under a new idempotency key.
   */
  const mintAt = () => (inTask ? workflowInfo().startTime.getTime() : Date.now());
  /** Their random part (PaymentInput.idStream): the workflow's own stream for ids; histories from before replay Math.random. */
  const random = input.idStream === true ? idRandom() : Math.random;
  const planArgs = (confirm: ConfirmInput): PlanArgs => ({
    ...ref, routingPlanId: mintId('rp', mintAt(), random), paymentMethodId: confirm.paymentMethodId,
    installments: confirm.installments, routing: confirm.routing, context: confirm.context,
    ...(confirm.returnUrl ? { returnUrl: confirm.returnUrl } : {}),
    ...(confirm.seal ? { seal: confirm.seal } : {}),
  });
  /**
   * Writes the payment row, once. A create that carries a confirm, when it comes first (it does: its
   * handler runs as it is registered, before the workflow's own first step), plans that confirm's route
   * in the same local activity and answers the plan, whose events then include `payment_intent.created`.
   */
  let recording: Promise<PlanResult | undefined> | undefined;
  const record = (confirm?: ConfirmInput) => recording ??= (async () => {
    if (confirm && withRow) {
      const plan = planArgs(confirm);
      const attempt: FirstAttemptArgs = {
        ...ref, chargeId: mintId('ch', mintAt(), random), attemptNo: 1, paymentMethodId: confirm.paymentMethodId,
        capture: input.autoCapture, context: confirm.context, ...(confirm.returnUrl ? { returnUrl: confirm.returnUrl } : {}),
      };
      const { first, ...planned }: CreateAndAuthorizeResult = await attemptsInTask.createPaymentPlanAndAuthorize({ payment: input, plan, attempt });
      firstWithRow = { attempt, ...(first ? { result: first } : {}) };
      created = true;
      describe();
      return planned;
    }
    if (confirm && lean) {
      const plan = await localRecords.createPaymentAndPlanRoute({ payment: input, plan: planArgs(confirm) });
      created = true;
      describe();
      return plan;
    }
    const { eventIds } = await localRecords.createPaymentRecord(input);
    created = true;
    describe();
    await publish(eventIds);
    return undefined;
  })();

  // Answers once the row is written; with a confirm (create and confirm in one request), once that
  // confirm's walk has ended, exactly as the `confirm` update would have. Histories recorded before the
  // argument existed carry none and take the first path unchanged.
  setHandler(paymentUpdates.create, async (args?: CreateInput): Promise<CommandResult> => {
    const confirm = args?.confirm;
    if (!confirm) {
      await condition(() => created || state.needsAttention !== undefined);
      return { status: state.status };
    }
    const recorded = lean ? record(confirm) : undefined;
    // Locked from the start: no confirm, capture or cancel can slip in before this confirm's walk.
    return untilCustomerOrEnd(run('confirm', async () => {
      const plan = await recorded;
      // Each condition costs promises (each one a stack trace the SDK records): none when already met.
      if (!created) await condition(() => created);
      return confirmWalk(confirm, plan);
    }));
  });

  // Answers when the walk ends. The API stops waiting after 10 s and says PROCESSING; the update itself
  // runs on (a timer here would cost every payment a timer started and canceled in its history).
  setHandler(paymentUpdates.confirm, (args: ConfirmInput) => untilCustomerOrEnd(run('confirm', () => confirmWalk(args))), {
    validator: (_args: ConfirmInput) => {
      if (!created) throw invalidState(state.status, 'The payment is still being created.');
      refuseUnless('confirm', 'confirmed');
    },
  });

  /** Captures and voids of the approved charge sent so far: each command's processor key (operationKey). */
  let captures = 0;
  let voids = 0;
  async function capture({ amount, seal, context }: CaptureInput): Promise<CommandResult> {
    refuseCapture(amount);
    const captureAmount = amount ?? state.authorizedAmount;
    const command: SealedCommand = { ...(amount !== undefined ? { amount } : {}), ...(seal ? { seal } : {}) };
    const result = await providers.captureCharge({ ...ref, chargeId: approvedChargeId!, amount: captureAmount, sequence: (captures += 1), command, context });
    if (result.pending) {
      state.pendingOperation = { operation: 'capture', chargeId: approvedChargeId!, amount: captureAmount };
      describe();
      return { status: state.status, outcome: 'capture_pending' };
    }
    if (result.declined) {
      state.lastError = { code: 'capture_failed', message: result.declined.message };
      await publish(result.eventIds);
      throw ApplicationFailure.create({
        type: PAYMENT_FAILURES.captureDeclined, nonRetryable: true, details: [{ decline_code: result.declined.declineCode }],
        message: `The processor refused the capture (${result.declined.declineCode}); the payment stays AUTHORIZED.`,
      });
    }
    state.capturedAmount = result.capturedAmount;
    setStatus(result.paymentStatus);
    await publish(result.eventIds);
    return { status: state.status, outcome: 'captured' };
  }

  /**
   * A capture that arrives while the lock is held by a run needing nothing from outside waits its turn
   * instead of a 409: after a worker died between writing the outcome and finishing its workflow task,
   * the merchant already reads AUTHORIZED while the workflow, until the task is run again, says
   * PROCESSING. It waits 10 s at most, and not once the run waits on the outside (a reconciliation, the
   * customer); holding the lock, the handler checks again (`refuseCapture`, and `run` the table).
   */
  const captureWaitsItsTurn = () => lock.isLocked() && !state.reconciling && !state.authentication && !state.pendingOperation && !state.needsAttention;
  const refuseCapture = (amount: number | undefined) => {
    if (state.needsAttention || state.pendingOperation) refuseUnless('capture', 'captured');
    if (amount !== undefined && amount > state.authorizedAmount) {
      throw ApplicationFailure.create({
        type: PAYMENT_FAILURES.amountExceedsCapturable, nonRetryable: true, details: [{ capturable: state.authorizedAmount }],
        message: `At most ${state.authorizedAmount} can be captured.`,
      });
    }
  };
  setHandler(paymentUpdates.capture, async (args: CaptureInput) => {
    // Only when held: a wait on a free lock would add a timer to histories that never had one.
    if (lock.isLocked()) {
      await condition(() => !captureWaitsItsTurn(), CAPTURE_WAIT);
      if (lock.isLocked()) refuseUnless('capture', 'captured');
    }
    return run('capture', () => capture(args));
  }, {
    validator: ({ amount }) => {
      if (captureWaitsItsTurn()) return;
      refuseUnless('capture', 'captured');
      refuseCapture(amount);
    },
  });

  setHandler(paymentUpdates.cancel, async ({ reason, seal, context }) => {
    const command: SealedCommand = { ...(reason !== undefined ? { reason } : {}), ...(seal ? { seal } : {}) };
    // Waiting for the customer: the wait ends first (the charge voided at the processor), then the cancel runs.
    if (state.authentication) {
      abandonRequested = true;
      abandonCommand = command;
    }
    return run('cancel', async (): Promise<CommandResult> => {
      await cancel(reason ?? 'requested_by_customer', context, command);
      return { status: state.status, outcome: state.pendingOperation ? 'cancel_pending' : 'canceled' };
    });
  }, {
    validator: (_args: CancelInput) => refuseUnless('cancel', 'canceled'),
  });

  /** Starts since seals (PaymentInput.seal) answer a return at once; histories from before wait for the step, as they ran. */
  const returnAnsweredAtOnce = input.seal !== undefined;
  // The customer is back from authenticating: the waiting walk completes the step with the processor.
  // Answers at once (the API reads the row for the outcome), so no return holds one of the workflow's
  // update slots; only the charge that waits is taken (the validator), and a repeat changes nothing.
  setHandler(paymentUpdates.authenticationReturn, async ({ chargeId }: AuthenticationReturnInput): Promise<CommandResult> => {
    if (state.authentication?.chargeId === chargeId) {
      customerReturned = chargeId;
      if (!returnAnsweredAtOnce) await condition(() => state.authentication?.chargeId !== chargeId);
    }
    return { status: state.status, outcome: outcomeOf(state.status) };
  }, {
    validator: ({ chargeId }: AuthenticationReturnInput) => {
      if (typeof chargeId !== 'string' || state.authentication?.chargeId !== chargeId) {
        throw invalidState(state.status, 'No authentication of this charge is waiting.');
      }
    },
  });

  /**
   * A confirm answers when its walk ends, or as soon as the payment waits for the customer (the walk goes
   * on, under the lock, when the customer is done).
   */
  async function untilCustomerOrEnd(walking: Promise<CommandResult>): Promise<CommandResult> {
    const waiting = condition(() => state.status === 'REQUIRES_ACTION' && state.authentication !== undefined)
      .then((): CommandResult => ({ status: state.status, outcome: 'requires_action' }));
    return Promise.race([walking, waiting]);
  }

  /** One confirm (under the lock), from the `confirm` update or a `create` that carries one. */
  async function confirmWalk(args: ConfirmInput, plan?: PlanResult): Promise<CommandResult> {
    // PROCESSING at once for validators and queries; the search attributes follow with the first
    // candidate, in the same workflow task, as one upsert.
    const before = state.status;
    state.status = 'PROCESSING';
    running = 'walk';
    await walk(args, plan, before);
    return { status: state.status, outcome: lastOutcome };
  }

  /** A cancel: by the update (`command`, its seal checked by the activity), or by an expiry timer (none). */
  async function cancel(reason: string, context = input.context, command?: SealedCommand): Promise<void> {
    abandonRequested = false;
    const chargeId = state.status === 'AUTHORIZED' ? approvedChargeId : undefined;
    const { eventIds, pending } = await providers.cancelPayment({
      ...ref, chargeId, reason, ...(chargeId ? { sequence: (voids += 1) } : {}), ...(command ? { command } : {}), context,
    });
    if (pending && chargeId) {
      // The processor received the void; its notification completes the cancel (settle).
      state.pendingOperation = { operation: 'void', chargeId, reason };
      describe();
      return;
    }
    setStatus('CANCELED');
    await publish(eventIds);
  }

  /** Records the processor's notification about the pending capture or void, and where it leaves the payment. */
  async function settle(pending: PendingOperation, notification: ProviderEventSignal): Promise<void> {
    const result = await records.settleOperation({ ...ref, pending, notification, context: input.context });
    // The signal named no stored event about the operation (forged): it still awaits its notification.
    if (result.pending) return;
    state.pendingOperation = undefined;
    state.capturedAmount = result.capturedAmount;
    // What the stored event said, not the signal: an approved capture or void ends the payment.
    if (result.paymentStatus !== 'SUCCEEDED' && result.paymentStatus !== 'CANCELED') state.lastError = { code: `${pending.operation}_failed` };
    setStatus(result.paymentStatus);
    await publish(result.eventIds);
  }

  /**
   * Walks the routing plan of one confirm (`planned` when the create made it with the row). The payment
   * always ends the walk in a status; only a confirm the API did not seal throws, the payment back as it
   * was (`before`).
   */
  async function walk(confirm: ConfirmInput, planned?: PlanResult, before: PaymentStatus = state.status): Promise<void> {
    // The first attempt made with the row belongs to this walk (the create's confirm) and to no later one,
    // whether this walk makes any attempt or not.
    const fromRow = firstWithRow;
    firstWithRow = undefined;
    try {
      const plan = planned ?? await localRecords.planRoute(planArgs(confirm));
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
      let attemptNo = 0;
      /** The charge whose successful authentication later candidates get (no second challenge). */
      let authenticatedBy: string | undefined;
      /** The next attempt is a step-up: the same candidate, with 3-D Secure asked for. */
      let stepUp = false;
      for (let i = 0; i < plan.candidates.length; i++) {
        const candidate = plan.candidates[i];
        // The plan's first attempt, when it was made with the row (PaymentInput.authorizeWithRow).
        const withRowFirst = attemptNo === 0 ? fromRow : undefined;
        const made = withRowFirst?.result;
        state.currentIndex = i;
        // Its outcome known, the candidate goes up with the status it led to (one upsert instead of two),
        // unless that outcome is unknown: a reconciliation can take long, and the candidate shows meanwhile.
        if (made && made.outcome !== 'unknown') state.status = 'PROCESSING';
        else setStatus('PROCESSING', candidate.providerConfigId);
        attemptNo += 1;
        const threeDSecure = stepUp || authenticatedBy
          ? { ...(stepUp ? { requested: true } : {}), ...(authenticatedBy ? { authenticatedBy } : {}) }
          : undefined;
        const args: AttemptArgs = withRowFirst ? firstAttemptOf(withRowFirst.attempt, plan, candidate) : {
          ...ref, chargeId: mintId('ch', mintAt(), random), routingPlanId: plan.routingPlanId, attemptNo, candidate,
          paymentMethodId: confirm.paymentMethodId, capture: input.autoCapture,
          lastCandidate: i === plan.candidates.length - 1, context: confirm.context,
          ...(attemptNo !== i + 1 ? { candidateIndex: i } : {}),
          ...(confirm.returnUrl ? { returnUrl: confirm.returnUrl } : {}),
          ...(threeDSecure ? { threeDSecure } : {}),
        };
        const attempt = { chargeId: args.chargeId, attemptNo: args.attemptNo, providerConfigId: candidate.providerConfigId, outcome: 'pending' as const };
        state.attempts.push(attempt);
        stepUp = false;
        let result = made ?? await attempts.authorizeCharge(args);
        if (result.outcome === 'unknown') result = await reconcile(args, attempt);
        if (result.outcome === 'requires_action') {
          setStatus(result.paymentStatus);
          await publish(result.eventIds);
          result = await awaitAuthentication(args);
          if (result.outcome === 'unknown') result = await reconcile(args, attempt);
        }
        if (result.authenticated) authenticatedBy = args.chargeId;
        state.attempts[state.attempts.length - 1] = { ...attempt, outcome: result.outcome, declineCode: result.declineCode };
        if (abandonRequested && result.outcome !== 'approved') {
          // Canceled while the customer was authenticating: the cancel that asked takes it from here.
          await publish(result.eventIds);
          break;
        }
        // Step-up: the issuer wants the cardholder authenticated. The same candidate once more, with 3-D
        // Secure asked for, instead of moving on (or failing); the activity kept the payment PROCESSING.
        if (stepsUp(args, result)) {
          stepUp = true;
          await publish(result.eventIds);
          i -= 1;
          continue;
        }
        if (result.outcome === 'approved') {
          approvedChargeId = args.chargeId;
          state.authorizedAmount = input.amount;
          if (result.paymentStatus === 'SUCCEEDED') state.capturedAmount = input.amount;
          if (result.paymentStatus === 'SUCCEEDED' && result.captureFailureWindowMs) captureWatch = { chargeId: args.chargeId, until: Date.now() + result.captureFailureWindowMs };
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
      lastOutcome = 'failed';
      if (isUnsealed(err)) {
        // A confirm the API did not seal: refused before its plan, so the payment is as it was; the update fails.
        state.status = before;
        describe();
        throw err;
      }
      const permanent = permanentDataFailure(err);
      if (permanent) return needsAttention('walk', permanent);
      state.lastError = { code: 'internal_error', message: String(err) };
      setStatus(state.status);
    }
  }

  /**
   * Waits, durably, for the customer to authenticate: the processor's notification or the customer's
   * return completes the step; AUTHENTICATION_TIMEOUT fails the payment (`authentication_timeout`, a
   * hard stop); a cancel ends the wait. Either way the charge is settled before the walk goes on.
   */
  async function awaitAuthentication(args: AttemptArgs): Promise<AttemptResult> {
    const timeoutMs = input.authenticationTimeoutMs ?? DEFAULT_AUTHENTICATION_TIMEOUT_MS;
    const since = Date.now();
    state.authentication = { chargeId: args.chargeId, since };
    describe();
    try {
      for (;;) {
        const remaining = since + timeoutMs - Date.now();
        const woken = remaining > 0 && await condition(
          () => abandonRequested || customerReturned === args.chargeId || hasNotification('authorize', args.chargeId), remaining,
        );
        const notification = takeNotification('authorize', args.chargeId);
        if (notification) {
          // `requires_action` still: the signal named no stored event (forged), so the wait goes on.
          const result = await providers.completeAuthentication({ ...args, notification });
          if (result.outcome !== 'requires_action') return result;
          continue;
        }
        if (!woken || abandonRequested) {
          const abandoned = await abandon(args);
          if (!abandoned) continue;
          if (abandoned.lateAuthorizationWindowMs) givenUp.set(args.chargeId, Date.now() + abandoned.lateAuthorizationWindowMs);
          return abandoned;
        }
        customerReturned = undefined;
        const result = await providers.completeAuthentication({ ...args, returned: true });
        if (result.outcome !== 'requires_action') return result;
      }
    } finally {
      state.authentication = undefined;
      customerReturned = undefined;
      describe();
    }
  }

  /** Gives the wait up (timed out, or canceled); undefined when the cancel had no valid seal: the wait goes on. */
  async function abandon(args: AttemptArgs): Promise<AttemptResult | undefined> {
    const command = abandonRequested ? abandonCommand : undefined;
    try {
      return await providers.abandonAuthentication({ ...args, reason: abandonRequested ? 'canceled' : 'authentication_timeout', ...(command ? { command } : {}) });
    } catch (err) {
      if (!isUnsealed(err)) throw err;
      abandonRequested = false;
      abandonCommand = undefined;
      return undefined;
    }
  }

  /**
   * Settles a charge whose authorize got no answer: by the processor's notification as soon as one is
   * signalled, else by asking the provider, with backoff, until it tells. Never moves on before.
   */
  async function reconcile(args: AttemptArgs, attempt: PaymentState['attempts'][number]): Promise<AttemptResult> {
    state.reconciling = true;
    state.attempts[state.attempts.length - 1] = { ...attempt, outcome: 'unknown' };
    describe();
    let delay = 1000;
    try {
      for (;;) {
        await condition(() => hasNotification('authorize', args.chargeId), delay);
        const notification = takeNotification('authorize', args.chargeId);
        const result = await providers.reconcileCharge(notification ? { ...args, notification } : args);
        if (!result.pending) return result;
        delay = Math.min(delay * 2, RECONCILE_MAX_DELAY_MS);
      }
    } finally {
      state.reconciling = false;
    }
  }

  /**
   * Listens, one durable timer, until the capture's window ends for the processor reporting the capture made
   * with the authorization failed. Approvals change nothing and are not even asked about; a failure the stored
   * event backs takes the payment back to AUTHORIZED (true: it goes on as any AUTHORIZED payment) or, the
   * charge refunded meanwhile, flags it for an operator. A forged one changes nothing: the watch goes on.
   */
  async function watchForCaptureFailure(watch: { chargeId: string; until: number }): Promise<boolean> {
    captureWatch = undefined;
    state.captureFailureWatch = watch;
    describe();
    let over = false;
    void sleep(Math.max(watch.until - Date.now(), 1)).then(() => { over = true; });
    try {
      for (;;) {
        await condition(() => over || hasNotification('capture', watch.chargeId) || lateNotice() >= 0);
        const notification = takeNotification('capture', watch.chargeId);
        if (!notification && !over) {
          // A given-up charge's notification: the loop applies it, then the watch goes on.
          captureWatch = watch;
          return true;
        }
        if (!notification) return false;
        if (notification.outcome?.kind === 'approved') continue;
        const outcome = await run('captureFailed', () => captureFailed(watch.chargeId, notification));
        if (outcome !== 'ignored') return outcome === 'reverted';
      }
    } catch (err) {
      await unlessNeedsAttention('captureFailed', err);
      return false;
    } finally {
      state.captureFailureWatch = undefined;
      describe();
    }
  }

  /** Applies one capture-failure notification (its stored event decides, settleCaptureFailure); answers what it did. */
  async function captureFailed(chargeId: string, notification: ProviderEventSignal): Promise<CaptureFailureResult['outcome']> {
    const result = await records.settleCaptureFailure({ ...ref, chargeId, notification, context: input.context });
    if (result.outcome === 'needs_attention') {
      const message = `The processor reported the capture failed (provider event ${notification.eventId}) with the money state no longer as captured (${result.message}).`;
      await needsAttention('captureFailed', { message }, CAPTURE_FAILED_AFTER_REFUND);
    }
    if (result.outcome !== 'reverted') return result.outcome;
    captureFailedCharge = chargeId;
    // Whatever arrived about that capture meanwhile is stale; and its key is spent: a capture now goes under the next.
    for (let i = notifications.length - 1; i >= 0; i--) {
      if (notifications[i].operation === 'capture' && notifications[i].chargeId === chargeId) notifications.splice(i, 1);
    }
    captures = Math.max(captures, 1);
    state.capturedAmount = 0;
    state.lastError = { code: 'capture_failed' };
    setStatus('AUTHORIZED');
    await publish(result.eventIds);
    return result.outcome;
  }

  /**
   * Applies one notification about a given-up charge, under the lock (reverseLateAuthorization decides from
   * the charge's stored notifications): reversed, or voided after all, the charge is listened for no more; a
   * reversal the processor refused flags the payment for an operator. A forged one changes nothing.
   */
  async function reverseLate(notification: ProviderEventSignal): Promise<void> {
    const { chargeId } = notification;
    try {
      const result = await lock.runExclusive(() => providers.reverseLateAuthorization({ ...ref, chargeId, notification, context: input.context }));
      if (result.outcome === 'reversed' || result.outcome === 'voided' || result.outcome === 'refused') givenUp.delete(chargeId);
      describe();
      if (result.outcome === 'refused') {
        const message = `The processor authorized the given-up charge ${chargeId} and refused its reversal (${result.message ?? 'no reason'}).`;
        await needsAttention('reverseLateAuthorization', { message }, LATE_AUTHORIZATION_NOT_REVERSED);
      }
    } catch (err) {
      const permanent = permanentDataFailure(err);
      if (permanent) return needsAttention('reverseLateAuthorization', permanent);
      // Failed for good (its provider config gone): the stored event stays for an operator; the payment goes on.
      log.error('reversing a late authorization failed', { paymentId: input.paymentId, chargeId, error: String(err) });
    }
  }

  /**
   * A final payment with given-up charges the processor may still report authorized: listens (one durable
   * timer) until the last one's window ends. True when a notification about one came (the loop applies it).
   */
  async function listenForLateAuthorizations(): Promise<boolean> {
    const until = Math.max(0, ...givenUp.values());
    if (state.needsAttention || until <= Date.now()) return false;
    let over = false;
    void sleep(until - Date.now()).then(() => { over = true; });
    await condition(() => over || lateNotice() >= 0);
    return lateNotice() >= 0;
  }

  // The payment row exists before anything else happens; `create` answers once it does.
  try {
    await record();
  } catch (err) {
    await unlessNeedsAttention('create', err);
  }

  // Each expiry is one durable timer, armed once and never canceled: a finished workflow simply drops it.
  let paymentExpired = false;
  let authExpired = false;
  let authTimerArmed = false;
  const expireAt = (deadline: number) => sleep(Math.max(deadline - Date.now(), 1));
  // The payment's expiry is armed only once the payment waits in a status it can expire from, counted
  // from the workflow's start: a create and confirm that succeeds at once never starts a timer (each one
  // a task in the server). Starts from before the lean create started it here, with the row.
  let paymentTimerArmed = !lean;
  if (paymentTimerArmed) void sleep(input.paymentExpiryMs).then(() => { paymentExpired = true; });
  const moment = () => `${state.status}/${lock.isLocked()}/${paymentExpired}/${authExpired}/${notifications.length}/${state.pendingOperation?.operation}`;
  for (;;) {
    if (lock.isLocked()) {
      // A command is running: look again when it has ended.
    } else if (lateNotice() >= 0) {
      // A charge given up while its customer authenticated, reported authorized (or its void refused): reversed, whatever the payment's status.
      await reverseLate(notifications.splice(lateNotice(), 1)[0]);
      continue;
    } else if (FINAL_PAYMENT_STATUSES.includes(state.status) || state.needsAttention) {
      // A capture the processor may still report failed is listened for first; failed, the payment is AUTHORIZED again.
      if (captureWatch && state.status === 'SUCCEEDED' && !state.needsAttention && await watchForCaptureFailure(captureWatch)) continue;
      // Then a given-up charge the processor may still report authorized.
      if (await listenForLateAuthorizations()) continue;
      break;
    } else if (state.pendingOperation) {
      // A capture or void the processor received: its notification completes it (no timer runs meanwhile).
      const pending = state.pendingOperation;
      const notification = takeNotification(pending.operation, pending.chargeId);
      if (notification) {
        try {
          await run('settle', () => settle(pending, notification));
        } catch (err) {
          await unlessNeedsAttention('settle', err);
        }
        continue;
      }
    } else if (allows('authExpiry', state.status)) {
      if (!authTimerArmed) {
        authTimerArmed = true;
        void expireAt(authorizedAt + input.authExpiryMs).then(() => { authExpired = true; });
      }
      if (authExpired) {
        try {
          await run('authExpiry', () => cancel('authorization_expired'));
        } catch (err) {
          await unlessNeedsAttention('authExpiry', err);
        }
        continue;
      }
    } else if (allows('paymentExpiry', state.status)) {
      if (!paymentTimerArmed) {
        paymentTimerArmed = true;
        void expireAt(workflowInfo().startTime.getTime() + input.paymentExpiryMs).then(() => { paymentExpired = true; });
      }
      if (paymentExpired) {
        try {
          await run('paymentExpiry', () => cancel('expired'));
        } catch (err) {
          await unlessNeedsAttention('paymentExpiry', err);
        }
        continue;
      }
    }
    const seen = moment();
    await condition(() => moment() !== seen);
  }
  if (!allHandlersFinished()) await condition(allHandlersFinished);
  return state;
}
