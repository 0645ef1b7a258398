import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envTable } from '../../db/environments';
import { newId } from '../../lib/ids';
import { bearer, createMerchant, Merchant, startStack, TestStack } from '../support/stack';

let stack: TestStack;
let m: Merchant;
let customerId: string;
let paymentId: string;
beforeAll(async () => {
  stack = await startStack();
  m = await createMerchant(stack);
  const customer = await stack.http.post('/v1/customers').set(bearer(m.secretKey)).send({
    name: 'Ada Lovelace', email: 'ada@example.com', phone: '+15550100',
    addresses: [{ type: 'BILLING', country: 'US', city: 'Boston', line1: '1 Main St', zip: '02101' }],
  });
  expect(customer.status, JSON.stringify(customer.body)).toBe(201);
  customerId = customer.body.data.id;
  paymentId = await seedPayment(m.account.id, customerId);
});
afterAll(async () => { await stack.close(); });

/** A payment of the customer, as the workflow writes it; embeds need nothing more than the row. */
async function seedPayment(accountId: string, customer: string): Promise<string> {
  const id = newId('pay');
  await stack.db(envTable('production', 'payments')).insert({
    id, account_id: accountId, customer_id: customer, amount: 1_000, currency: 'USD', status: 'REQUIRES_PAYMENT_METHOD',
    auto_capture: true, secure_mode: 'NONE', installments: 1, routing_origin: 'MERCHANT_DIRECT', routing: JSON.stringify({}),
    amount_capturable: 0, amount_received: 0, amount_refunded: 0, metadata: JSON.stringify({}),
  });
  return id;
}

async function customKey(permissions: Record<string, string[]>): Promise<string> {
  const res = await stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'embeds', permissions });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.key;
}

const getOne = (key: string, query: string) => stack.http.get(`/v1/payments/${paymentId}?${query}`).set(bearer(key));
const list = (key: string, query: string) => stack.http.get(`/v1/payments?${query}`).set(bearer(key));

function expectDenied(res: { status: number; body: any; text: string }, required: string) {
  expect(res.status, res.text).toBe(403);
  expect(res.body).toMatchObject({ success: false, error: { code: 403, details: { reason: 'insufficient_permissions', required } } });
  expect(res.text).not.toContain('Ada Lovelace');
}

/** Each payment embed and the permission of the resource it shows. */
const EMBEDS: [flag: string, required: string][] = [
  ['include_customer', 'customer:read'],
  ['include_events', 'event:read'],
  ['include_routing_plans', 'routing:read'],
];

describe('payment reads embed only what the credential may read itself', () => {
  it.each(EMBEDS)('refuses %s to a key holding only payment:read (needs %s), on get and on list', async (flag, required) => {
    const key = await customKey({ payment: ['read'] });
    expectDenied(await getOne(key, `${flag}=true`), required);
    expectDenied(await list(key, `${flag}=true`), required);
  });

  it('refuses the whole read when one of several embeds is not allowed, naming the missing permission', async () => {
    const key = await customKey({ payment: ['read'], customer: ['read'] });
    expectDenied(await getOne(key, 'include_customer=true&include_events=true&include_routing_plans=true'), 'event:read');
    expectDenied(await list(key, 'include_customer=true&include_charges=true&include_events=true'), 'event:read');
  });

  it('answers a payment:read key the payment alone, its charges, and include flags set to false', async () => {
    const key = await customKey({ payment: ['read'] });
    const plain = await getOne(key, '');
    expect(plain.status, plain.text).toBe(200);
    expect(plain.body.data).toMatchObject({ id: paymentId, customer_id: customerId });
    expect(plain.body.data).not.toHaveProperty('customer');

    const withCharges = await getOne(key, 'include_charges=true&include_customer=false&include_events=false');
    expect(withCharges.status, withCharges.text).toBe(200);
    expect(withCharges.body.data.charges).toEqual([]);
    const listed = await list(key, 'include_charges=true');
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data.map((p: { id: string }) => p.id)).toContain(paymentId);
  });

  it('embeds what a key holds the permission for', async () => {
    const key = await customKey({ payment: ['read'], customer: ['read'] });
    const res = await getOne(key, 'include_customer=true');
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.customer).toMatchObject({ id: customerId, name: 'Ada Lovelace', email: 'ada@example.com' });
  });

  it('still gives a full secret key, and the owner\'s token, every embed', async () => {
    const all = 'include_charges=true&include_customer=true&include_events=true&include_routing_plans=true';
    for (const [credential, query] of [[m.secretKey, all], [m.token, `${all}&account_id=${m.account.id}`]]) {
      const one = await getOne(credential, query);
      expect(one.status, one.text).toBe(200);
      expect(one.body.data).toMatchObject({ charges: [], events: [], routing_plans: [], customer: { id: customerId, name: 'Ada Lovelace' } });
      const listed = await list(credential, query);
      expect(listed.status, listed.text).toBe(200);
      expect(listed.body.data.find((p: { id: string }) => p.id === paymentId)).toMatchObject({ customer: { email: 'ada@example.com' }, events: [] });
    }
  });
});

describe('customer reads', () => {
  it('embed payment methods for customer:read: they are part of the customer, with no permission of their own', async () => {
    const key = await customKey({ customer: ['read'] });
    const res = await stack.http.get(`/v1/customers/${customerId}?include_payment_methods=true`).set(bearer(key));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.payment_methods).toEqual([]);
  });
});

describe('routing plans embed their payment and charges only for a credential that may read payments', () => {
  /** A plan of the payment seeded above, as the payment workflow writes it. */
  async function seedPlanOf(payment: string): Promise<string> {
    const id = newId('rp');
    await stack.db(envTable('production', 'routing_plans')).insert({
      id, account_id: m.account.id, payment_id: payment, request_id: 'req_1', trace_id: 'trace_1', current_index: 0,
      candidates: JSON.stringify([]), metadata: JSON.stringify({ ineligible: [] }),
    });
    return id;
  }

  it('refuses an explicit embed to a routing:read key, and leaves the default embeds out for it', async () => {
    const planId = await seedPlanOf(paymentId);
    const key = await customKey({ routing: ['read'] });
    for (const flag of ['include_payment', 'include_charges', 'include_attempts']) {
      const res = await stack.http.get(`/v1/routing-plans/${planId}?${flag}=true`).set(bearer(key));
      expect(res.status, res.text).toBe(403);
      expect(res.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'payment:read' });
    }
    const plain = await stack.http.get(`/v1/routing-plans/${planId}`).set(bearer(key));
    expect(plain.status, plain.text).toBe(200);
    expect(plain.body.data.id).toBe(planId);
    expect(plain.body.data).not.toHaveProperty('payment');
    expect(plain.body.data).not.toHaveProperty('charges');
    const listed = await stack.http.get(`/v1/routing-plans?payment_id=${paymentId}`).set(bearer(key));
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data.map((p: { id: string; payment?: unknown }) => [p.id, 'payment' in p])).toEqual([[planId, false]]);
  });

  it('still embeds them by default for a key that may read payments', async () => {
    const key = await customKey({ routing: ['read'], payment: ['read'] });
    const listed = await stack.http.get(`/v1/routing-plans?payment_id=${paymentId}`).set(bearer(key));
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data[0].payment).toMatchObject({ id: paymentId });
    expect(listed.body.data[0].charges).toEqual([]);
  });
});
