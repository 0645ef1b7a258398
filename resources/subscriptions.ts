import { Static, Type } from '@sinclair/typebox';
import type { SubscriptionRow } from '../db/subscriptions';
import { SUBSCRIPTION_STATUSES, subscriptionWorkflowId } from '../contracts/billing';
import { iso } from '../lib/timestamps';
import { temporalUiLink } from '../lib/temporal-ui';
import { Resource, Timestamp } from './schemas';

const NullableStr = Type.Union([Type.String(), Type.Null()]);

export const SubscriptionStatusSchema = Type.Union(SUBSCRIPTION_STATUSES.map((s) => Type.Literal(s)));

export const SubscriptionItemSchema = Type.Object({
  id: Type.String({ description: 'si_…' }), price_id: Type.String(), quantity: Type.Integer(),
}, { additionalProperties: true });

/** A customer's subscription to one or more prices (docs/billing.md#subscriptions), billed by its workflow. */
export const SubscriptionSchema = Resource('subscription', {
  id: Type.String(),
  account_id: Type.String(),
  status: SubscriptionStatusSchema,
  customer_id: Type.String(),
  items: Type.Array(SubscriptionItemSchema),
  currency: Type.String(),
  current_period_start: Timestamp,
  current_period_end: Timestamp,
  trial_end: Timestamp,
  cancel_at_period_end: Type.Boolean(),
  canceled_at: Timestamp,
  ended_at: Timestamp,
  pause_collection: Type.Union([Type.Object({ behavior: Type.Literal('void'), resumes_at: Timestamp }), Type.Null()]),
  latest_invoice_id: NullableStr,
  default_payment_method_id: Type.String(),
  test_clock_id: NullableStr,
  metadata: Type.Record(Type.String(), Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
  temporal: Type.Object({
    workflow_id: Type.String(), namespace: Type.String(), ui_url: Type.String({ description: 'the workflow\'s page in the Temporal UI' }),
  }, { description: 'the subscription\'s workflow, for operators' }),
});

export type Subscription = Static<typeof SubscriptionSchema>;

/** Where the Temporal UI is, and the namespace the workflows run in (the process's config). */
export interface TemporalUi { temporal: { uiUrl: string; namespace: string } }

/** The subscription's workflow as operators open it. */
function workflowLink(config: TemporalUi, subscriptionId: string): Subscription['temporal'] {
  const workflowId = subscriptionWorkflowId(subscriptionId);
  return { workflow_id: workflowId, namespace: config.temporal.namespace, ui_url: temporalUiLink(config, workflowId) };
}

export function serializeSubscription(row: SubscriptionRow, config: TemporalUi): Subscription {
  const pause = row.pause_collection;
  return {
    object: 'subscription',
    id: row.id,
    account_id: row.account_id,
    status: row.status,
    customer_id: row.customer_id,
    items: (row.items ?? []).map((i) => ({ id: i.id, price_id: i.price_id, quantity: i.quantity })),
    currency: row.currency,
    current_period_start: iso(row.current_period_start),
    current_period_end: iso(row.current_period_end),
    trial_end: iso(row.trial_end),
    cancel_at_period_end: row.cancel_at_period_end,
    canceled_at: iso(row.canceled_at),
    ended_at: iso(row.ended_at),
    pause_collection: pause ? { behavior: pause.behavior, resumes_at: iso(pause.resumes_at) } : null,
    latest_invoice_id: row.latest_invoice_id ?? null,
    default_payment_method_id: row.default_payment_method_id,
    test_clock_id: row.test_clock_id ?? null,
    metadata: row.metadata ?? {},
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    temporal: workflowLink(config, row.id),
  };
}
