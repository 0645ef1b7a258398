/**
 * Billing (docs/billing.md): the workflow `subscription/<sub_id>`, its messages, statuses and the
 * activities it calls. Imported by the workflow (in Temporal's sandbox), by the payment workflow (which
 * tells a subscription how its invoice's payment went) and by the API and activities, so it stays free of
 * Node and I/O. Messages carry ids and decisions, never amounts a workflow would trust: the activities
 * read every amount from the rows the API wrote.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Environment, RequestContext } from './temporal';

export const SUBSCRIPTION_STATUSES = ['INCOMPLETE', 'INCOMPLETE_EXPIRED', 'TRIALING', 'ACTIVE', 'PAST_DUE', 'UNPAID', 'CANCELED'] as const;
export type SubscriptionStatus = typeof SUBSCRIPTION_STATUSES[number];

/** A subscription in one of these takes no more changes and bills nothing more. */
export const ENDED_SUBSCRIPTION_STATUSES: readonly SubscriptionStatus[] = ['INCOMPLETE_EXPIRED', 'CANCELED'];

export const INVOICE_STATUSES = ['DRAFT', 'OPEN', 'PAID', 'UNCOLLECTIBLE', 'VOID'] as const;
export type InvoiceStatus = typeof INVOICE_STATUSES[number];

export { INTERVALS, type Interval, type InvoiceLine, type SubscriptionItem } from '../lib/billing/types';
import type { SubscriptionItem } from '../lib/billing/types';

export const TEST_CLOCK_STATUSES = ['READY', 'ADVANCING'] as const;
export type TestClockStatus = typeof TEST_CLOCK_STATUSES[number];

/** Why an invoice was made. */
export type BillingReason = 'subscription_create' | 'subscription_cycle' | 'subscription_cancel';


/** While set, renewals make their invoices VOID at once: the subscription goes on, nothing is charged. */
export interface PauseCollection { behavior: 'void'; resumes_at: string | null }


/** One try at paying an invoice: its payment and how it ended (so far). */
export interface InvoiceAttempt { payment_id: string; status: string; decline_code: string | null; at: string }

export const BILLING_FAILURES = {
  invalidState: 'invalid_state',
} as const;

/**
 * The facts of a new subscription the API checked (customer, card, prices, clock) and sealed: the first
 * activity writes the row from them only with a valid seal, so a workflow started by anyone else who
 * reaches Temporal bills nobody (docs/security.md).
 */
export interface SubscriptionInput {
  subscriptionId: string;
  accountId: string;
  workspaceId: string;
  environment: Environment;
  customerId: string;
  items: SubscriptionItem[];
  defaultPaymentMethodId: string;
  trialPeriodDays?: number;
  cancelAtPeriodEnd: boolean;
  metadata: Record<string, string>;
  testClockId?: string;
  seal?: string;
  context: RequestContext;
  /** Set by continue-as-new: the row exists, and these update ids were applied (with their answers) in earlier runs. */
  carried?: CarriedState;
}

export interface CarriedState { applied: [string, ChangeAnswer][] }

/** What every subscription activity acts on: ids only. */
export type SubscriptionRef = Pick<SubscriptionInput, 'subscriptionId' | 'accountId' | 'workspaceId' | 'environment' | 'context'>;

/**
 * What the workflow needs to know of its row to decide when to wake: epoch milliseconds. The
 * activities answer it after every step, so the workflow's idea of the subscription is always the row's.
 */
export interface SubscriptionClock {
  status: SubscriptionStatus;
  currentPeriodEnd: number;
  trialEnd: number | null;
  cancelAtPeriodEnd: boolean;
  paused: boolean;
  resumesAt: number | null;
  createdAt: number;
  testClockId: string | null;
  /** The invoice being collected (OPEN, with a payment to make or being made), if any. */
  collecting: Collecting | null;
  /** When each of the notice events was sent for the current period (so each goes once). */
  noticesSent: string[];
}

/**
 * An OPEN invoice the workflow collects: `pay_at` (epoch ms) when it next tries (a dunning retry), or
 * `payment` when a payment is under way (PROCESSING, REQUIRES_ACTION) and the workflow waits for its word.
 */
export interface Collecting { invoiceId: string; attemptCount: number; nextAttemptAt: number | null; paymentId: string | null; waiting: boolean }

/** A change to a subscription, as the API sends it (PATCH, cancel, an invoice's pay/void/uncollectible). */
export type SubscriptionChange =
  | { kind: 'update'; items?: SubscriptionItem[]; cancelAtPeriodEnd?: boolean; defaultPaymentMethodId?: string; pauseCollection?: PauseCollection | null; metadata?: Record<string, string> }
  | { kind: 'cancel'; invoiceNow: boolean; prorate: boolean }
  | { kind: 'pay_invoice'; invoiceId: string }
  | { kind: 'void_invoice'; invoiceId: string }
  | { kind: 'mark_uncollectible'; invoiceId: string };

/** A change's answer: applied (the API then reads the rows) or refused (409 with why). */
export type ChangeAnswer = { applied: true } | { applied: false; code: string; message: string };

/** A change with the API's seal (the activity refuses one without), the time it was asked at, and who asked. */
export interface SealedChange { change: SubscriptionChange; seal?: string; context: RequestContext }

/** The payment workflow's nudge: the invoice's payment moved (paid, failed, waiting for the customer). */
export interface InvoicePaymentSignal { invoiceId: string; paymentId: string; status: string }

export const subscriptionUpdates = {
  /** Sent with the start (update-with-start): answers once the row exists and the first invoice's payment ended its walk. */
  create: defineUpdate<{ status: SubscriptionStatus }>('create'),
  /** A change, applied once under the workflow's lock (its update id is the API's command id). */
  change: defineUpdate<ChangeAnswer, [SealedChange]>('change'),
};

export const subscriptionSignals = {
  /** A nudge only: the activity reads the payment's row before it settles the invoice. */
  invoicePayment: defineSignal<[InvoicePaymentSignal]>('invoicePayment'),
  /** The subscription's test clock moved: the activity reads the clock's row for the time. */
  clockAdvanced: defineSignal('clockAdvanced'),
};

export interface SubscriptionState { subscriptionId: string; clock: SubscriptionClock | null; now: number; runs: number }

export const subscriptionQueries = {
  state: defineQuery<SubscriptionState>('state'),
};

export const subscriptionWorkflowId = (subscriptionId: string) => `subscription/${subscriptionId}`;

/** A test clock moved to `frozenTime` (ms): the subscriptions on it are to be told. */
export interface ClockAdvance { clockId: string; accountId: string; environment: Environment; frozenTime: number }

/** One workflow per clock and time moved to: a retried advance request joins it rather than telling everyone twice at once. */
export const clockAdvanceWorkflowId = (advance: ClockAdvance) => `test-clock/${advance.clockId}/${advance.frozenTime}`;

/** The purpose of the API's seals on billing commands (lib/vault.ts). */
export const BILLING_SEAL_PURPOSE = 'billing-command';

/** The text a subscription's start seal covers: every fact its row is made from. */
export function subscriptionStartText(input: SubscriptionInput): string {
  return JSON.stringify([
    'start', input.subscriptionId, input.accountId, input.workspaceId, input.environment, input.customerId,
    input.items.map((i) => [i.id, i.price_id, i.quantity]), input.defaultPaymentMethodId, input.trialPeriodDays ?? null,
    input.cancelAtPeriodEnd, Object.entries(input.metadata).sort(), input.testClockId ?? null,
  ]);
}

/** The text a change's seal covers: the subscription, the update id, and the change. */
export function subscriptionChangeText(subscriptionId: string, updateId: string, change: SubscriptionChange): string {
  return JSON.stringify(['change', subscriptionId, updateId, change]);
}

/** The activities a subscription's workflow calls (its events go out through the webhooks feature's `eventFanOut`); activities/billing/ builds them. */
export interface BillingActivities {
  /** Checks the start's seal, writes the row (once), makes the first invoice (or the trial's) and answers the row's clock. */
  startSubscription(input: SubscriptionInput): Promise<SubscriptionClock>;
  /** The row's clock now (after a nudge, or a run's start). */
  readSubscription(ref: SubscriptionRef): Promise<SubscriptionClock>;
  /** The subscription's time: its test clock's frozen time, or the real time. */
  readTestClock(ref: SubscriptionRef, testClockId: string): Promise<number>;
  /** Reports a test-clock subscription caught up with `time`; the clock turns READY when all on it have. */
  caughtUp(ref: SubscriptionRef, testClockId: string, time: number): Promise<void>;
  /**
   * The period that ended at `periodEnd` rolls over: cancel at period end, or the next period with its
   * invoice (one per period: a retry finds it), or nothing while UNPAID. Idempotent.
   */
  renewSubscription(ref: SubscriptionRef, periodEnd: number, now: number): Promise<SubscriptionClock>;
  /** Sends a notice (invoice.upcoming, subscription.trial_will_end) for the current period, once. */
  sendNotice(ref: SubscriptionRef, notice: 'invoice.upcoming' | 'subscription.trial_will_end'): Promise<SubscriptionClock>;
  /** Starts (or finds) the payment of the invoice's attempt `attemptCount + 1` and answers its walk's end. */
  payInvoice(ref: SubscriptionRef, invoiceId: string, attemptCount: number, now: number): Promise<SubscriptionClock>;
  /** Reads the invoice's payment and settles the invoice from it: paid, failed (dunning), or still waiting. */
  settleInvoice(ref: SubscriptionRef, invoiceId: string, now: number): Promise<SubscriptionClock>;
  /** An INCOMPLETE subscription whose first invoice is still unpaid 23 h on: INCOMPLETE_EXPIRED, its invoice VOID. */
  expireIncomplete(ref: SubscriptionRef, now: number): Promise<SubscriptionClock>;
  /** Applies one change (its seal checked), once per update id. */
  applyChange(ref: SubscriptionRef, updateId: string, change: SealedChange, now: number): Promise<{ answer: ChangeAnswer; clock: SubscriptionClock }>;
  /** Tells every subscription still running on the clock that it moved, a batch at a time; a retry goes on from the last batch told. */
  tellClockAdvanced(advance: ClockAdvance): Promise<{ told: number }>;
}
