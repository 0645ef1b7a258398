import { ApplicationFailure, log, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { permanentDataFailure, type PermanentDataFailure } from '../../lib/data-errors';
import { withArticle } from '../../lib/errors';
import { SEARCH_ATTRIBUTES } from '../../contracts/temporal';
import { idRandom, mintId } from '../ids';
import {
  allows, PAYMENT_ACTIVITY_FAILURES, PAYMENT_FAILURES, type ConfirmInput, type PaymentInput, type PlanArgs, type PaymentRef, type PaymentState,
  type PaymentStatus, type PaymentTransition,
} from '../../contracts/payments';
import { WorkflowLock } from './lock';
import { Notifications } from './notifications';
import { assertLeadsTo, restingPhase, type Phase } from './phase';
import { records } from './proxies';
import { plainAmount } from '../../lib/money';

/** What the lock's holder is: a transition of the table, or the reversal of a given-up charge (no status change). */
export type Holder = PaymentTransition | 'reverseLateAuthorization';

/** The facts the `state` query shows, less those the phase tells (PaymentCore.view). */
export type PaymentFacts = Omit<PaymentState, 'reconciling' | 'pendingOperation' | 'authentication'>;

export function invalidState(status: PaymentStatus, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: PAYMENT_FAILURES.invalidState, message, details: [{ status }], nonRetryable: true });
}

/**
 * A payment's state and the one lock every command and timer runs under; the steps (walk.ts,
 * authentication.ts, operations.ts, timers.ts) read and change the payment only through it.
 */
export class PaymentCore {
  readonly ref: PaymentRef;
  readonly facts: PaymentFacts;
  phase: Phase = { kind: 'creating' };
  /** One lock around every command and timer path: validators refuse (409) while it is held. */
  readonly lock = new WorkflowLock<Holder>();
  readonly notifications = new Notifications();
  /** When the payment last became AUTHORIZED (ms since the epoch): its authorization expires from then. */
  authorizedAt = 0;
  /** The charge the walk got approved: captures and voids go to it. */
  approvedChargeId: string | undefined;
  /** Captures and voids of the approved charge sent so far: each command's processor key (operationKey). */
  readonly sent = { capture: 0, void: 0 };
  /** The walk's charge was captured with its authorization, and the processor may still report that capture failed, until `until`. */
  captureWatch: { chargeId: string; until: number } | undefined;
  /** What the search attributes say now: only changes are upserted, together, as one history event. */
  private readonly visible: { status: PaymentStatus; providerConfigId?: string } = { status: 'CREATED' };

  /** The workflow's own random stream for ids (see mintId): nothing else draws from it. */
  private readonly random = idRandom();

  constructor(readonly input: PaymentInput) {
    this.ref = { paymentId: input.paymentId, accountId: input.accountId, workspaceId: input.workspaceId, environment: input.environment };
    this.facts = {
      paymentId: input.paymentId, status: 'CREATED', amount: input.amount, currency: input.currency,
      candidates: [], attempts: [], authorizedAmount: 0, capturedAmount: 0,
    };
  }

  /**
   * A charge or plan id. A local activity's ids are minted inside the workflow task that runs it, and a
   * retried task (its worker died) must mint them alike: from the workflow's start, or the next worker
   * would charge again under a new idempotency key.
   */
  mint(prefix: 'ch' | 'rp'): string {
    return mintId(prefix, workflowInfo().startTime.getTime(), this.random);
  }

  /** The plan a confirm asks for. */
  planArgs(confirm: ConfirmInput): PlanArgs {
    return {
      ...this.ref, routingPlanId: this.mint('rp'), paymentMethodId: confirm.paymentMethodId,
      installments: confirm.installments, routing: confirm.routing, context: confirm.context,
      ...(confirm.returnUrl ? { returnUrl: confirm.returnUrl } : {}),
      ...(confirm.seal ? { seal: confirm.seal } : {}),
    };
  }

  get status(): PaymentStatus {
    return this.facts.status;
  }

  /** The `state` query's answer (and the workflow's result). */
  view(): PaymentState {
    const phase = this.phase;
    return {
      ...this.facts,
      reconciling: phase.kind === 'reconciling',
      ...(phase.kind === 'authorized' && phase.pending ? { pendingOperation: phase.pending } : {}),
      ...(phase.kind === 'awaitingAuthentication' ? { authentication: { chargeId: phase.chargeId, since: phase.since } } : {}),
    };
  }

  /**
   * Runs one transition under the lock; every command and timer goes through here. Once it ends the
   * payment rests in the phase its status says, unless a capture or void awaits the processor.
   */
  run<T>(transition: PaymentTransition, fn: () => Promise<T>): Promise<T> {
    return this.lock.runExclusive(transition, async () => {
      if (!allows(transition, this.status)) throw invalidState(this.status, `${withArticle(this.status)} payment cannot take ${transition}.`);
      try {
        return await fn();
      } catch (err) {
        const permanent = permanentDataFailure(err);
        if (permanent) await this.needsAttention(transition, permanent);
        throw err;
      } finally {
        if (!(this.phase.kind === 'authorized' && this.status === 'AUTHORIZED')) this.phase = restingPhase(this.status);
      }
    });
  }

  /** Moves the status, through the table: the lock's holder must be a transition that may leave the payment there. */
  changeStatus(status: PaymentStatus): void {
    const holder = this.lock.heldBy();
    assertLeadsTo(holder === 'reverseLateAuthorization' ? undefined : holder, this.status, status);
    if (status === 'AUTHORIZED' && this.status !== 'AUTHORIZED') this.authorizedAt = Date.now();
    this.facts.status = status;
  }

  /** Puts a status back as it was before a command that changed nothing (a confirm refused by its activity), through the table. */
  restoreStatus(status: PaymentStatus): void {
    this.changeStatus(status);
    this.describe();
  }

  /**
   * Moves the status and shows it, with the candidate: the current one unless told otherwise (a no-op where
   * it was upserted as it became current; the one upsert where its attempt's outcome came with the row).
   */
  setStatus(status: PaymentStatus, providerConfigId = this.currentCandidate()?.providerConfigId): void {
    this.changeStatus(status);
    const visible = this.visible;
    const changes = [
      ...(status !== visible.status ? [{ key: SEARCH_ATTRIBUTES.PaymentStatus, value: status }] : []),
      ...(providerConfigId && providerConfigId !== visible.providerConfigId ? [{ key: SEARCH_ATTRIBUTES.ProviderConfigId, value: providerConfigId }] : []),
    ];
    if (changes.length) upsertSearchAttributes(changes);
    visible.status = status;
    visible.providerConfigId = providerConfigId ?? visible.providerConfigId;
    this.describe();
  }

  currentCandidate() {
    return this.facts.currentIndex !== undefined ? this.facts.candidates[this.facts.currentIndex] : undefined;
  }

  /** The workflow's details in the Temporal UI: the payment, where it is, and what it waits for. */
  describe(): void {
    const { facts, phase, input } = this;
    const current = this.currentCandidate();
    setCurrentDetails([
      `**${facts.status}** · ${plainAmount(input.amount, input.currency)} · account ${input.accountId}`,
      current ? `candidate ${facts.currentIndex! + 1}/${facts.candidates.length}: ${current.providerConfigId}` : 'no candidate yet',
      phase.kind === 'reconciling' ? 'reconciling an unknown provider outcome' : '',
      phase.kind === 'authorized' && phase.pending ? `${phase.pending.operation} received by the processor, awaiting its notification` : '',
      phase.kind === 'awaitingAuthentication' ? `waiting for customer authentication (since ${new Date(phase.since).toISOString()}, charge ${phase.chargeId})` : '',
      facts.lastError ? `last error: ${facts.lastError.code}` : '',
      facts.needsAttention ? `NEEDS ATTENTION: ${facts.needsAttention.step} stopped on ${facts.needsAttention.reason}; no more commands` : '',
      facts.captureFailureWatch ? `listening until ${new Date(facts.captureFailureWatch.until).toISOString()} for the processor reporting the capture failed after all` : '',
      this.notifications.givenUp.size ? `given up, reversed if the processor reports them authorized: ${[...this.notifications.givenUp.keys()].join(', ')}` : '',
    ].filter(Boolean).join('\n'));
  }

  /**
   * A step met a write Postgres refuses for good (an activity's `permanent_data_error`): retrying would
   * loop forever, so the payment is flagged for an operator, once, keeping the status the money is in,
   * and the workflow takes no more commands and ends (docs/operators.md#needs-attention).
   */
  async needsAttention(step: string, failure: PermanentDataFailure, reason: string = PAYMENT_ACTIVITY_FAILURES.permanentDataError): Promise<void> {
    if (this.facts.needsAttention) return;
    this.facts.needsAttention = { reason, step, since: Date.now() };
    this.facts.lastError = { code: reason, message: failure.message };
    log.error('payment needs attention', { paymentId: this.input.paymentId, step, failure: failure.message });
    this.describe();
    try {
      await records.flagPaymentNeedsAttention({ ...this.ref, reason, step, status: this.status, failure });
    } catch (flagErr) {
      // The state query and the workflow's details still say it.
      log.error('flagging the payment failed', { paymentId: this.input.paymentId, error: String(flagErr) });
    }
  }

  /** For steps outside an update (the row's write, the timers): a permanent data error ends the workflow, flagged, instead of failing it. */
  async unlessNeedsAttention(step: string, err: unknown): Promise<void> {
    const permanent = permanentDataFailure(err);
    if (!permanent) throw err;
    await this.needsAttention(step, permanent);
  }
}
