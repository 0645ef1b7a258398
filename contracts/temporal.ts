/**
 * What every feature's contract shares: environments, task queues, search attributes and the request
 * context recorded on events. Imported by workflows (inside Temporal's sandbox) and by the client side
 * alike, so it stays free of Node and I/O. Each feature declares the rest in its own
 * `workflows/<feature>/contract.ts` (docs/architecture.md).
 */
import { defineSearchAttributeKey } from '@temporalio/common';

/** An account's environment; each has its own tables (`live`, `sandbox`). */
export type Environment = 'production' | 'sandbox';

export const TASK_QUEUES = { payments: 'payments', webhooks: 'webhooks' } as const;

export const SEARCH_ATTRIBUTES = {
  PaymentId: defineSearchAttributeKey('PaymentId', 'KEYWORD'),
  AccountId: defineSearchAttributeKey('AccountId', 'KEYWORD'),
  PaymentStatus: defineSearchAttributeKey('PaymentStatus', 'KEYWORD'),
  Environment: defineSearchAttributeKey('Environment', 'KEYWORD'),
  ProviderConfigId: defineSearchAttributeKey('ProviderConfigId', 'KEYWORD'),
  /** PENDING, SUCCEEDED, FAILED, or REJECTED (the amount could not be reserved): on refund workflows. */
  RefundStatus: defineSearchAttributeKey('RefundStatus', 'KEYWORD'),
  /** A subscription's status (INCOMPLETE, TRIALING, ACTIVE, PAST_DUE, UNPAID, CANCELED, …): on subscription workflows. */
  SubscriptionStatus: defineSearchAttributeKey('SubscriptionStatus', 'KEYWORD'),
  SubscriptionId: defineSearchAttributeKey('SubscriptionId', 'KEYWORD'),
  /** A dispute's status (NEEDS_RESPONSE, UNDER_REVIEW, WON, LOST, …): on dispute workflows. */
  DisputeStatus: defineSearchAttributeKey('DisputeStatus', 'KEYWORD'),
  DisputeId: defineSearchAttributeKey('DisputeId', 'KEYWORD'),
} as const;

/** Who asked: recorded on the events a workflow writes (ids only). */
export interface Actor { type: 'user' | 'system' | 'api_key'; id: string; apiKeyId?: string }

/** `spanId`: the request's span, which the fan-out of the events it caused continues (docs/observability.md#traces). */
export interface RequestContext { requestId?: string; traceId?: string; spanId?: string; actor: Actor }

// ---------------------------------------------------------------------------------------------------
// Processor notifications (POST /v1/provider-webhooks/{provider_config_id}, docs/connectors.md)

/** An operation Switchboard asks processors for, as a processor's notification reports on it. */
export type NotifiedOperation = 'authorize' | 'capture' | 'void' | 'refund';

/**
 * What a notification says became of the operation: the processor's final word, never pending. The
 * same shapes as the adapters' approved and decline outcomes (activities/providers/types.ts).
 */
export type NotifiedOutcome =
  | {
      kind: 'approved'; providerReference: string; authorizedAmount: number; capturedAmount: number; refundedAmount: number;
      refundReference?: string;
    }
  | { kind: 'hard_decline' | 'soft_decline'; declineCode: string; message?: string };

/**
 * The `providerEvent` signal: a verified processor event about an operation of this workflow's payment
 * or refund, already stored (`provider_events`). Ids and facts only: no card data, no secret.
 */
export interface ProviderEventSignal {
  /** The stored event (pev_…): a workflow applies each once however often it is signalled. */
  eventId: string;
  /** The processor's type (`AUTHORISATION`, `payment_intent.succeeded`, …), for operators. */
  type: string;
  operation: NotifiedOperation;
  chargeId: string;
  refundId?: string;
  outcome: NotifiedOutcome;
  /** The processor's own code behind a decline. */
  providerCode?: string;
}

export const PROVIDER_EVENT_SIGNAL = 'providerEvent';
