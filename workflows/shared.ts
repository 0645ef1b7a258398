/**
 * Names shared by the API (client side) and the workflows: task queues and search attributes.
 * Imported by both, so it stays free of Node and I/O.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { RequestContext } from './contract';

// Moving to workflows/contract.ts and workflows/<feature>/contract.ts (docs/architecture.md).
export { TASK_QUEUES, SEARCH_ATTRIBUTES } from './contract';
export type { Actor, Environment, RequestContext } from './contract';

// ---------------------------------------------------------------------------------------------------
// Payments: the workflow `payment/<pay_id>` and its messages. Everything here carries ids and facts,
// never a card number, CVC or credential.


export type PaymentStatus =
  | 'CREATED' | 'PROCESSING' | 'REQUIRES_ACTION' | 'AUTHORIZED' | 'SUCCEEDED' | 'FAILED' | 'CANCELED'
  | 'PARTIALLY_REFUNDED' | 'REFUNDED';

export interface RoutingHintsInput {
  provider_config_ids?: string[];
  exclude_provider_config_ids?: string[];
  max_attempts?: number;
}

export interface PaymentInput {
  paymentId: string;
  accountId: string;
  workspaceId: string;
  environment: 'production' | 'sandbox';
  amount: number;
  currency: string;
  autoCapture: boolean;
  secureMode: 'NONE' | 'PREFERRED' | 'REQUIRED';
  installments: number;
  customerId?: string;
  /** A guest customer created together with the payment (same transaction). */
  guestCustomer?: { id: string; name?: string; email?: string; phone?: string; country?: string };
  checkoutSessionId?: string;
  metadata: Record<string, string>;
  routing: RoutingHintsInput;
  /** Durations in milliseconds (AUTH_EXPIRY, PAYMENT_EXPIRY). */
  authExpiryMs: number;
  paymentExpiryMs: number;
  context: RequestContext;
}

export interface ConfirmInput {
  paymentMethodId: string;
  installments?: number;
  routing?: RoutingHintsInput;
  context: RequestContext;
}

/**
 * The `create` update's argument (optional: a plain create, and every history recorded before it
 * existed, sends none). With `confirm`, the workflow runs the confirm walk as soon as the row is written,
 * and `create` answers when the walk ends (create and confirm in one request).
 */
export interface CreateInput { confirm?: ConfirmInput }

export interface CaptureInput { amount?: number; context: RequestContext }
export interface CancelInput { reason?: string; context: RequestContext }

/** What an update answers: the status after it, and for confirm how the walk ended (if it did). */
export interface CommandResult {
  status: PaymentStatus;
  /** `no_eligible_provider` when confirm found no candidate; `processing` when it did not end within 10 s. */
  outcome?: 'succeeded' | 'authorized' | 'failed' | 'no_eligible_provider' | 'processing' | 'captured' | 'canceled';
}

export interface AttemptSummary {
  chargeId: string;
  attemptNo: number;
  providerConfigId: string;
  outcome: 'pending' | 'approved' | 'hard_decline' | 'soft_decline' | 'transport_error' | 'unknown';
  declineCode?: string;
}

/** The `state` query: what an operator wants to know about a payment right now. */
export interface PaymentState {
  paymentId: string;
  status: PaymentStatus;
  amount: number;
  currency: string;
  routingPlanId?: string;
  candidates: { providerConfigId: string; providerId: string; methodId: string; estimatedFee: number | null }[];
  currentIndex?: number;
  attempts: AttemptSummary[];
  lastError?: { code: string; message?: string };
  authorizedAmount: number;
  capturedAmount: number;
  reconciling: boolean;
}

export const paymentUpdates = {
  /**
   * Sent with the start (update-with-start): answers once the payment row is written, or, when it
   * carries a confirm, once that confirm's walk has ended (as `confirm` answers).
   */
  create: defineUpdate<CommandResult, [CreateInput?]>('create'),
  confirm: defineUpdate<CommandResult, [ConfirmInput]>('confirm'),
  capture: defineUpdate<CommandResult, [CaptureInput]>('capture'),
  cancel: defineUpdate<CommandResult, [CancelInput]>('cancel'),
};

export const paymentQueries = {
  state: defineQuery<PaymentState>('state'),
};

export const paymentWorkflowId = (paymentId: string) => `payment/${paymentId}`;

// ---------------------------------------------------------------------------------------------------
// Refunds: the workflow `refund/<re_id>` and its messages. Ids, amounts and merchant metadata only.

export type RefundStatus = 'PENDING' | 'SUCCEEDED' | 'FAILED';
export type RefundReason = 'DUPLICATE' | 'FRAUDULENT' | 'REQUESTED_BY_CUSTOMER' | 'OTHER';

export interface RefundWorkflowInput {
  refundId: string;
  accountId: string;
  workspaceId: string;
  environment: 'production' | 'sandbox';
  paymentId: string;
  chargeId: string;
  /** Omitted: everything that remains refundable at the moment the amount is reserved. */
  amount?: number;
  reason?: RefundReason;
  reasonOther?: string;
  metadata: Record<string, string>;
  context: RequestContext;
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
}

export const refundUpdates = {
  /** Sent with the start (update-with-start): answers once the amount is reserved (or refused). */
  create: defineUpdate<RefundAcceptance>('create'),
};

export const refundQueries = {
  state: defineQuery<RefundState>('state'),
};

export const refundWorkflowId = (refundId: string) => `refund/${refundId}`;
