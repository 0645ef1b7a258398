/**
 * Row → API resource shapes. Shared by the API (responses) and the worker (webhook payloads), so a
 * resource looks the same wherever it appears. Timestamps are ISO-8601 UTC with milliseconds.
 */
import { iso } from '../lib/timestamps';

// Moved to lib/timestamps.ts; re-exported while serializers still import it from here.
export { iso };

export function serializeAccountSetting(row: any) {
  return { object: 'account_setting', id: row.id, key: row.key, value: row.value, created_at: iso(row.created_at), updated_at: iso(row.updated_at) };
}

export function serializeAccount(row: any, settings: any[] = []) {
  return {
    object: 'account',
    id: row.id,
    user_id: row.user_id,
    workspace_id: row.workspace_id,
    name: row.name,
    country: row.country,
    currency: row.currency,
    timezone: row.timezone,
    environment: row.environment,
    livemode: row.environment === 'production',
    prod_account_id: row.prod_account_id,
    settings: settings.map(serializeAccountSetting),
    deleted: row.deleted,
    metadata: row.metadata ?? {},
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

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

/** A stored card: only what identifies it to a person (network, last4, expiry) — never the number or CVC. */
export function serializePaymentMethod(row: any) {
  return {
    object: 'payment_method',
    id: row.id,
    account_id: row.account_id,
    customer_id: row.customer_id,
    type: row.type,
    card: {
      network: row.card_network,
      last4: row.card_last4,
      exp_month: row.card_exp_month,
      exp_year: row.card_exp_year,
      fingerprint: row.card_fingerprint,
      country: row.card_country ?? null,
      holder_name: row.holder_name ?? null,
    },
    metadata: row.metadata ?? {},
    deleted: row.deleted,
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

export function serializeMembership(row: any) {
  return {
    object: 'account_membership',
    id: row.id,
    account_id: row.account_id,
    user_id: row.user_id,
    role: row.role,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function serializeNotification(row: any, account?: any) {
  return {
    object: 'notification',
    id: row.id,
    user_id: row.user_id ?? null,
    account_id: row.account_id,
    type: row.type,
    details: row.details ?? {},
    archived: row.archived_at !== null && row.archived_at !== undefined,
    archived_at: iso(row.archived_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    ...(account ? { account: serializeAccount(account) } : {}),
  };
}

// ---------------------------------------------------------------------------------------------------
// Payments, charges, routing plans

const CREDENTIAL_KEYS = new Set(['credentials', 'credentials_encrypted']);

/** A copy of `value` without any credentials key at any depth (snapshots are shown to merchants). */
export function withoutCredentials(value: unknown, depth = 0): unknown {
  if (depth > 10) return null;
  if (Array.isArray(value)) return value.map((item) => withoutCredentials(item, depth + 1));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).filter(([key]) => !CREDENTIAL_KEYS.has(key))
      .map(([key, child]) => [key, withoutCredentials(child, depth + 1)]));
  }
  return value;
}

export function serializeCharge(row: any) {
  const performance = (row.performance ?? {}) as Record<string, unknown>;
  return {
    object: 'charge',
    id: row.id,
    payment_id: row.payment_id,
    payment_method_id: row.payment_method_id ?? null,
    customer_id: row.customer_id ?? null,
    account_id: row.account_id,
    status: row.status,
    amount: Number(row.amount),
    authorized_amount: Number(row.authorized_amount ?? 0),
    captured_amount: Number(row.captured_amount ?? 0),
    refunded_amount: Number(row.refunded_amount ?? 0),
    pending_refund_amount: Number(row.pending_refund_amount ?? 0),
    currency: row.currency,
    installments: row.installments,
    attempt_no: row.attempt_no,
    security: row.security ?? {},
    transaction: row.transaction ?? {},
    details: row.details ?? {},
    metadata: row.metadata ?? {},
    exchanges: row.exchanges ?? [],
    // Milliseconds the attempt took; 0 until it is known.
    performance: { ...performance, duration: typeof performance.duration === 'number' ? performance.duration : 0 },
    routing_plan_id: row.routing_plan_id ?? null,
    payment_provider_id: row.payment_provider_id ?? null,
    payment_provider_config_id: row.payment_provider_config_id ?? null,
    payment_provider_method_id: row.payment_provider_method_id ?? null,
    routing_origin: row.routing_origin,
    payment_provider_config_snapshot: withoutCredentials(row.payment_provider_config_snapshot ?? {}),
    decline_code: row.decline_code ?? null,
    provider_reference: row.provider_reference ?? null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** A routing plan; `charges` and `payment` are embedded only when given (already serialized or rows). */
export function serializeRoutingPlan(row: any, embeds: { charges?: any[]; payment?: any; attempts?: any[] } = {}): Record<string, unknown> {
  return {
    object: 'routing_plan',
    id: row.id,
    account_id: row.account_id,
    payment_id: row.payment_id,
    request_id: row.request_id ?? null,
    trace_id: row.trace_id ?? null,
    current_index: row.current_index,
    routing_origin: row.routing_origin,
    candidates: row.candidates ?? [],
    metadata: row.metadata ?? {},
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    ...(embeds.charges ? { charges: embeds.charges.map(serializeCharge) } : {}),
    ...(embeds.attempts ? { attempts: embeds.attempts } : {}),
    ...(embeds.payment !== undefined ? { payment: embeds.payment === null ? null : serializePayment(embeds.payment) } : {}),
  };
}

/**
 * A payment. Embeds are added only when given: `charges` and `routing_plans` as rows, `customer` and
 * `events` already serialized (their serializers live with their own resources).
 */
export function serializePayment(row: any, embeds: { charges?: any[]; routing_plans?: any[]; customer?: unknown; events?: unknown[] } = {}): Record<string, unknown> {
  return {
    object: 'payment',
    id: row.id,
    account_id: row.account_id,
    customer_id: row.customer_id ?? null,
    checkout_session_id: row.checkout_session_id ?? null,
    payment_method_id: row.payment_method_id ?? null,
    amount: Number(row.amount),
    currency: row.currency,
    status: row.status,
    auto_capture: row.auto_capture,
    secure_mode: row.secure_mode,
    installments: row.installments,
    routing_origin: row.routing_origin,
    routing: row.routing ?? {},
    amount_capturable: Number(row.amount_capturable ?? 0),
    amount_received: Number(row.amount_received ?? 0),
    amount_refunded: Number(row.amount_refunded ?? 0),
    cancellation_reason: row.cancellation_reason ?? null,
    last_error: row.last_error ?? null,
    metadata: row.metadata ?? {},
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    ...(embeds.charges ? { charges: embeds.charges.map(serializeCharge) } : {}),
    ...(embeds.customer !== undefined ? { customer: embeds.customer } : {}),
    ...(embeds.routing_plans ? { routing_plans: embeds.routing_plans.map((plan) => serializeRoutingPlan(plan)) } : {}),
    ...(embeds.events ? { events: embeds.events } : {}),
  };
}

/**
 * A payment as a publishable key sees it (a checkout page): amount, status, what to do next, why the
 * last attempt failed, and which card was used, by network and last4. Nothing about the merchant, the
 * customer, the routing or the card's id. `card` is the payment's card row, when it has one.
 */
export function serializeCheckoutPayment(row: any, card?: { card_network: string | null; card_last4: string | null } | null): Record<string, unknown> {
  const lastError = row.last_error as { code?: string; decline_code?: string | null } | null;
  return {
    object: 'payment',
    id: row.id,
    amount: Number(row.amount),
    currency: row.currency,
    status: row.status,
    // Reserved for a step the customer must take (3-D Secure); nothing asks for one yet.
    next_action: null,
    last_error: lastError ? { code: lastError.code ?? 'unknown', decline_code: lastError.decline_code ?? null } : null,
    card: card ? { network: card.card_network, last4: card.card_last4 } : null,
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
