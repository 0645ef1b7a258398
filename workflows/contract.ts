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
} as const;

/** Who asked: recorded on the events a workflow writes (ids only). */
export interface Actor { type: 'user' | 'system' | 'api_key'; id: string; apiKeyId?: string }

export interface RequestContext { requestId?: string; traceId?: string; actor: Actor }
