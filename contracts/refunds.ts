/**
 * Refunds: the workflow `refund/<re_id>`, its messages, statuses and the activities it calls. Imported
 * by the workflow (in Temporal's sandbox) and by the API, activities and stores alike, so it stays free
 * of Node and I/O. Everything here carries ids, amounts and merchant metadata, never a credential.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { PROVIDER_EVENT_SIGNAL, type Environment, type ProviderEventSignal, type RequestContext } from './temporal';

export const REFUND_STATUSES = ['PENDING', 'SUCCEEDED', 'FAILED'] as const;
export type RefundStatus = typeof REFUND_STATUSES[number];

export const REFUND_REASONS = ['DUPLICATE', 'FRAUDULENT', 'REQUESTED_BY_CUSTOMER', 'OTHER'] as const;
export type RefundReason = typeof REFUND_REASONS[number];

/**
 * A refund's life (docs/refunds.md): PENDING once its amount is reserved, then the provider's verdict
 * settles it once. FAILED is final. SUCCEEDED → FAILED is the processor reversing a refund it reported
 * succeeded (a Stripe refund that fails later, Adyen's REFUNDED_REVERSED): the amount becomes refundable again.
 */
export const REFUND_TRANSITIONS: Readonly<Record<RefundStatus, readonly RefundStatus[]>> = {
  PENDING: ['SUCCEEDED', 'FAILED'],
  SUCCEEDED: ['FAILED'],
  FAILED: [],
};

/** Charge statuses a refund can target: captured once (refundable while something is left). */
export const CAPTURED_CHARGE_STATUSES = ['CAPTURED', 'PARTIALLY_REFUNDED', 'REFUNDED'] as const;
/** Whether a charge in this status was captured (so a refund can target it). */
export const wasCaptured = (chargeStatus: string): boolean => (CAPTURED_CHARGE_STATUSES as readonly string[]).includes(chargeStatus);
/** Charge statuses against which an amount can still be reserved. */
export const REFUNDABLE_CHARGE_STATUSES = ['CAPTURED', 'PARTIALLY_REFUNDED'] as const;

export interface RefundWorkflowInput {
  refundId: string;
  accountId: string;
  workspaceId: string;
  environment: Environment;
  paymentId: string;
  chargeId: string;
  /** Omitted: everything that remains refundable at the moment the amount is reserved. */
  amount?: number;
  reason?: RefundReason;
  reasonOther?: string;
  metadata: Record<string, string>;
  context: RequestContext;
  /**
   * The API's seal of what the refund moves (`refundCommand`, sealed with the vault key): the
   * reservation refuses a refund without a valid one, so that a refund workflow started by anyone else
   * who reaches Temporal moves nothing.
   */
  seal: string;
}

/** What a refund's seal covers: which charge of which account, of which payment, and how much. */
export function refundCommand(input: Pick<RefundWorkflowInput, 'refundId' | 'accountId' | 'workspaceId' | 'environment' | 'paymentId' | 'chargeId' | 'amount'>): string {
  return JSON.stringify([input.refundId, input.accountId, input.workspaceId, input.environment, input.paymentId, input.chargeId, input.amount ?? null]);
}

/** What a refund workflow hands its activities once the amount is reserved: ids only. */
export type RefundRef = Pick<RefundWorkflowInput, 'refundId' | 'accountId' | 'workspaceId' | 'environment' | 'paymentId' | 'chargeId' | 'context'>;

/** Why a refund could not be accepted; nothing was written (the reservation is all or nothing). */
export interface RefundRejection {
  outcome: 'rejected';
  reason: 'refund_exceeds_available' | 'invalid_state';
  message: string;
  details: { available?: number; status?: string };
}

/** What `create` answers: the rejection, or the status once final (or PENDING after 5 s). */
export type RefundAcceptance = { outcome: 'accepted'; status: RefundStatus } | RefundRejection;

/** The `state` query of a refund workflow. */
export interface RefundState {
  refundId: string;
  paymentId: string;
  chargeId: string;
  status: RefundStatus | 'RESERVING' | 'REJECTED';
  amount?: number;
  failureReason?: string;
  /** The processor received the refund and reports its outcome by notification (Adyen). */
  awaitingNotification?: boolean;
  /** SUCCEEDED, and listening until then (epoch ms) for the processor reporting it failed after all. */
  reversibleUntil?: number;
  /**
   * A step met a write Postgres refuses for good: the refund keeps its status, its payment is flagged
   * `needs_attention` on its behalf, and the workflow fails with that failure instead of retrying forever.
   */
  needsAttention?: { reason: string; step: string; since: number };
}

export const refundUpdates = {
  /** Sent with the start (update-with-start): answers once the amount is reserved (or refused). */
  create: defineUpdate<RefundAcceptance>('create'),
};

export const refundSignals = {
  /** A verified processor notification about this refund (docs/connectors.md). */
  providerEvent: defineSignal<[ProviderEventSignal]>(PROVIDER_EVENT_SIGNAL),
};

export const refundQueries = {
  state: defineQuery<RefundState>('state'),
};

export const refundWorkflowId = (refundId: string) => `refund/${refundId}`;

/** `reserveRefund`: the refund accepted (new, or found from an earlier attempt) or refused. */
export type ReservationResult =
  | { outcome: 'accepted'; status: RefundStatus; amount: number; providerConfigId: string | null }
  | RefundRejection;

/** `refundCharge`: the provider's verdict as settled. */
export interface RefundResult {
  status: RefundStatus;
  failureReason?: string;
  /** PENDING because the processor only received the refund: its notification settles it. */
  awaitingNotification?: boolean;
  /**
   * SUCCEEDED at a processor that may still report the refund failed (`refundReversalWindowMs` of its
   * adapter): for this long the workflow keeps listening for that notification.
   */
  reversalWindowMs?: number;
  /** This settlement reversed a refund that had SUCCEEDED (the processor reported it failed afterwards). */
  reversed?: boolean;
}

/** The activities a refund workflow calls (its events go out through the webhooks feature's `eventFanOut`); activities/refunds.ts builds them. */
export interface RefundActivities {
  /**
   * Accepts a refund or refuses it, atomically: reserves the amount on the charge together with the
   * PENDING refund row and `refund.created`. Idempotent: a refund row that exists is returned.
   */
  reserveRefund(input: RefundWorkflowInput): Promise<ReservationResult>;
  /** Asks the provider, with the refund id as idempotency key, until it answers; settles on its verdict. */
  refundCharge(ref: RefundRef): Promise<RefundResult>;
  /** Settles a refund the processor received, on its notification. Idempotent. */
  settleRefundNotification(args: RefundRef & { notification: ProviderEventSignal }): Promise<RefundResult>;
}
