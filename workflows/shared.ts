/**
 * Names shared by the API (client side) and the workflows: task queues and search attributes.
 * Imported by both, so it stays free of Node and I/O.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { RequestContext } from './contract';

// Moving to workflows/contract.ts and workflows/<feature>/contract.ts (docs/architecture.md).
export { TASK_QUEUES, SEARCH_ATTRIBUTES } from './contract';
export type { Actor, Environment, RequestContext } from './contract';

// Payments: moved to workflows/payments/contract.ts; re-exported until the last importers switch.
export {
  paymentQueries, paymentUpdates, paymentWorkflowId,
} from './payments/contract';
export type {
  AttemptSummary, CancelInput, CaptureInput, CommandResult, ConfirmInput, CreateInput, PaymentInput, PaymentState, PaymentStatus,
  RoutingHintsInput,
} from './payments/contract';

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
