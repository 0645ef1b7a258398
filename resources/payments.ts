import { Static, Type } from '@sinclair/typebox';
import type { PaymentMethodRow } from '../db/payment-methods';
import type { AnsweredCharge, AnsweredPayment, ChargeRow, PaymentRow, ShownPayment } from '../db/payments';
import { iso } from '../lib/timestamps';
import { PAYMENT_STATUSES } from '../contracts/payments';
import { Resource, Timestamp } from './schemas';
import { EventSchema, type Event } from './events';

// Payments and their charges as the API shows them and webhooks carry them (docs/payments.md): each
// schema next to the serializer that fills it, so a field cannot drift between the document and the
// answer. Embeds of other resources (customer, routing plans, events) come serialized by their own.

const Str = Type.String();
const NullableStr = Type.Union([Type.String(), Type.Null()]);
const Open = Type.Record(Type.String(), Type.Unknown());
const Amount = Type.Integer({ description: 'minor units' });
const Stamps = { created_at: Timestamp, updated_at: Timestamp };
const Disputes = {
  disputed: Type.Boolean({ description: 'a dispute (a chargeback, an inquiry or an early fraud warning) was opened on it' }),
  amount_disputed: Type.Integer({ description: 'minor units: what its chargebacks claim (inquiries claim nothing)' }),
};

/** Whether a charge (or a payment, over its charges) is disputed, and for how much (db/payments.ts chargeDisputesSql). */
export interface DisputedAmount { disputed: boolean; amount: number }

export const PaymentStatusSchema = Type.Union(PAYMENT_STATUSES.map((s) => Type.Literal(s)));

export const CHARGE_STATUSES = [
  'CREATED', 'REQUIRES_ACTION', 'AUTHORIZED', 'CAPTURED', 'DECLINED', 'FAILED', 'UNKNOWN', 'VOIDED', 'PARTIALLY_REFUNDED', 'REFUNDED',
] as const satisfies readonly ChargeRow['status'][];

export const ChargeSchema = Resource('charge', {
  id: Str, payment_id: Str, payment_method_id: NullableStr, customer_id: NullableStr, account_id: Str,
  status: Type.Union(CHARGE_STATUSES.map((s) => Type.Literal(s))),
  amount: Amount, authorized_amount: Amount, captured_amount: Amount, refunded_amount: Amount, pending_refund_amount: Amount,
  currency: Str, installments: Type.Integer(), attempt_no: Type.Integer(),
  security: Open, transaction: Open, details: Open, metadata: Open, exchanges: Type.Array(Type.Unknown()),
  performance: Type.Object({ duration: Type.Number({ description: 'milliseconds' }) }, { additionalProperties: true }),
  routing_plan_id: NullableStr, payment_provider_id: NullableStr, payment_provider_config_id: NullableStr, payment_provider_method_id: NullableStr,
  routing_origin: Str, payment_provider_config_snapshot: Open, decline_code: NullableStr, provider_reference: NullableStr, ...Disputes, ...Stamps,
});

export type Charge = Static<typeof ChargeSchema>;

const RedirectToUrl = Type.Object({
  url: Type.String({ description: 'where the customer authenticates (the issuer\'s or processor\'s page)' }),
  return_url: Type.Union([Type.String(), Type.Null()], { description: 'the confirm\'s return_url: where the customer lands afterwards' }),
});

export const PaymentSchema = Resource('payment', {
  id: Str, account_id: Str, customer_id: NullableStr, checkout_session_id: NullableStr, payment_method_id: NullableStr,
  amount: Amount, currency: Str, status: PaymentStatusSchema, auto_capture: Type.Boolean(),
  secure_mode: Type.Union([Type.Literal('NONE'), Type.Literal('PREFERRED'), Type.Literal('REQUIRED')]),
  installments: Type.Integer(), routing_origin: Str, routing: Open,
  amount_capturable: Amount, amount_received: Amount, amount_refunded: Amount,
  cancellation_reason: NullableStr,
  last_error: Type.Union([Type.Object({ code: Str }, { additionalProperties: true }), Type.Null()]),
  next_action: Type.Union([
    Type.Object({
      type: Type.Literal('redirect_to_url'), redirect_to_url: RedirectToUrl,
      since: Type.String({ description: 'when the payment started waiting for the customer' }),
    }, { description: 'the step the customer must take (3-D Secure) while the payment is REQUIRES_ACTION' }),
    Type.Null(),
  ]),
  pending_operation: Type.Union([
    Type.Object({
      type: Type.Union([Type.Literal('capture'), Type.Literal('void')]), charge_id: Str,
      amount: Type.Union([Amount, Type.Null()]), requested_at: Timestamp,
    }, { description: 'a capture or void the processor received and will confirm by notification (Adyen); the status moves on then' }),
    Type.Null(),
  ]),
  needs_attention: Type.Boolean({
    description: 'the payment\'s workflow stopped acting on it (a write the database refuses for good): an operator settles it; the status stays what the money is',
  }),
  needs_attention_reason: Type.Union([Type.String(), Type.Null()], { description: 'why, while needs_attention (e.g. permanent_data_error)' }),
  metadata: Type.Record(Type.String(), Type.String()), ...Disputes, ...Stamps,
  client_secret: Type.Optional(Type.String({
    description: 'The payment\'s own secret (`<id>_secret_…`), on every answer about this one payment to a secret key or a user: '
      + 'hand it to the customer\'s browser, which confirms and reads the payment with it and a publishable key. Never in lists or events.',
  })),
  charges: Type.Optional(Type.Array(ChargeSchema)),
  customer: Type.Optional(Type.Union([Open, Type.Null()])),
  routing_plans: Type.Optional(Type.Array(Type.Object({ object: Type.Literal('routing_plan') }, { additionalProperties: true }))),
  events: Type.Optional(Type.Array(EventSchema)),
  temporal: Type.Optional(Type.Object({
    workflow_id: Str, namespace: Str, ui_url: Type.String({ description: 'the workflow in the Temporal UI' }),
  }, { description: "the operator's way into the payment's workflow" })),
});

export type Payment = Static<typeof PaymentSchema>;

/** What a publishable key sees of a payment: what a checkout page needs, and nothing else. */
export const CheckoutPaymentSchema = Type.Object({
  object: Type.Literal('payment'),
  id: Type.String(),
  amount: Amount,
  currency: Type.String(),
  status: PaymentStatusSchema,
  next_action: Type.Union([
    Type.Object({ type: Type.Literal('redirect_to_url'), redirect_to_url: RedirectToUrl }, { additionalProperties: false }),
    Type.Null(),
  ], { description: 'the step the customer must take (3-D Secure): send the browser to redirect_to_url.url' }),
  last_error: Type.Union([
    Type.Object({ code: Type.String(), decline_code: Type.Union([Type.String(), Type.Null()]) }, { additionalProperties: false }),
    Type.Null(),
  ]),
  card: Type.Union([
    Type.Object({ network: Type.String(), last4: Type.String() }, { additionalProperties: false }),
    Type.Null(),
  ], { description: 'the card the payment was last confirmed with' }),
}, { additionalProperties: false, title: 'CheckoutPayment', description: 'A payment as a publishable key sees it.' });

export type CheckoutPayment = Static<typeof CheckoutPaymentSchema>;

/** The full payment (secret keys and users), or the checkout view (publishable keys): never both. */
export const PaymentOrCheckoutSchema = Type.Unsafe<Payment | CheckoutPayment>({
  oneOf: [PaymentSchema, CheckoutPaymentSchema],
  description: 'The full payment for secret keys and user tokens; the CheckoutPayment shape for publishable keys.',
});

const CREDENTIAL_KEYS = new Set(['credentials', 'credentials_encrypted']);

/** A copy of `value` without any credentials key at any depth (snapshots are shown to merchants). */
function withoutCredentials(value: unknown, depth: number): unknown {
  if (depth > 10) return null;
  if (Array.isArray(value)) return value.map((item) => withoutCredentials(item, depth + 1));
  if (typeof value === 'object' && value !== null) return withoutCredentialKeys(value, depth);
  return value;
}

function withoutCredentialKeys(value: object, depth = 0): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([key]) => !CREDENTIAL_KEYS.has(key))
    .map(([key, child]) => [key, withoutCredentials(child, depth + 1)]));
}

/**
 * A charge as the API shows it, undisputed: the API's answers read its disputes and add them (withDispute).
 * Events show a charge undisputed; its disputes have events of their own (charge.dispute.*).
 */
export function serializeCharge(row: ChargeRow | AnsweredCharge): Charge {
  const performance = row.performance ?? {};
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
    payment_provider_config_snapshot: withoutCredentialKeys(row.payment_provider_config_snapshot ?? {}),
    decline_code: row.decline_code ?? null,
    provider_reference: row.provider_reference ?? null,
    disputed: false,
    amount_disputed: 0,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** A serialized charge or payment with its disputes set (in place: no copy per read), when it has any. */
export function withDispute<T extends Charge | Payment>(resource: T, dispute: DisputedAmount | undefined): T {
  if (dispute) {
    resource.disputed = dispute.disputed;
    resource.amount_disputed = dispute.amount;
  }
  return resource;
}

/** A payment's embeds: its charges as rows; the others already serialized by their own resources. */
export interface PaymentEmbeds {
  charges?: (ChargeRow | AnsweredCharge)[];
  routing_plans?: Payment['routing_plans'];
  customer?: Record<string, unknown> | null;
  events?: Event[];
  temporal?: Payment['temporal'];
  /** The payment's disputes over its charges, and each charge's (by charge id): undisputed where absent. */
  dispute?: DisputedAmount;
  chargeDisputes?: ReadonlyMap<string, DisputedAmount>;
}

/** A payment, with the embeds it is given (and only those). */
export function serializePayment(row: ShownPayment, embeds: PaymentEmbeds = {}): Payment {
  const payment: Payment = {
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
    routing: { ...row.routing },
    amount_capturable: Number(row.amount_capturable ?? 0),
    amount_received: Number(row.amount_received ?? 0),
    amount_refunded: Number(row.amount_refunded ?? 0),
    cancellation_reason: row.cancellation_reason ?? null,
    last_error: row.last_error ?? null,
    next_action: row.next_action
      ? { type: row.next_action.type, redirect_to_url: { ...row.next_action.redirect_to_url }, since: row.next_action.since }
      : null,
    pending_operation: row.pending_operation ?? null,
    needs_attention: row.needs_attention_at != null,
    needs_attention_reason: row.needs_attention_reason ?? null,
    metadata: row.metadata ?? {},
    disputed: false,
    amount_disputed: 0,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
  // Added one by one rather than spread into the literal: a literal with spreads is built property by
  // property at run time, every read (see docs/performance.md#the-read-path).
  if (embeds.charges) {
    const disputes = embeds.chargeDisputes;
    payment.charges = embeds.charges.map((charge) => withDispute(serializeCharge(charge), disputes?.get(charge.id)));
  }
  if (embeds.customer !== undefined) payment.customer = embeds.customer;
  if (embeds.routing_plans) payment.routing_plans = embeds.routing_plans;
  if (embeds.events) payment.events = embeds.events;
  if (embeds.temporal) payment.temporal = embeds.temporal;
  return withDispute(payment, embeds.dispute);
}

/**
 * Why the last confirm failed, as a checkout sees it: any issuer's decline is the same generic one
 * (`card_declined` / `generic_decline`), so that `incorrect_cvc` and `insufficient_funds` tell a card tester
 * nothing; other codes (`too_many_attempts`, `authentication_failed`, …) as they are, without the issuer's
 * decline code behind them. Secret keys and users read the precise one.
 */
function checkoutLastError(lastError: PaymentRow['last_error']): CheckoutPayment['last_error'] {
  if (!lastError) return null;
  const code = lastError.code ?? 'unknown';
  return code === 'card_declined' ? { code, decline_code: 'generic_decline' } : { code, decline_code: null };
}

/**
 * A payment as a publishable key sees it (a checkout page): amount, status, what to do next, why the
 * last attempt failed (checkoutLastError), and which card was used, by network and last4. Nothing about
 * the merchant, the customer, the routing or the card's id. `card` is the payment's card, when it has one.
 */
export function serializeCheckoutPayment(row: PaymentRow | AnsweredPayment, card?: Pick<PaymentMethodRow, 'card_network' | 'card_last4'> | null): CheckoutPayment {
  return {
    object: 'payment',
    id: row.id,
    amount: Number(row.amount),
    currency: row.currency,
    status: row.status,
    next_action: row.next_action ? { type: row.next_action.type, redirect_to_url: { ...row.next_action.redirect_to_url } } : null,
    last_error: checkoutLastError(row.last_error),
    card: card ? { network: card.card_network, last4: card.card_last4 } : null,
  };
}
