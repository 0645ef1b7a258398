import { expect } from 'vitest';
import { bearer, type Merchant, type TestStack } from '../support/stack';

// What the checkout session and payment link suites share: a session's request, and the reads of the
// rows and events the assertions look at.

export const SHOP = 'https://shop.example.test';
export const SESSION = { amount: 1500, currency: 'USD', success_url: `${SHOP}/thanks`, cancel_url: `${SHOP}/cart` } as const;

/** Every field of a checkout session, as the issue lists them. */
export const SESSION_FIELDS = [
  'object', 'id', 'status', 'payment_status', 'amount', 'currency', 'line_items', 'url', 'client_secret', 'payment_id', 'customer_id',
  'success_url', 'cancel_url', 'expires_at', 'metadata', 'created_at', 'updated_at',
].sort();

export function createSession(stack: TestStack, m: Merchant, body: Record<string, unknown> = {}, headers: Record<string, string> = bearer(m.secretKey)) {
  return stack.http.post('/v1/checkout-sessions').set(headers).send({ ...SESSION, ...body });
}

/** A new session (201), its answer's data. */
export async function openSession(stack: TestStack, m: Merchant, body: Record<string, unknown> = {}) {
  const res = await createSession(stack, m, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

export async function getSession(stack: TestStack, m: Merchant, id: string) {
  const res = await stack.http.get(`/v1/checkout-sessions/${id}`).set(bearer(m.secretKey));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

export const paymentRow = (stack: TestStack, id: string, schema = 'live') => stack.db(`${schema}.payments`).where({ id }).first();
export const sessionRow = (stack: TestStack, id: string, schema = 'live') => stack.db(`${schema}.checkout_sessions`).where({ id }).first();

/** The account's events about a payment (a session's events carry its payment's id), oldest first. */
export async function eventsOfPayment(stack: TestStack, m: Merchant, paymentId: string): Promise<any[]> {
  const res = await stack.http.get(`/v1/events?payment_id=${paymentId}&limit=100`).set(bearer(m.secretKey));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return [...res.body.data].reverse();
}
