/**
 * Checkout sessions: the workflow `checkout/<cs_id>`, its messages, statuses and the activities it calls.
 * Imported by the workflow (in Temporal's sandbox), by the payment workflow (which tells a session its
 * payment's outcome) and by the API, activities and stores, so it stays free of Node and I/O. A session
 * id is a bearer capability (its hosted page's URL): unguessable, and sent nowhere in a Referer; the request
 * log does show the page's path (docs/security.md lists it among the known limits).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Environment, RequestContext } from './temporal';
import type { PaymentInput, PaymentStatus } from './payment-rules';

export const CHECKOUT_SESSION_STATUSES = ['OPEN', 'COMPLETE', 'EXPIRED'] as const;
export type CheckoutSessionStatus = typeof CHECKOUT_SESSION_STATUSES[number];

export const CHECKOUT_PAYMENT_STATUSES = ['UNPAID', 'PAID'] as const;
export type CheckoutPaymentStatus = typeof CHECKOUT_PAYMENT_STATUSES[number];

/** `expires_in` in seconds: at least 30 minutes, at most a day (a payment's own expiry is PAYMENT_EXPIRY, 24 h by default). */
export const EXPIRES_IN = { min: 1800, max: 86_400, default: 3600 } as const;

/** One line of what is bought; the session's amount is the sum of quantity × unit_amount. */
export interface LineItem { name: string; quantity: number; unit_amount: number }

/** What a session's payment may be when the session completes: succeeded, or authorized when it is captured later. */
export function paysSession(status: string, autoCapture: boolean): boolean {
  return status === 'SUCCEEDED' || (status === 'AUTHORIZED' && !autoCapture);
}

/**
 * A payment being paid right now: a walk at the processors, or the customer at their bank (3-D Secure).
 * A session does not expire under such a payment; it waits for the outcome (docs/checkout.md).
 */
export const IN_FLIGHT_PAYMENT_STATUSES: readonly PaymentStatus[] = ['PROCESSING', 'REQUIRES_ACTION'];

export interface CheckoutSessionInput {
  sessionId: string;
  accountId: string;
  workspaceId: string;
  environment: Environment;
  paymentId: string;
  amount: number;
  currency: string;
  lineItems: LineItem[] | null;
  successUrl: string | null;
  cancelUrl: string | null;
  customerId?: string;
  savePaymentMethod: boolean;
  autoCapture: boolean;
  /** When the session expires, epoch milliseconds (the row's `expires_at`; the workflow's timer runs to it). */
  expiresAt: number;
  metadata: Record<string, string>;
  /** The payment link whose visit opened this session. */
  paymentLinkId?: string;
  /** The session's payment's start, sealed by the API (`sealedStart`): the workflow starts it once its own row is written. */
  payment: PaymentInput;
  context: RequestContext;
}

/** What a session's activities act on once its row exists: ids only. */
export type CheckoutRef = Pick<CheckoutSessionInput, 'sessionId' | 'accountId' | 'workspaceId' | 'environment' | 'paymentId' | 'context'>;

/**
 * How a settlement or expiry attempt went: `completed` or `expired` now,
 * `open` (the payment is not paid: nothing changed), `in_flight` (the payment is being paid right now:
 * the session waits for its outcome), `closed` (the session had ended before).
 */
export type CheckoutOutcome =
  | { outcome: 'completed' | 'expired'; status: CheckoutSessionStatus }
  | { outcome: 'open'; status: 'OPEN' }
  | { outcome: 'in_flight'; status: 'OPEN'; paymentStatus: string }
  | { outcome: 'closed'; status: CheckoutSessionStatus };

/** The `state` query, and the workflow's result. */
export interface CheckoutState {
  sessionId: string;
  paymentId: string;
  status: CheckoutSessionStatus | 'CREATING';
  expiresAt: number;
  /** Past its expiry, the payment's status that keeps the session open (PROCESSING, REQUIRES_ACTION). */
  waitingOnPayment?: string;
}

/** The payment workflow's word that the session's payment reached SUCCEEDED or AUTHORIZED. */
export interface PaymentSettledSignal { paymentId: string; status: PaymentStatus }

export const checkoutUpdates = {
  /** Sent with the start (update-with-start): answers once the session's row and its payment exist. */
  create: defineUpdate<{ status: CheckoutState['status'] }>('create'),
  /** `POST /v1/checkout-sessions/{id}/expire`: answers how the attempt went (the session may complete instead). */
  expire: defineUpdate<CheckoutOutcome>('expire'),
};

export const checkoutSignals = {
  /**
   * Sent by the session's payment's workflow when the payment succeeds or is authorized. Only a nudge:
   * the session reads its payment's row before it completes, so a signal from anyone else changes nothing.
   */
  paymentSettled: defineSignal<[PaymentSettledSignal]>('paymentSettled'),
};

export const checkoutQueries = {
  state: defineQuery<CheckoutState>('state'),
};

export const checkoutWorkflowId = (sessionId: string) => `checkout/${sessionId}`;

/** The activities a session's workflow calls (its events go out through the webhooks feature's `eventFanOut`); activities/checkout.ts builds them. */
export interface CheckoutActivities {
  /** Writes the session's OPEN row. Idempotent: a row that exists is left as it is. */
  recordCheckoutSession(input: CheckoutSessionInput): Promise<void>;
  /** Starts the session's payment's workflow (sealed by the API) and answers once its row exists. Idempotent. */
  startCheckoutPayment(input: PaymentInput): Promise<void>;
  /** Completes the session if its payment is paid, once (`UPDATE … WHERE status = 'OPEN'`), with `checkout.session.completed`. */
  settleCheckoutSession(ref: CheckoutRef): Promise<CheckoutOutcome>;
  /**
   * Expires the session, once: its payment canceled (`abandoned`) first, then the row and
   * `checkout.session.expired`. A payment that turned out paid completes the session instead; one being
   * paid right now leaves it open (`in_flight`).
   */
  expireCheckoutSession(ref: CheckoutRef): Promise<CheckoutOutcome>;
}
