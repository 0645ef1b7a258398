/**
 * Row → API resource shapes. Shared by the API (responses) and the worker (webhook payloads), so a
 * resource looks the same wherever it appears. Timestamps are ISO-8601 UTC with milliseconds.
 */
import { iso } from '../lib/timestamps';
// Moved to api/resources/payment-methods.ts; used here until the customer serializer moves too.
import { serializePaymentMethod } from '../api/resources/payment-methods';

// Moved to lib/timestamps.ts; re-exported while serializers still import it from here.
export { iso };

export function serializeCustomerAddress(row: any) {
  return {
    object: 'customer_address',
    id: row.id,
    customer_id: row.customer_id,
    type: row.type,
    label: row.label,
    country: row.country,
    city: row.city,
    state: row.state,
    line1: row.line1,
    line2: row.line2,
    zip: row.zip,
    is_default: row.is_default,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** A customer with its addresses (always) and its payment methods (only when asked for). */
export function serializeCustomer(row: any, addresses: any[] = [], paymentMethods?: any[]) {
  return {
    object: 'customer',
    id: row.id,
    account_id: row.account_id,
    name: row.name,
    email: row.email,
    phone: row.phone,
    country: row.country,
    alternate_emails: row.alternate_emails ?? [],
    is_guest: row.is_guest,
    deleted: row.deleted,
    metadata: row.metadata ?? {},
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    addresses: addresses.map(serializeCustomerAddress),
    ...(paymentMethods ? { payment_methods: paymentMethods.map(serializePaymentMethod) } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------
// Webhooks

/**
 * A webhook endpoint. `secret` is the plaintext and is given only on create and rotate-secret (shown
 * once); the stored secrets (`*_secret_encrypted`) are never copied.
 */
export function serializeWebhookEndpoint(row: any, secret?: string) {
  return {
    object: 'webhook_endpoint',
    id: row.id,
    account_id: row.account_id,
    url: row.url,
    description: row.description ?? null,
    events: row.events ?? ['*'],
    metadata: row.metadata ?? {},
    status: row.status,
    disabled_reason: row.status === 'disabled' ? (row.disabled_reason ?? null) : null,
    secret: secret ?? null,
    secret_rotation: row.secret_rotation ?? 0,
    previous_secret_expires_at: row.previous_secret_encrypted ? iso(row.previous_secret_expires_at) : null,
    verification: row.verification ?? null,
    verified_at: iso(row.verified_at),
    failing_since: iso(row.failing_since),
    deleted: row.deleted,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function serializeWebhookAttempt(row: any) {
  return {
    object: 'webhook_attempt',
    id: row.id,
    delivery_id: row.delivery_id,
    endpoint_id: row.endpoint_id,
    attempt_no: row.attempt_no,
    trigger: row.trigger,
    url: row.url,
    webhook_timestamp: row.webhook_timestamp,
    status_code: row.status_code,
    outcome: row.outcome,
    duration_ms: row.duration_ms,
    response_body: row.response_body ?? null,
    response_body_truncated: row.response_body_truncated,
    error: row.error ?? null,
    created_at: iso(row.created_at),
  };
}

/** A webhook delivery; `attempts` (rows, oldest first) is embedded only when given. */
export function serializeWebhookDelivery(row: any, attempts?: any[]) {
  return {
    object: 'webhook_delivery',
    id: row.id,
    account_id: row.account_id,
    endpoint_id: row.endpoint_id,
    event_id: row.event_id,
    event_type: row.event_type,
    status: row.status,
    attempt_count: row.attempt_count,
    replay_count: row.replay_count,
    next_attempt_at: iso(row.next_attempt_at),
    last_attempt_at: iso(row.last_attempt_at),
    last_status_code: row.last_status_code ?? null,
    last_error: row.last_error ?? null,
    succeeded_at: iso(row.succeeded_at),
    dead_lettered_at: iso(row.dead_lettered_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    ...(attempts ? { attempts: attempts.map(serializeWebhookAttempt) } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------
// Events

/** An event record: the timeline entry behind a transition and the source of webhooks. */
export function serializeEvent(row: any) {
  return {
    object: 'event',
    id: row.id,
    event: row.event,
    account_id: row.account_id,
    workspace_id: row.workspace_id ?? null,
    data: row.data ?? {},
    version: row.version,
    request_id: row.request_id ?? null,
    trace_id: row.trace_id ?? null,
    region: row.region ?? null,
    subject_type: row.subject_type ?? null,
    subject_id: row.subject_id ?? null,
    payment_id: row.payment_id ?? null,
    charge_id: row.charge_id ?? null,
    refund_id: row.refund_id ?? null,
    checkout_session_id: row.checkout_session_id ?? null,
    actor_type: row.actor_type ?? null,
    actor_id: row.actor_id ?? null,
    api_key_id: row.api_key_id ?? null,
    service: row.service ?? null,
    routing_plan_id: row.routing_plan_id ?? null,
    attempt_id: row.attempt_id ?? null,
    created_at: iso(row.created_at),
  };
}
