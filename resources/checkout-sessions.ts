import { Static, Type } from '@sinclair/typebox';
import type { CheckoutSessionRow } from '../db/checkout-sessions';
import { CHECKOUT_PAYMENT_STATUSES, CHECKOUT_SESSION_STATUSES } from '../contracts/checkout';
import { iso } from '../lib/timestamps';
import { Resource, Timestamp } from './schemas';

const NullableStr = Type.Union([Type.String(), Type.Null()]);

/** One line of what is bought, as a session or a payment link shows it. */
export const LineItemSchema = Type.Object({
  name: Type.String(), quantity: Type.Integer(), unit_amount: Type.Integer({ description: 'minor units' }),
});

/** A session's or link's lines: null when it was made with amount and currency instead. */
export const LineItemsSchema = Type.Union([Type.Array(LineItemSchema), Type.Null()]);

/** The hosted payment page of a session: its id is the page's capability (80 random bits). */
export function checkoutPageUrl(publicUrl: string, sessionId: string): string {
  return `${publicUrl}/checkout/${encodeURIComponent(sessionId)}`;
}

/** A checkout session (docs/checkout.md): what is bought, where the customer pays it, and how it ended. */
export const CheckoutSessionSchema = Resource('checkout_session', {
  id: Type.String(),
  status: Type.Union(CHECKOUT_SESSION_STATUSES.map((s) => Type.Literal(s))),
  payment_status: Type.Union(CHECKOUT_PAYMENT_STATUSES.map((s) => Type.Literal(s))),
  amount: Type.Integer({ description: 'minor units; with line_items, their sum' }),
  currency: Type.String(),
  line_items: LineItemsSchema,
  url: Type.String({ description: 'the hosted payment page to send the customer to' }),
  client_secret: Type.Union([Type.String(), Type.Null()], {
    description: 'the payment\'s client_secret, for card fields on the merchant\'s own page; null in events',
  }),
  payment_id: Type.String(),
  customer_id: NullableStr,
  success_url: NullableStr,
  cancel_url: NullableStr,
  expires_at: Timestamp,
  metadata: Type.Record(Type.String(), Type.Unknown()),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export type CheckoutSession = Static<typeof CheckoutSessionSchema>;

/**
 * A session as the API shows it. `clientSecret` is its payment's; events and webhooks are given null
 * (they reach endpoints and logs, where a payment's secret has no business).
 */
export function serializeCheckoutSession(row: CheckoutSessionRow, publicUrl: string, clientSecret: string | null): CheckoutSession {
  return {
    object: 'checkout_session',
    id: row.id,
    status: row.status,
    payment_status: row.payment_status,
    amount: Number(row.amount),
    currency: row.currency,
    line_items: row.line_items ?? null,
    url: checkoutPageUrl(publicUrl, row.id),
    client_secret: clientSecret,
    payment_id: row.payment_id,
    customer_id: row.customer_id ?? null,
    success_url: row.success_url ?? null,
    cancel_url: row.cancel_url ?? null,
    expires_at: iso(row.expires_at),
    metadata: row.metadata ?? {},
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
