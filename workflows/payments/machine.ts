import { allHandlersFinished, ApplicationFailure, condition } from '@temporalio/workflow';
import type { ProviderEventSignal } from '../../contracts/temporal';
import {
  FINAL_PAYMENT_STATUSES, MAX_FAILED_CONFIRMATIONS, PAYMENT_FAILURES, TOO_MANY_ATTEMPTS,
  type AuthenticationReturnInput, type CancelInput, type CaptureInput, type CommandResult, type ConfirmInput,
  type CreateInput, type FirstAttemptArgs, type PaymentInput, type PaymentState, type PaymentStatus, type PlanResult, type SealedCommand,
} from '../../contracts/payments';
import { invalidState, PaymentCore } from './core';
import { cancel, capture, pendingOperation, refuseCapture, refuseCommand, settle } from './operations';
import { attempts, localRecords } from './proxies';
import { Expiries, lateNotice, listenForLateAuthorizations, reverseLate, watchForCaptureFailure } from './timers';
import { walk, type AttemptWithRow } from './walk';
import { tellCheckoutSession } from './checkout';
import { tellInvoiceSubscription } from './invoice';

/** How long a capture waits for a run holding the lock to end (captureWaitsItsTurn) before it is refused. */
const CAPTURE_WAIT = '10 seconds';

/** What the main loop does next, once no command holds the lock. */
type Due =
  | { kind: 'reverseLate' } | { kind: 'end' } | { kind: 'settle' }
  | { kind: 'arm' | 'expire'; expiry: 'authExpiry' | 'paymentExpiry' };

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

/**
 * One payment's workflow, after Temporal's `safe-message-handlers` sample: every update, signal and
 * query delegates to one method here, and every command and timer runs under the core's one lock. The
 * phase (phase.ts) says what the payment waits for; the status moves only through the transition table.
 */
export class PaymentMachine {
  private readonly core: PaymentCore;
  private readonly expiries: Expiries;
  /** The row's write, once: a create that carries a confirm makes the plan and its first attempt with it. */
  private recording: Promise<PlanResult | undefined> | undefined;
  /** That first attempt, for the walk of the create's confirm (and no later one). */
  private withRow: AttemptWithRow | undefined;
  /** The checkout session told its payment is paid (checkout.ts): awaited before the workflow ends. */
  private sessionTold: Promise<void> | undefined;
  /** The subscription of the invoice this payment pays, told each time a walk ends (invoice.ts): awaited before the end too. */
  private invoiceTold: Promise<unknown> | undefined;
  /**
   * Confirmations whose walk ended FAILED, as the row counts them (`failed_confirmations`): at
   * MAX_FAILED_CONFIRMATIONS the validator refuses more. Counted from the history, so a replay counts the same.
   */
  private failedConfirmations = 0;

  constructor(input: PaymentInput) {
    this.core = new PaymentCore(input);
    this.expiries = new Expiries(this.core);
  }

  state(): PaymentState {
    return this.core.view();
  }

  providerEvent(event: ProviderEventSignal): void {
    const captureAwaited = pendingOperation(this.core) !== undefined || this.core.lock.heldBy() === 'capture';
    this.core.notifications.receive(event, captureAwaited);
  }

  /**
   * Answers once the row is written; with a confirm (create and confirm in one request), once that
   * confirm's walk has ended, exactly as the `confirm` update would have.
   */
  async create(args?: CreateInput): Promise<CommandResult> {
    const confirm = args?.confirm;
    if (!confirm) {
      await condition(() => this.created() || this.core.facts.needsAttention !== undefined);
      return { status: this.core.status };
    }
    const recorded = this.record(confirm);
    // Locked from the start: no confirm, capture or cancel can slip in before this confirm's walk.
    return this.untilCustomerOrEnd(this.core.run('confirm', async () => this.confirmWalk(confirm, await recorded)));
  }

  validateConfirm(): void {
    if (!this.created()) throw invalidState(this.core.status, 'The payment is still being created.');
    refuseCommand(this.core, 'confirm', 'confirmed');
    if (this.failedConfirmations >= MAX_FAILED_CONFIRMATIONS) {
      throw ApplicationFailure.create({
        type: PAYMENT_FAILURES.tooManyAttempts, nonRetryable: true, details: [{ status: this.core.status }],
        message: `The payment has failed ${this.failedConfirmations} confirmations and takes no more.`,
      });
    }
  }

  /** Answers when the walk ends, or as soon as the payment waits for the customer; the API stops waiting after 10 s. */
  confirm(args: ConfirmInput): Promise<CommandResult> {
    return this.untilCustomerOrEnd(this.core.run('confirm', () => this.confirmWalk(args)));
  }

  validateCapture({ amount }: CaptureInput): void {
    if (this.captureWaitsItsTurn()) return;
    refuseCommand(this.core, 'capture', 'captured');
    refuseCapture(this.core, amount);
  }

  async capture(args: CaptureInput): Promise<CommandResult> {
    // Only when held: a wait on a free lock would add a timer to histories that never had one.
    if (this.core.lock.isLocked()) {
      await condition(() => !this.captureWaitsItsTurn(), CAPTURE_WAIT);
      if (this.core.lock.isLocked()) refuseCommand(this.core, 'capture', 'captured');
    }
    return this.core.run('capture', () => capture(this.core, args));
  }

  validateCancel(): void {
    refuseCommand(this.core, 'cancel', 'canceled');
  }

  /** Waiting for the customer: the wait ends first (the charge voided at the processor), then the cancel runs. */
  cancel({ reason, seal, context }: CancelInput): Promise<CommandResult> {
    const command: SealedCommand = { ...(reason !== undefined ? { reason } : {}), ...(seal ? { seal } : {}) };
    const { core } = this;
    if (core.phase.kind === 'awaitingAuthentication') core.phase = { ...core.phase, cancel: { command } };
    return core.run('cancel', async (): Promise<CommandResult> => {
      await cancel(core, reason ?? 'requested_by_customer', context, command);
      return { status: core.status, outcome: pendingOperation(core) ? 'cancel_pending' : 'canceled' };
    });
  }

  validateAuthenticationReturn({ chargeId }: AuthenticationReturnInput): void {
    if (typeof chargeId !== 'string' || this.waitingCharge() !== chargeId) throw invalidState(this.core.status, 'No authentication of this charge is waiting.');
  }

  /**
   * The customer is back from authenticating: the waiting walk completes the step with the processor.
   * Answers at once (the API reads the row for the outcome), so no return holds an update slot.
   */
  authenticationReturn({ chargeId }: AuthenticationReturnInput): CommandResult {
    const { core } = this;
    if (core.phase.kind === 'awaitingAuthentication' && core.phase.chargeId === chargeId) core.phase = { ...core.phase, returned: true };
    return { status: core.status, outcome: outcomeOf(core.status) };
  }

  /** The workflow's life: the row first, then the timers and notifications no command handles, until the payment is final. */
  async run(): Promise<PaymentState> {
    try {
      await this.record();
    } catch (err) {
      await this.core.unlessNeedsAttention('create', err);
    }
    for (;;) {
      await condition(() => this.due() !== undefined);
      if (!await this.act(this.due()!)) break;
    }
    if (!allHandlersFinished()) await condition(allHandlersFinished);
    await this.sessionTold;
    await this.invoiceTold;
    return this.core.view();
  }

  /** Nothing while a command holds the lock; else, in this order: a late notice, the end, a settlement, an expiry. */
  private due(): Due | undefined {
    const { core } = this;
    if (core.lock.isLocked()) return undefined;
    if (lateNotice(core)) return { kind: 'reverseLate' };
    if (FINAL_PAYMENT_STATUSES.includes(core.status) || core.facts.needsAttention) return { kind: 'end' };
    const pending = pendingOperation(core);
    if (pending) return core.notifications.has(pending.operation, pending.chargeId) ? { kind: 'settle' } : undefined;
    const expiry = this.expiries.due();
    return expiry && { kind: expiry.action === 'arm' ? 'arm' : 'expire', expiry: expiry.expiry };
  }

  /** Does what is due; false once the workflow may end. */
  private async act(due: Due): Promise<boolean> {
    const { core } = this;
    switch (due.kind) {
      case 'reverseLate':
        // A charge given up while its customer authenticated, reported authorized (or its void refused): reversed, whatever the payment's status.
        await reverseLate(core, core.notifications.takeLateNotice()!);
        return true;
      case 'end':
        // A capture the processor may still report failed is listened for first; failed, the payment is AUTHORIZED again.
        if (core.captureWatch && core.status === 'SUCCEEDED' && !core.facts.needsAttention && await watchForCaptureFailure(core, core.captureWatch)) return true;
        // Then a given-up charge the processor may still report authorized.
        return listenForLateAuthorizations(core);
      case 'settle': {
        const pending = pendingOperation(core)!;
        await this.unlessNeedsAttention('settle', () => settle(core, pending, core.notifications.take(pending.operation, pending.chargeId)!));
        return true;
      }
      case 'arm':
        this.expiries.arm(due.expiry);
        return true;
      case 'expire':
        await this.unlessNeedsAttention(due.expiry, () => cancel(core, due.expiry === 'authExpiry' ? 'authorization_expired' : 'expired'));
        return true;
    }
  }

  /** A timer's or a notification's transition: a permanent data error flags the payment instead of failing the workflow. */
  private async unlessNeedsAttention(transition: 'settle' | 'authExpiry' | 'paymentExpiry', fn: () => Promise<void>): Promise<void> {
    try {
      await this.core.run(transition, fn);
    } catch (err) {
      await this.core.unlessNeedsAttention(transition, err);
    }
  }

  private created(): boolean {
    return this.core.phase.kind !== 'creating';
  }

  private waitingCharge(): string | undefined {
    return this.core.phase.kind === 'awaitingAuthentication' ? this.core.phase.chargeId : undefined;
  }

  /**
   * A capture that arrives while the lock is held by a run needing nothing from outside waits its turn
   * instead of a 409: after a worker died between writing the outcome and finishing its workflow task,
   * the merchant already reads AUTHORIZED while the workflow, until the task is run again, says
   * PROCESSING. It waits 10 s at most, and not once the run waits on the outside (a reconciliation, the
   * customer, a processor's notification); holding the lock, the handler checks again.
   */
  private captureWaitsItsTurn(): boolean {
    const { core } = this;
    const outside = core.phase.kind === 'reconciling' || core.phase.kind === 'awaitingAuthentication' || pendingOperation(core) !== undefined;
    return core.lock.isLocked() && !outside && !core.facts.needsAttention;
  }

  /**
   * Writes the payment row, once. A create that carries a confirm comes first (its handler runs as it is
   * registered, before the workflow's own first step): the row, that confirm's plan and the plan's first
   * attempt are one local activity, which answers the plan (its events include `payment_intent.created`).
   */
  private record(confirm?: ConfirmInput): Promise<PlanResult | undefined> {
    return this.recording ??= (async () => {
      const { core } = this;
      if (!confirm) {
        await localRecords.createPaymentRecord(core.input);
        this.rowWritten();
        return undefined;
      }
      const plan = core.planArgs(confirm);
      const attempt: FirstAttemptArgs = {
        ...core.ref, chargeId: core.mint('ch'), attemptNo: 1, paymentMethodId: confirm.paymentMethodId,
        capture: core.input.autoCapture, context: confirm.context, ...(confirm.returnUrl ? { returnUrl: confirm.returnUrl } : {}),
        ...(core.input.recurring ? { recurring: core.input.recurring } : {}),
      };
      const { first, ...planned } = await attempts.createPaymentPlanAndAuthorize({ payment: core.input, plan, attempt });
      this.withRow = { attempt, ...(first ? { result: first } : {}) };
      this.rowWritten();
      return planned;
    })();
  }

  private rowWritten(): void {
    if (this.core.phase.kind === 'creating') this.core.phase = { kind: 'idle' };
    this.core.describe();
  }

  /** One confirm (under the lock), from the `confirm` update or a `create` that carries one. */
  private async confirmWalk(args: ConfirmInput, plan?: PlanResult): Promise<CommandResult> {
    const { core } = this;
    // The first attempt made with the row belongs to the create's confirm and to no later walk.
    const withRow = this.withRow;
    this.withRow = undefined;
    // PROCESSING at once for validators and queries; the search attributes follow with the first
    // candidate, in the same workflow task, as one upsert.
    const before = core.status;
    core.changeStatus('PROCESSING');
    core.lock.handOver('walk');
    core.phase = { kind: 'walking' };
    const outcome = await walk(core, args, { ...(plan ? { plan } : {}), ...(withRow ? { withRow } : {}), before });
    if (core.status === 'FAILED') this.countFailedConfirmation();
    this.sessionTold ??= tellCheckoutSession(core);
    // Chained only for a payment that pays an invoice: a workflow's every promise costs the SDK a stack trace.
    const told = tellInvoiceSubscription(core);
    if (told) this.invoiceTold = this.invoiceTold ? Promise.all([this.invoiceTold, told]) : told;
    return { status: core.status, outcome };
  }

  /** One more walk ended FAILED; the one that reaches the cap says so, as its row does (db/payment-rows.ts). */
  private countFailedConfirmation(): void {
    this.failedConfirmations += 1;
    if (this.failedConfirmations >= MAX_FAILED_CONFIRMATIONS) this.core.facts.lastError = { code: TOO_MANY_ATTEMPTS };
  }

  /** A confirm answers when its walk ends, or as soon as the payment waits for the customer (the walk goes on, under the lock). */
  private untilCustomerOrEnd(walking: Promise<CommandResult>): Promise<CommandResult> {
    const waiting = condition(() => this.core.status === 'REQUIRES_ACTION' && this.core.phase.kind === 'awaitingAuthentication')
      .then((): CommandResult => ({ status: this.core.status, outcome: 'requires_action' }));
    return Promise.race([walking, waiting]);
  }
}
