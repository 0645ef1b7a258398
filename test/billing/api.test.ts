import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type supertest from 'supertest';
import { bearer, createMerchant, Merchant, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { newCustomer, savedCard, startSimulator, TestSimulator } from '../support/payments';
import { billingFixture, type BillingFixture } from './support';

/**
 * The billing API's own rules (docs/billing.md): each route's validation answered with a precise 4xx at
 * its field (never a 5xx), who may call what, and another account's ids being 404. The subscriptions'
 * end-to-end behaviour is in subscriptions.test.ts and dunning.test.ts; the last block here only checks
 * that a create, a PATCH and a cancel go through the API to the workflow and back.
 */

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let f: BillingFixture;
/** The sandbox account billing runs in, and a stranger's sandbox. */
let m: Merchant;
let other: Merchant;
let live: Merchant;

type Json = Record<string, any>;

const send = (method: 'get' | 'post' | 'patch' | 'put', path: string, body?: object, token = m.secretKey) => {
  const req = stack.http[method](path).set(bearer(token));
  return method === 'get' ? req : req.send(body ?? {});
};

async function ok(res: supertest.Response | Promise<supertest.Response>, status = 200): Promise<Json> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body.data;
}

/** A 4xx with its reason and (for a field's rule) the field it is about. */
async function refused(res: supertest.Response | Promise<supertest.Response>, status: number, reason: string, path?: string, message?: RegExp): Promise<Json> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body.error.details.reason).toBe(reason);
  if (path !== undefined) expect(r.body.error.details.fields.map((x: Json) => x.path), JSON.stringify(r.body)).toContain(path);
  if (message) expect(r.body.error.message).toMatch(message);
  return r.body.error;
}

const product = (name = 'Pro', token = m.secretKey) => ok(send('post', '/v1/products', { name }, token), 201);
const price = async (body: Json = {}, token = m.secretKey) => {
  const productId = body.product_id ?? (await product('Plan', token)).id;
  return ok(send('post', '/v1/prices', { product_id: productId, unit_amount: 1000, currency: 'USD', recurring: { interval: 'month' }, ...body }, token), 201);
};

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ RATE_LIMIT_RPS: '0', SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '5000' });
  worker = await startWorker(stack);
  f = await billingFixture(stack);
  m = f.merchant;
  other = (await billingFixture(stack)).merchant;
  live = await createMerchant(stack);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

describe('products', () => {
  it('creates, gets, lists (by active) and patches a product; never deletes one', async () => {
    const created = await ok(send('post', '/v1/products', { name: 'Gold', description: 'The gold plan', metadata: { tier: 'gold' } }), 201);
    expect(created).toMatchObject({
      object: 'product', id: expect.stringMatching(/^prod_/), account_id: m.account.id, name: 'Gold', description: 'The gold plan',
      active: true, metadata: { tier: 'gold' }, created_at: expect.any(String), updated_at: expect.any(String),
    });
    expect(await ok(send('get', `/v1/products/${created.id}`))).toEqual(created);
    const retired = await ok(send('patch', `/v1/products/${created.id}`, { active: false, name: 'Gold (old)', description: null }));
    expect(retired).toMatchObject({ active: false, name: 'Gold (old)', description: null, metadata: { tier: 'gold' } });
    const kept = await product('Silver');
    const inactive = await send('get', '/v1/products?active=false');
    expect(inactive.body.data.map((p: Json) => p.id)).toContain(created.id);
    expect(inactive.body.data.map((p: Json) => p.id)).not.toContain(kept.id);
    const page = await send('get', `/v1/products?limit=1&starting_after=${kept.id}`);
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ page: null, limit: 1 });
  });

  it('refuses a bad product with 400 at its field', async () => {
    await refused(send('post', '/v1/products', {}), 400, 'validation_failed', 'body/name');
    await refused(send('post', '/v1/products', { name: '' }), 400, 'validation_failed', 'body/name');
    await refused(send('post', '/v1/products', { name: 'x', colour: 'red' }), 400, 'unknown_field');
    await refused(send('patch', '/v1/products/prod_nope', { active: true }), 404, 'not_found');
    await refused(send('get', '/v1/products?starting_after=prod_nope'), 422, 'invalid_pagination');
  });
});

describe('prices', () => {
  it('creates a recurring price of an active product, gets, lists by product and retires it; amounts never change', async () => {
    const p = await product('Team');
    const created = await price({ product_id: p.id, unit_amount: 2500, recurring: { interval: 'week', interval_count: 2 }, metadata: { a: 'b' } });
    expect(created).toMatchObject({
      object: 'price', id: expect.stringMatching(/^price_/), account_id: m.account.id, product_id: p.id, active: true,
      unit_amount: 2500, currency: 'USD', recurring: { interval: 'week', interval_count: 2 }, metadata: { a: 'b' },
    });
    expect((await price({ product_id: p.id })).recurring).toEqual({ interval: 'month', interval_count: 1 });
    expect(await ok(send('get', `/v1/prices/${created.id}`))).toEqual(created);
    const listed = await send('get', `/v1/prices?product_id=${p.id}`);
    expect(listed.body.data).toHaveLength(2);
    expect(listed.body.total).toBe(2);
    expect(await ok(send('patch', `/v1/prices/${created.id}`, { active: false }))).toMatchObject({ active: false, unit_amount: 2500 });
    expect((await send('get', `/v1/prices?product_id=${p.id}&active=true`)).body.data).toHaveLength(1);
    await refused(send('patch', `/v1/prices/${created.id}`, { unit_amount: 1 }), 400, 'unknown_field');
  });

  it('refuses a bad price with 400 at its field', async () => {
    const p = await product();
    const base = { product_id: p.id, unit_amount: 1000, currency: 'USD', recurring: { interval: 'month' } };
    await refused(send('post', '/v1/prices', { ...base, product_id: 'prod_nope' }), 400, 'validation_failed', 'body/product_id', /not a product of this account/);
    const theirs = await product('Theirs', other.secretKey);
    await refused(send('post', '/v1/prices', { ...base, product_id: theirs.id }), 400, 'validation_failed', 'body/product_id');
    const retired = await product('Retired');
    await ok(send('patch', `/v1/products/${retired.id}`, { active: false }));
    await refused(send('post', '/v1/prices', { ...base, product_id: retired.id }), 400, 'validation_failed', 'body/product_id', /retired/);
    await refused(send('post', '/v1/prices', { ...base, unit_amount: 0 }), 400, 'validation_failed', 'body/unit_amount');
    await refused(send('post', '/v1/prices', { ...base, unit_amount: 12.5 }), 400, 'validation_failed', 'body/unit_amount');
    await refused(send('post', '/v1/prices', { ...base, currency: 'usd' }), 400, 'validation_failed', 'body/currency');
    await refused(send('post', '/v1/prices', { ...base, recurring: { interval: 'fortnight' } }), 400, 'validation_failed', 'body/recurring/interval');
    await refused(send('post', '/v1/prices', { ...base, recurring: { interval: 'month', interval_count: 0 } }), 400, 'validation_failed', 'body/recurring/interval_count');
    // At most three years between renewals, as Stripe allows.
    await refused(send('post', '/v1/prices', { ...base, recurring: { interval: 'year', interval_count: 4 } }), 400, 'validation_failed', 'body/recurring/interval_count');
    await refused(send('post', '/v1/prices', { ...base, recurring: { interval: 'month', interval_count: 37 } }), 400, 'validation_failed', 'body/recurring/interval_count');
    await ok(send('post', '/v1/prices', { ...base, recurring: { interval: 'month', interval_count: 36 } }), 201);
    await refused(send('post', '/v1/prices', { product_id: p.id, unit_amount: 1000, currency: 'USD' }), 400, 'validation_failed', 'body/recurring');
  });
});

describe('who may call what', () => {
  it('keeps a publishable key and a billing:read key from writing, and lets the read key read', async () => {
    const p = await product();
    await refused(send('post', '/v1/products', { name: 'x' }, m.publishableKey), 403, 'publishable_key_not_allowed');
    await refused(send('get', `/v1/products/${p.id}`, undefined, m.publishableKey), 403, 'publishable_key_not_allowed');
    await refused(send('get', '/v1/subscriptions', undefined, m.publishableKey), 403, 'publishable_key_not_allowed');
    const key = await ok(stack.http.post('/v1/api-keys').set(bearer(m.secretKey)).send({ name: 'billing desk', permissions: { billing: ['read'] } }), 201);
    expect(await ok(send('get', `/v1/products/${p.id}`, undefined, key.key))).toMatchObject({ id: p.id });
    await ok(send('get', '/v1/invoices', undefined, key.key));
    await refused(send('post', '/v1/products', { name: 'x' }, key.key), 403, 'insufficient_permissions');
    await refused(send('patch', `/v1/products/${p.id}`, { active: false }, key.key), 403, 'insufficient_permissions');
    await refused(send('post', '/v1/prices', { product_id: p.id, unit_amount: 1, currency: 'USD', recurring: { interval: 'day' } }, key.key), 403, 'insufficient_permissions');
    // Well-formed, so that what stops it is the permission (a body is validated before the account's permissions are checked).
    const wellFormed = { customer_id: 'cus_x', default_payment_method_id: 'pm_x', items: [{ price_id: 'price_x' }] };
    await refused(send('post', '/v1/subscriptions', wellFormed, key.key), 403, 'insufficient_permissions');
    await refused(send('post', '/v1/subscriptions', wellFormed, m.publishableKey), 403, 'publishable_key_not_allowed');
    await refused(send('post', '/v1/test-clocks', { frozen_time: '2026-01-01T00:00:00Z' }, key.key), 403, 'insufficient_permissions');
  });

  it('answers 404 for another account\'s products, prices, subscriptions, invoices and clocks', async () => {
    const theirPrice = await price({}, other.secretKey);
    const theirClock = await ok(send('post', '/v1/test-clocks', { frozen_time: '2026-01-01T00:00:00Z' }, other.secretKey), 201);
    await refused(send('get', `/v1/products/${theirPrice.product_id}`), 404, 'not_found');
    await refused(send('patch', `/v1/products/${theirPrice.product_id}`, { active: false }), 404, 'not_found');
    await refused(send('get', `/v1/prices/${theirPrice.id}`), 404, 'not_found');
    await refused(send('patch', `/v1/prices/${theirPrice.id}`, { active: false }), 404, 'not_found');
    await refused(send('get', `/v1/test-clocks/${theirClock.id}`), 404, 'not_found');
    await refused(send('post', `/v1/test-clocks/${theirClock.id}/advance`, { frozen_time: '2026-02-01T00:00:00Z' }), 404, 'not_found');
    await refused(send('get', '/v1/subscriptions/sub_nope'), 404, 'not_found');
    await refused(send('patch', '/v1/subscriptions/sub_nope', { metadata: {} }), 404, 'not_found');
    await refused(send('post', '/v1/subscriptions/sub_nope/cancel', {}), 404, 'not_found');
    await refused(send('get', '/v1/invoices/in_nope'), 404, 'not_found');
    await refused(send('post', '/v1/invoices/in_nope/pay', {}), 404, 'not_found');
    // Theirs is not listed here either.
    expect((await send('get', '/v1/test-clocks')).body.data.map((c: Json) => c.id)).not.toContain(theirClock.id);
  });
});

describe('test clocks', () => {
  it('creates, gets, lists and advances a clock, forward only and at most five years at a time', async () => {
    const clock = await ok(send('post', '/v1/test-clocks', { frozen_time: '2026-03-01T10:00:00Z', name: 'March' }), 201);
    expect(clock).toMatchObject({
      object: 'test_clock', id: expect.stringMatching(/^clock_/), account_id: m.account.id, name: 'March',
      frozen_time: '2026-03-01T10:00:00.000Z', status: 'READY',
    });
    expect(await ok(send('get', `/v1/test-clocks/${clock.id}`))).toEqual(clock);
    expect((await ok(send('get', '/v1/test-clocks'))).map((c: Json) => c.id)).toContain(clock.id);
    const advanced = await ok(send('post', `/v1/test-clocks/${clock.id}/advance`, { frozen_time: '2026-04-01T10:00:00Z' }));
    // No subscription on it: nothing to wait for.
    expect(advanced).toMatchObject({ frozen_time: '2026-04-01T10:00:00.000Z', status: 'READY' });
    await ok(send('post', `/v1/test-clocks/${clock.id}/advance`, { frozen_time: '2026-04-01T10:00:00Z' }));
    await refused(send('post', `/v1/test-clocks/${clock.id}/advance`, { frozen_time: '2026-03-31T10:00:00Z' }), 400, 'validation_failed', 'body/frozen_time', /only move forward/);
    await refused(send('post', `/v1/test-clocks/${clock.id}/advance`, { frozen_time: '2031-05-01T10:00:00Z' }), 400, 'validation_failed', 'body/frozen_time', /five years/);
    await refused(send('post', `/v1/test-clocks/${clock.id}/advance`, { frozen_time: 'tomorrow' }), 400, 'validation_failed', 'body/frozen_time');
    await refused(send('post', `/v1/test-clocks/${clock.id}/advance`, {}), 400, 'validation_failed', 'body/frozen_time');
    await refused(send('post', '/v1/test-clocks', { frozen_time: '2026-03-01' }), 400, 'validation_failed', 'body/frozen_time');
    await refused(send('post', '/v1/test-clocks', { frozen_time: '9999-01-01T00:00:00Z' }), 400, 'validation_failed', 'body/frozen_time');
  });

  it('exists only in sandbox: a live credential is refused with 400', async () => {
    for (const res of [
      send('post', '/v1/test-clocks', { frozen_time: '2026-01-01T00:00:00Z' }, live.secretKey),
      send('get', '/v1/test-clocks', undefined, live.secretKey),
    ]) await refused(res, 400, 'validation_failed', 'account_id', /only in sandbox/);
  });
});

describe('billing settings', () => {
  const path = () => `/v1/accounts/${m.account.id}/settings/billing`;

  it('shows the defaults until set, then what was set, also among the account\'s settings', async () => {
    const s = await createMerchant(stack);
    expect(await ok(stack.http.get(`/v1/accounts/${s.account.id}/settings/billing`).set(bearer(s.token)))).toEqual({
      object: 'billing_settings', account_id: s.account.id, retry_days: [1, 3, 5, 7], when_exhausted: 'UNPAID',
    });
    const saved = await ok(stack.http.put(`/v1/accounts/${s.account.id}/settings/billing`).set(bearer(s.token)).send({ retry_days: [2, 4], when_exhausted: 'CANCELED' }));
    expect(saved).toMatchObject({ retry_days: [2, 4], when_exhausted: 'CANCELED' });
    expect(await ok(stack.http.get(`/v1/accounts/${s.account.id}/settings/billing`).set(bearer(s.token)))).toEqual(saved);
    const account = await ok(stack.http.get(`/v1/accounts/${s.account.id}`).set(bearer(s.token)));
    expect(account.settings.find((x: Json) => x.key === 'billing')).toBeDefined();
    await ok(stack.http.put(`/v1/accounts/${s.account.id}/settings/billing`).set(bearer(s.token)).send({ retry_days: [], when_exhausted: 'UNPAID' }));
  });

  it('refuses bad settings at their field, and a key without account:settings:write', async () => {
    const put = (body: object) => stack.http.put(path()).set(bearer(m.token)).send(body);
    await refused(put({ retry_days: [3, 3], when_exhausted: 'UNPAID' }), 400, 'validation_failed', 'body/retry_days/1', /strictly ascending/);
    await refused(put({ retry_days: [5, 2], when_exhausted: 'UNPAID' }), 400, 'validation_failed', 'body/retry_days/1');
    await refused(put({ retry_days: [0], when_exhausted: 'UNPAID' }), 400, 'validation_failed', 'body/retry_days/0');
    await refused(put({ retry_days: [61], when_exhausted: 'UNPAID' }), 400, 'validation_failed', 'body/retry_days/0');
    await refused(put({ retry_days: [1, 2, 3, 4, 5, 6, 7, 8, 9], when_exhausted: 'UNPAID' }), 400, 'validation_failed', 'body/retry_days');
    await refused(put({ retry_days: [1], when_exhausted: 'PAST_DUE' }), 400, 'validation_failed', 'body/when_exhausted');
    await refused(put({ retry_days: [1] }), 400, 'validation_failed', 'body/when_exhausted');
    await refused(stack.http.put(path()).set(bearer(m.publishableKey)).send({ retry_days: [1], when_exhausted: 'UNPAID' }), 403, 'publishable_key_not_allowed');
  });
});

describe('subscription create: the checks before any workflow', () => {
  let customerId: string;
  let paymentMethodId: string;
  let monthly: Json;
  const body = (extra: Json = {}) => ({ customer_id: customerId, default_payment_method_id: paymentMethodId, items: [{ price_id: monthly.id }], ...extra });
  const create = (extra: Json = {}, token = m.secretKey) => send('post', '/v1/subscriptions', body(extra), token);

  beforeAll(async () => {
    customerId = await newCustomer(stack, m);
    paymentMethodId = await savedCard(stack, m, customerId);
    monthly = await price();
  });

  it('refuses each rule with 400 at its field, never a 5xx', async () => {
    await refused(create({ customer_id: 'cus_nope' }), 400, 'validation_failed', 'body/customer_id', /not a customer of this account/);
    const theirCustomer = await newCustomer(stack, other);
    await refused(create({ customer_id: theirCustomer }), 400, 'validation_failed', 'body/customer_id');
    await refused(create({ default_payment_method_id: 'pm_nope' }), 400, 'validation_failed', 'body/default_payment_method_id', /saved to this customer/);
    // A card saved to another customer of the same account, and a deleted card.
    const second = await newCustomer(stack, m);
    const secondCard = await savedCard(stack, m, second);
    await refused(create({ default_payment_method_id: secondCard }), 400, 'validation_failed', 'body/default_payment_method_id');
    const gone = await savedCard(stack, m, customerId);
    await ok(stack.http.delete(`/v1/customers/${customerId}/payment-methods/${gone}`).set(bearer(m.secretKey)));
    await refused(create({ default_payment_method_id: gone }), 400, 'validation_failed', 'body/default_payment_method_id');

    await refused(create({ items: [] }), 400, 'validation_failed', 'body/items');
    await refused(create({ items: Array.from({ length: 21 }, () => ({ price_id: monthly.id })) }), 400, 'validation_failed', 'body/items');
    await refused(create({ items: [{ price_id: 'price_nope' }] }), 400, 'validation_failed', 'body/items/0/price_id', /not a price of this account/);
    await refused(create({ items: [{ price_id: monthly.id }, { price_id: monthly.id }] }), 400, 'validation_failed', 'body/items/1/price_id', /another item/);
    await refused(create({ items: [{ price_id: monthly.id, quantity: 0 }] }), 400, 'validation_failed', 'body/items/0/quantity');
    const retired = await price();
    await ok(send('patch', `/v1/prices/${retired.id}`, { active: false }));
    await refused(create({ items: [{ price_id: retired.id }] }), 400, 'validation_failed', 'body/items/0/price_id', /retired/);
    const euro = await price({ currency: 'EUR' });
    await refused(create({ items: [{ price_id: monthly.id }, { price_id: euro.id }] }), 400, 'validation_failed', 'body/items/1/price_id', /every item must bill USD every 1 month/);
    const yearly = await price({ recurring: { interval: 'year' } });
    await refused(create({ items: [{ price_id: monthly.id }, { price_id: yearly.id }] }), 400, 'validation_failed', 'body/items/1/price_id');
    const quarterly = await price({ recurring: { interval: 'month', interval_count: 3 } });
    await refused(create({ items: [{ price_id: monthly.id }, { price_id: quarterly.id }] }), 400, 'validation_failed', 'body/items/1/price_id');
    const big = await price({ unit_amount: 99_999_999 });
    await refused(create({ items: [{ price_id: big.id, quantity: 2 }] }), 422, 'amount_too_large');

    await refused(create({ trial_period_days: 0 }), 400, 'validation_failed', 'body/trial_period_days');
    await refused(create({ trial_period_days: 731 }), 400, 'validation_failed', 'body/trial_period_days');
    await refused(create({ test_clock_id: 'clock_nope' }), 400, 'validation_failed', 'body/test_clock_id', /not a test clock of this account/);
    const theirClock = await ok(send('post', '/v1/test-clocks', { frozen_time: '2026-01-01T00:00:00Z' }, other.secretKey), 201);
    await refused(create({ test_clock_id: theirClock.id }), 400, 'validation_failed', 'body/test_clock_id');
    await refused(create({ metadata: { k: 1 } }), 400, 'validation_failed', 'body/metadata/k');
    await refused(create({ status: 'ACTIVE' }), 400, 'unknown_field');
    await refused(send('post', '/v1/subscriptions', {}), 400, 'validation_failed', 'body/customer_id');
  });

  it('refuses a test clock on a live subscription with 400 at body/test_clock_id', async () => {
    const liveCustomer = await newCustomer(stack, live);
    const liveCard = await savedCard(stack, live, liveCustomer);
    const livePrice = await price({}, live.secretKey);
    await refused(send('post', '/v1/subscriptions', {
      customer_id: liveCustomer, default_payment_method_id: liveCard, items: [{ price_id: livePrice.id }], test_clock_id: 'clock_01ABC',
    }, live.secretKey), 400, 'validation_failed', 'body/test_clock_id', /only in sandbox/);
  });

  it('lists nothing for filters that match nothing, and refuses a bad filter', async () => {
    expect((await send('get', '/v1/subscriptions?status=PAST_DUE&customer_id=cus_nobody')).body.data).toEqual([]);
    await refused(send('get', '/v1/subscriptions?status=active'), 400, 'validation_failed', 'query/status');
    await refused(send('get', '/v1/invoices?status=paid'), 400, 'validation_failed', 'query/status');
    await refused(send('get', '/v1/invoices?starting_after=in_nope'), 422, 'invalid_pagination');
    await refused(send('get', '/v1/subscriptions?ending_before=sub_nope'), 422, 'invalid_pagination');
  });
});

// These need the subscription workflow (workflows/billing/workflow.ts) on the worker.
describe('subscriptions through the workflow', () => {
  let customerId: string;
  let paymentMethodId: string;
  let clock: Json;

  beforeAll(async () => {
    customerId = await newCustomer(stack, m);
    paymentMethodId = await savedCard(stack, m, customerId);
    clock = await ok(send('post', '/v1/test-clocks', { frozen_time: '2026-05-01T00:00:00Z' }), 201);
  });

  const subscribe = async (items: Json[], extra: Json = {}) => ok(send('post', '/v1/subscriptions', {
    customer_id: customerId, default_payment_method_id: paymentMethodId, items, test_clock_id: clock.id, metadata: { plan: 'pro' }, ...extra,
  }), 201);

  it('creates one with a saved sandbox card: ACTIVE, its first invoice PAID; lists and gets it', async () => {
    const monthly = await price({ unit_amount: 1200 });
    const sub = await subscribe([{ price_id: monthly.id, quantity: 2 }]);
    expect(sub).toMatchObject({
      object: 'subscription', id: expect.stringMatching(/^sub_/), account_id: m.account.id, status: 'ACTIVE', customer_id: customerId,
      items: [{ id: expect.stringMatching(/^si_/), price_id: monthly.id, quantity: 2 }], currency: 'USD',
      current_period_start: '2026-05-01T00:00:00.000Z', current_period_end: '2026-06-01T00:00:00.000Z', trial_end: null,
      cancel_at_period_end: false, canceled_at: null, pause_collection: null, latest_invoice_id: expect.stringMatching(/^in_/),
      default_payment_method_id: paymentMethodId, test_clock_id: clock.id, metadata: { plan: 'pro' },
      temporal: { workflow_id: `subscription/${sub.id}`, namespace: expect.any(String), ui_url: expect.stringContaining(encodeURIComponent(`subscription/${sub.id}`)) },
    });
    const invoice = await ok(send('get', `/v1/invoices/${sub.latest_invoice_id}`));
    expect(invoice).toMatchObject({
      object: 'invoice', subscription_id: sub.id, customer_id: customerId, status: 'PAID', billing_reason: 'subscription_create',
      amount_due: 2400, amount_paid: 2400, amount_remaining: 0, attempt_count: 1, payment_id: expect.stringMatching(/^pay_/),
    });
    expect((await send('get', `/v1/invoices?subscription_id=${sub.id}`)).body.data.map((i: Json) => i.id)).toEqual([invoice.id]);
    expect((await send('get', `/v1/subscriptions?customer_id=${customerId}&test_clock_id=${clock.id}`)).body.data.map((s: Json) => s.id)).toContain(sub.id);
    expect(await ok(send('get', `/v1/subscriptions/${sub.id}`))).toMatchObject({ id: sub.id, status: 'ACTIVE' });
    // A PAID invoice takes no void: answered from its row.
    await refused(send('post', `/v1/invoices/${invoice.id}/void`, {}), 409, 'invalid_state', undefined, /PAID invoice/);
  });

  it('patches items (Stripe\'s form), metadata and pause_collection, refusing bad changes at their field', async () => {
    const basic = await price({ unit_amount: 1000 });
    const extra = await price({ unit_amount: 300 });
    const sub = await subscribe([{ price_id: basic.id }]);
    const [item] = sub.items;
    const patch = (body: Json) => send('patch', `/v1/subscriptions/${sub.id}`, body);

    await refused(patch({ items: [{ id: 'si_nope', quantity: 2 }] }), 400, 'validation_failed', 'body/items/0/id', /not an item/);
    await refused(patch({ items: [{ id: item.id, deleted: true }] }), 400, 'validation_failed', 'body/items', /at least one item/);
    await refused(patch({ items: [{ quantity: 2 }] }), 400, 'validation_failed', 'body/items/0/price_id', /required to add/);
    await refused(patch({ items: [{ price_id: basic.id }] }), 400, 'validation_failed', 'body/items/0/price_id', /another item/);
    await refused(patch({ items: [{ id: item.id, deleted: true, quantity: 2 }] }), 400, 'validation_failed', 'body/items/0/deleted');
    const euro = await price({ currency: 'EUR' });
    await refused(patch({ items: [{ price_id: euro.id }] }), 400, 'validation_failed', 'body/items/0/price_id', /USD every 1 month/);
    await refused(patch({ default_payment_method_id: 'pm_nope' }), 400, 'validation_failed', 'body/default_payment_method_id');
    await refused(patch({ pause_collection: { behavior: 'keep_as_draft' } }), 400, 'validation_failed');
    await refused(patch({ pause_collection: { behavior: 'void', resumes_at: '2026-04-01T00:00:00Z' } }), 400, 'validation_failed', 'body/pause_collection/resumes_at');

    const changed = await ok(patch({ items: [{ id: item.id, quantity: 3 }, { price_id: extra.id }], metadata: { plan: 'team' } }));
    expect(changed.items).toEqual([
      { id: item.id, price_id: basic.id, quantity: 3 },
      { id: expect.stringMatching(/^si_/), price_id: extra.id, quantity: 1 },
    ]);
    expect(changed.metadata).toEqual({ plan: 'team' });
    const removed = await ok(patch({ items: [{ id: changed.items[1].id, deleted: true }] }));
    expect(removed.items.map((i: Json) => i.price_id)).toEqual([basic.id]);
    expect(await ok(patch({ pause_collection: { behavior: 'void', resumes_at: '2026-07-01T00:00:00Z' } })))
      .toMatchObject({ pause_collection: { behavior: 'void', resumes_at: '2026-07-01T00:00:00.000Z' } });
    expect(await ok(patch({ pause_collection: null }))).toMatchObject({ pause_collection: null });
  });

  it('cancels now, after which it takes no more changes (409)', async () => {
    const monthly = await price({ unit_amount: 900 });
    const sub = await subscribe([{ price_id: monthly.id }]);
    const canceled = await ok(send('post', `/v1/subscriptions/${sub.id}/cancel`, {}));
    expect(canceled).toMatchObject({ status: 'CANCELED', canceled_at: '2026-05-01T00:00:00.000Z' });
    await refused(send('patch', `/v1/subscriptions/${sub.id}`, { metadata: { a: 'b' } }), 409, 'invalid_state');
    await refused(send('post', `/v1/subscriptions/${sub.id}/cancel`, {}), 409, 'invalid_state');
  });
});
