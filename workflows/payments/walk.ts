import { condition, log } from '@temporalio/workflow';
import { permanentDataFailure } from '../../lib/data-errors';
import { nextStep, type NextStep } from '../../lib/payments/cascade';
import { isUnsealed, awaitAuthentication } from './authentication';
import type { AttemptArgs, AttemptResult, CommandResult, ConfirmInput, FirstAttemptArgs, PaymentState, PaymentStatus, PlanResult } from '../../contracts/payments';
import { firstAttemptOf } from '../../contracts/payments';
import type { PaymentCore } from './core';
import { IllegalTransition } from './phase';
import { attempts, localRecords, providers } from './proxies';

const RECONCILE_MAX_DELAY_MS = 5 * 60_000;

/** The first attempt of a create's confirm, made with the row: its outcome (absent when it failed for good there: the walk makes it again, under the same charge id). */
export interface AttemptWithRow { attempt: FirstAttemptArgs; result?: AttemptResult }

/** What one confirm's walk starts from: the plan and first attempt when the create made them with the row. */
export interface WalkStart { plan?: PlanResult; withRow?: AttemptWithRow; before: PaymentStatus }

/**
 * Walks the routing plan of one confirm: one charge per attempt, and after each the cascade rule
 * (lib/payments/cascade.ts) says what comes next. The payment always ends the walk in a status; only a
 * confirm the API did not seal throws, the payment back as it was (`before`).
 */
export async function walk(core: PaymentCore, confirm: ConfirmInput, start: WalkStart): Promise<CommandResult['outcome']> {
  try {
    const plan = start.plan ?? await localRecords.planRoute(core.planArgs(confirm));
    core.facts.routingPlanId = plan.routingPlanId;
    core.facts.candidates = plan.candidates.map((c) => ({ providerConfigId: c.providerConfigId, providerId: c.providerId, methodId: c.methodId, estimatedFee: c.estimatedFee }));
    core.facts.currentIndex = undefined;
    if (plan.candidates.length === 0) {
      core.facts.lastError = { code: 'no_eligible_provider' };
      core.setStatus('FAILED');
      return 'no_eligible_provider';
    }
    await attemptEach(core, confirm, plan, start.withRow);
    return core.status === 'SUCCEEDED' ? 'succeeded' : core.status === 'AUTHORIZED' ? 'authorized' : 'failed';
  } catch (err) {
    if (err instanceof IllegalTransition) throw err;
    // Only a non-retryable activity failure lands here; the payment stays visible for an operator.
    log.error('payment walk failed', { paymentId: core.input.paymentId, error: String(err) });
    if (isUnsealed(err)) {
      // A confirm the API did not seal: refused before its plan, so the payment is as it was; the update fails.
      core.restoreStatus(start.before);
      throw err;
    }
    const permanent = permanentDataFailure(err);
    if (permanent) {
      await core.needsAttention('walk', permanent);
      return 'failed';
    }
    core.facts.lastError = { code: 'internal_error', message: String(err) };
    core.setStatus(core.status);
    return 'failed';
  }
}

/** The plan's candidates in order, until the cascade rule stops the walk (or a cancel ends it). */
async function attemptEach(core: PaymentCore, confirm: ConfirmInput, plan: PlanResult, withRow?: AttemptWithRow): Promise<void> {
  let attemptNo = 0;
  /** The charge whose successful authentication later candidates get (no second challenge). */
  let authenticatedBy: string | undefined;
  /** The next attempt is a step-up: the same candidate, with 3-D Secure asked for. */
  let stepUp = false;
  for (let i = 0; i < plan.candidates.length;) {
    const candidate = plan.candidates[i];
    const fromRow = attemptNo === 0 ? withRow : undefined;
    const made = fromRow?.result;
    core.facts.currentIndex = i;
    // Its outcome known, the candidate goes up with the status it led to (one upsert instead of two),
    // unless that outcome is unknown: a reconciliation can take long, and the candidate shows meanwhile.
    if (made && made.outcome !== 'unknown') core.changeStatus('PROCESSING');
    else core.setStatus('PROCESSING', candidate.providerConfigId);
    attemptNo += 1;
    const threeDSecure = stepUp || authenticatedBy
      ? { ...(stepUp ? { requested: true } : {}), ...(authenticatedBy ? { authenticatedBy } : {}) }
      : undefined;
    const args: AttemptArgs = fromRow ? firstAttemptOf(fromRow.attempt, plan, candidate) : {
      ...core.ref, chargeId: core.mint('ch'), routingPlanId: plan.routingPlanId, attemptNo, candidate,
      paymentMethodId: confirm.paymentMethodId, capture: core.input.autoCapture,
      lastCandidate: i === plan.candidates.length - 1, context: confirm.context,
      ...(attemptNo !== i + 1 ? { candidateIndex: i } : {}),
      ...(confirm.returnUrl ? { returnUrl: confirm.returnUrl } : {}),
      ...(threeDSecure ? { threeDSecure } : {}),
      ...(core.input.recurring ? { recurring: core.input.recurring } : {}),
    };
    const { result, canceled } = await attempt(core, args, made);
    if (result.authenticated) authenticatedBy = args.chargeId;
    if (canceled && result.outcome !== 'approved') {
      // Canceled while the customer was authenticating: the cancel that asked takes it from here.
      return;
    }
    const step = nextStep({ outcome: result.outcome, decline: result.decline, lastCandidate: args.lastCandidate, stepUpAsked: args.threeDSecure?.requested === true });
    stepUp = step.kind === 'step_up';
    await settleAttempt(core, args, result, step);
    if (step.kind === 'stop') return;
    // Anything but a step-up moves on (an outcome still unsettled after its reconciliation included).
    if (step.kind !== 'step_up') i += 1;
  }
}

/**
 * One attempt, to a known outcome: an unknown one reconciled, a customer's authentication waited for.
 * `made`: its outcome when the create made it with the row.
 */
async function attempt(core: PaymentCore, args: AttemptArgs, made?: AttemptResult): Promise<{ result: AttemptResult; canceled: boolean }> {
  const summary = { chargeId: args.chargeId, attemptNo: args.attemptNo, providerConfigId: args.candidate.providerConfigId, outcome: 'pending' as const };
  core.facts.attempts.push(summary);
  let result = made ?? await attempts.authorizeCharge(args);
  let canceled = false;
  if (result.outcome === 'unknown') result = await reconcile(core, args, summary);
  if (result.outcome === 'requires_action') {
    core.setStatus(result.paymentStatus);
    ({ result, canceled } = await awaitAuthentication(core, args));
    if (result.outcome === 'unknown') result = await reconcile(core, args, summary);
  }
  core.facts.attempts[core.facts.attempts.length - 1] = { ...summary, outcome: result.outcome, declineCode: result.declineCode };
  return { result, canceled };
}

/** Records where an attempt left the payment; a step-up keeps it PROCESSING (the activity did too) for the same candidate's retry. */
async function settleAttempt(core: PaymentCore, args: AttemptArgs, result: AttemptResult, step: NextStep): Promise<void> {
  if (step.kind === 'step_up') {
    return;
  }
  if (result.outcome === 'approved') {
    const amount = core.input.amount;
    core.approvedChargeId = args.chargeId;
    core.facts.authorizedAmount = amount;
    if (result.paymentStatus === 'SUCCEEDED') core.facts.capturedAmount = amount;
    if (result.paymentStatus === 'SUCCEEDED' && result.captureFailureWindowMs) core.captureWatch = { chargeId: args.chargeId, until: Date.now() + result.captureFailureWindowMs };
  }
  if (result.declineCode) core.facts.lastError = { code: result.declineCode };
  core.setStatus(result.paymentStatus);
}

/**
 * Settles a charge whose authorize got no answer: by the processor's notification as soon as one is
 * signalled, else by asking the provider, with backoff, until it tells. Never moves on before.
 */
async function reconcile(core: PaymentCore, args: AttemptArgs, summary: PaymentState['attempts'][number]): Promise<AttemptResult> {
  core.phase = { kind: 'reconciling', chargeId: args.chargeId };
  core.facts.attempts[core.facts.attempts.length - 1] = { ...summary, outcome: 'unknown' };
  core.describe();
  let delay = 1000;
  try {
    for (;;) {
      await condition(() => core.notifications.has('authorize', args.chargeId), delay);
      const notification = core.notifications.take('authorize', args.chargeId);
      const result = await providers.reconcileCharge(notification ? { ...args, notification } : args);
      if (!result.pending) return result;
      delay = Math.min(delay * 2, RECONCILE_MAX_DELAY_MS);
    }
  } finally {
    core.phase = { kind: 'walking' };
  }
}
