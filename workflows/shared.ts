/**
 * Names shared by the API (client side) and the workflows: task queues and search attributes.
 * Imported by both, so it stays free of Node and I/O.
 */
import { defineSearchAttributeKey } from '@temporalio/common';

export const TASK_QUEUES = { payments: 'payments', webhooks: 'webhooks' } as const;

export const SEARCH_ATTRIBUTES = {
  PaymentId: defineSearchAttributeKey('PaymentId', 'KEYWORD'),
  AccountId: defineSearchAttributeKey('AccountId', 'KEYWORD'),
  PaymentStatus: defineSearchAttributeKey('PaymentStatus', 'KEYWORD'),
  Environment: defineSearchAttributeKey('Environment', 'KEYWORD'),
  ProviderConfigId: defineSearchAttributeKey('ProviderConfigId', 'KEYWORD'),
} as const;
