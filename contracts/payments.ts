/**
 * The payments contract (docs/payments.md): the workflow `payment/<pay_id>`, its input, updates and
 * query; with what it re-exports, the statuses and the transitions between them, and the activities it calls. Imported by the
 * workflow (inside Temporal's sandbox) and by the API, activities and ops CLI alike, so it stays free of
 * Node and I/O. Everything here carries ids and facts, never a card number, CVC or credential.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { PROVIDER_EVENT_SIGNAL, type ProviderEventSignal } from './temporal';
import type { PlannedCandidate } from './payment-activities';
import type { AttemptSummary, CommandResult, ConfirmInput, CreateInput, CaptureInput, CancelInput, PaymentStatus, PendingOperation } from './payment-rules';

// The statuses, table, inputs and sealed commands, and the activities, live in two contracts of their own (each file stays readable).
export * from './payment-rules';
export * from './payment-activities';

export const paymentWorkflowId = (paymentId: string) => `payment/${paymentId}`;

// ---------------------------------------------------------------------------------------------------
// The workflow's state query and messages

/** The `state` query: what an operator wants to know about a payment right now. */
export interface PaymentState {
  paymentId: string;
  status: PaymentStatus;
  amount: number;
  currency: string;
  routingPlanId?: string;
  candidates: PlannedCandidate[];
  currentIndex?: number;
  attempts: AttemptSummary[];
  lastError?: { code: string; message?: string };
  authorizedAmount: number;
  capturedAmount: number;
  reconciling: boolean;
  /** A capture or void awaiting the processor's notification. */
  pendingOperation?: PendingOperation;
  /** The charge waiting for the customer's authentication, and since when (ms since the epoch). */
  authentication?: { chargeId: string; since: number };
  /**
   * The workflow stopped acting on the payment: a step (a transition, or `create`) met a write Postgres
   * refuses for good. The payment keeps the status it had; an operator takes it from here.
   */
  needsAttention?: { reason: string; step: string; since: number };
  /** SUCCEEDED by a capture the processor may still report failed: the charge listened for, and until when (ms since the epoch). */
  captureFailureWatch?: { chargeId: string; until: number };
}

/** The `authenticationReturn` update: the customer is back from authenticating (the return params are sealed on the charge). */
export interface AuthenticationReturnInput { chargeId: string }

export const paymentUpdates = {
  /**
   * Sent with the start (update-with-start): answers once the payment row is written, or, when it
   * carries a confirm, once that confirm's walk has ended (as `confirm` answers).
   */
  create: defineUpdate<CommandResult, [CreateInput?]>('create'),
  confirm: defineUpdate<CommandResult, [ConfirmInput]>('confirm'),
  capture: defineUpdate<CommandResult, [CaptureInput]>('capture'),
  cancel: defineUpdate<CommandResult, [CancelInput]>('cancel'),
  /** The customer's browser came back from authenticating: completes the step with the processor; answers when it is. */
  authenticationReturn: defineUpdate<CommandResult, [AuthenticationReturnInput]>('authenticationReturn'),
};

export const paymentSignals = {
  /** A verified processor notification about one of this payment's charges (docs/connectors.md). */
  providerEvent: defineSignal<[ProviderEventSignal]>(PROVIDER_EVENT_SIGNAL),
};

export const paymentQueries = {
  state: defineQuery<PaymentState>('state'),
};
