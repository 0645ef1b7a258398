import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type supertest from 'supertest';
import { buildOpenApi } from '../../api/openapi';
import { ROUTES } from '../../api/routes';
import { envTable } from '../../db/environments';
import { newId } from '../../lib/ids';
import { bearer, createMerchant, Merchant, RunningWorker, startStack, startWorker, TestStack, unique } from '../support/stack';
import { createConfig, createProvider } from '../support/routing';
import { card, CARDS } from '../support/payments';
import { emit, enabledEndpoint, Receiver } from '../webhooks/support';

/**
 * The account rule, walked over every operation of the OpenAPI document: each account-scoped operation
 * declares `account_id`; an API key naming another account and a user naming an account not theirs are
 * 403 account_access_denied; a user naming another of their accounts for a resource by id is 404; naming
 * the resource's own account gets through to the handler.
 */

/** The operations that are not about one account: they take no account_id. */
const NOT_ACCOUNT_SCOPED = ['GET /v1/accounts', 'POST /v1/accounts', 'POST /v1/payment-providers'];

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
interface Operation { key: string; method: Method; template: string; parameters: { name: string; in: string }[] }

function operationsOf(doc: any): Operation[] {
  return Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([template, byMethod]) =>
    Object.entries(byMethod).map(([method, op]) => ({
      key: `${method.toUpperCase()} ${template}`, method: method as Method, template, parameters: op.parameters ?? [],
    })));
}

// The cases are generated from the document built from the route declarations; the served one is checked too.
const OPERATIONS = operationsOf(buildOpenApi(ROUTES));
const SCOPED = OPERATIONS.filter((op) => !NOT_ACCOUNT_SCOPED.includes(op.key));
const BY_ID = SCOPED.filter((op) => op.template.includes('{'));

/** Ids of resources in account A, made once through the API (or, for what only workflows write, in Postgres). */
interface Fixtures {
  account: string;
  customer: string; address: string; paymentMethod: string;
  apiKey: string; managedKey: string; membership: string; notification: string;
  providerId: string; methodIds: string[]; config: string; fee: string; rule: string;
  plan: string; endpoint: string; delivery: string; payment: string; refund: string;
  session: string; link: string;
  product: string; price: string; subscription: string; invoice: string; clock: string;
  dispute: string;
}

interface Case {
  /** Path parameters, by name, for this template. */
  params?: (f: Fixtures) => Record<string, string>;
  body?: (f: Fixtures) => object;
  /** For what a request that gets through destroys or uses up: fresh resources for each request, so no case depends on another. */
  fresh?: () => Promise<Partial<Fixtures>>;
  /** (d): what naming the right account gets; a function when only the handler's own answer proves it got through. */
  ok: number | ((res: supertest.Response) => void);
}

let stack: TestStack;
let worker: RunningWorker;
let receiver: Receiver;
/** User U owns A and B; C is someone else's. */
let a: Merchant;
let b: { id: string };
let c: Merchant;
let f: Fixtures;

async function call(method: Method, path: string, token: string, body?: object): Promise<supertest.Response> {
  const req = stack.http[method](path).set(bearer(token));
  return method === 'get' || method === 'delete' ? req : req.send(body ?? {});
}

async function created(res: supertest.Response): Promise<any> {
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}

const asA = (method: Method, path: string, body?: object) =>
  call(method, `/v1${path}${path.includes('?') ? '&' : '?'}account_id=${a.account.id}`, a.token, body).then(created);

const newCustomer = async () => (await asA('post', '/customers', { name: 'Ada', addresses: [{ type: 'BILLING', line1: '1 Main St' }] }));
const newConfig = async () => (await asA('post', '/payment-provider-configs', {
  payment_provider_id: f.providerId, name: 'Spare', credentials: { api_key: 'sk_sim_spare_0001' },
})).id as string;
const newEndpoint = async () => (await asA('post', '/webhook-endpoints', { url: receiver.url('/spare') })).id as string;
const SESSION = { amount: 1500, currency: 'USD', success_url: 'https://shop.example.com/ok', cancel_url: 'https://shop.example.com/back' };
const newSession = async () => (await asA('post', '/checkout-sessions', SESSION)).id as string;
const newPayment = async () => (await created(await stack.http.post('/v1/payments').set(bearer(a.secretKey)).send({ amount: 1000, currency: 'USD' }))).id as string;

const expectFields = (status: number, path: string) => (res: supertest.Response) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.error.details.fields[0].path).toBe(path);
};
const expectInvalidState = (res: supertest.Response) => {
  expect(res.status, JSON.stringify(res.body)).toBe(409);
  expect(res.body.error.details.reason).toBe('invalid_state');
};
/** Found in the account and sent to its workflow, which (for a dispute row written here) is not running. */
const expectDisputeClosed = (res: supertest.Response) => {
  expect(res.status, JSON.stringify(res.body)).toBe(409);
  expect(res.body.error.details).toMatchObject({ reason: 'invalid_state', refusal: 'dispute_closed' });
};

const CASES: Record<string, Case> = {
  'GET /v1/accounts/{id}': { params: (x) => ({ id: x.account }), ok: 200 },
  'GET /v1/accounts/{id}/permissions': { params: (x) => ({ id: x.account }), ok: 200 },
  'PUT /v1/accounts/{id}/settings/return_url_hosts': { params: (x) => ({ id: x.account }), body: () => ({ hosts: ['shop.example.com'] }), ok: 200 },
  'GET /v1/accounts/{id}/settings/billing': { params: (x) => ({ id: x.account }), ok: 200 },
  'PUT /v1/accounts/{id}/settings/billing': { params: (x) => ({ id: x.account }), body: () => ({ retry_days: [1, 3], when_exhausted: 'UNPAID' }), ok: 200 },

  'POST /v1/customers': { body: () => ({ name: 'Grace' }), ok: 201 },
  'GET /v1/customers': { ok: 200 },
  'GET /v1/customers/{id}': { params: (x) => ({ id: x.customer }), ok: 200 },
  'PATCH /v1/customers/{id}': { params: (x) => ({ id: x.customer }), body: () => ({ name: 'Ada L.' }), ok: 200 },
  'DELETE /v1/customers/{id}': { params: (x) => ({ id: x.customer }), fresh: async () => ({ customer: (await newCustomer()).id }), ok: 200 },
  'POST /v1/customers/{id}/addresses': { params: (x) => ({ id: x.customer }), body: () => ({ type: 'SHIPPING', line1: '2 Side St' }), ok: 201 },
  'POST /v1/customers/{id}/addresses/{addressId}/mark-primary': { params: (x) => ({ id: x.customer, addressId: x.address }), ok: 200 },
  'DELETE /v1/customers/{id}/addresses/{addressId}': {
    params: (x) => ({ id: x.customer, addressId: x.address }),
    fresh: async () => { const cus = await newCustomer(); return { customer: cus.id, address: cus.addresses[0].id }; },
    ok: 200,
  },
  'POST /v1/customers/{id}/payment-methods': { params: (x) => ({ id: x.customer }), body: () => card(CARDS.visa), ok: 201 },
  'DELETE /v1/customers/{id}/payment-methods/{pmId}': {
    params: (x) => ({ id: x.customer, pmId: x.paymentMethod }),
    fresh: async () => ({ paymentMethod: (await asA('post', `/customers/${f.customer}/payment-methods`, card(CARDS.mastercard))).id }),
    ok: 200,
  },

  'POST /v1/api-keys': { body: () => ({ name: 'reporting' }), ok: 201 },
  'GET /v1/api-keys': { ok: 200 },
  'DELETE /v1/api-keys/{id}': { params: (x) => ({ id: x.apiKey }), fresh: async () => ({ apiKey: (await asA('post', '/api-keys', { name: 'spare' })).id }), ok: 200 },
  'POST /v1/api-keys/{id}/regenerate': { params: (x) => ({ id: x.managedKey }), ok: 200 },

  'POST /v1/account-memberships': { body: () => ({ user_id: unique('usr'), role: 'VIEWER' }), ok: 201 },
  'GET /v1/account-memberships': { ok: 200 },
  'DELETE /v1/account-memberships/{id}': {
    params: (x) => ({ id: x.membership }),
    fresh: async () => ({ membership: (await asA('post', '/account-memberships', { user_id: unique('usr'), role: 'VIEWER' })).id }),
    ok: 200,
  },

  'GET /v1/notifications': { ok: 200 },
  'POST /v1/notifications/{id}/archive': { params: (x) => ({ id: x.notification }), ok: 200 },
  'POST /v1/notifications/{id}/unarchive': { params: (x) => ({ id: x.notification }), ok: 200 },

  'GET /v1/payment-providers': { ok: 200 },

  'POST /v1/payment-provider-configs': {
    body: (x) => ({ payment_provider_id: x.providerId, name: 'Another', credentials: { api_key: 'sk_sim_another_0001' } }), ok: 201,
  },
  'GET /v1/payment-provider-configs': { ok: 200 },
  'GET /v1/payment-provider-configs/{id}': { params: (x) => ({ id: x.config }), ok: 200 },
  'PUT /v1/payment-provider-configs/{id}': { params: (x) => ({ id: x.config }), body: () => ({ name: 'Primary (renamed)' }), ok: 200 },
  'DELETE /v1/payment-provider-configs/{id}': { params: (x) => ({ id: x.config }), fresh: async () => ({ config: await newConfig() }), ok: 200 },
  'POST /v1/payment-provider-configs/{id}/fees': {
    params: (x) => ({ id: x.config }),
    body: (x) => ({ payment_provider_method_id: x.methodIds[1], volume_fee: 2.5, fixed_fee: 25, fixed_fee_currency: 'USD' }),
    ok: 201,
  },
  'DELETE /v1/payment-provider-configs/{id}/fees/{feeId}': {
    params: (x) => ({ id: x.config, feeId: x.fee }),
    fresh: async () => {
      const config = await newConfig();
      const fee = await asA('post', `/payment-provider-configs/${config}/fees`, {
        payment_provider_method_id: f.methodIds[0], volume_fee: 1, fixed_fee: 10, fixed_fee_currency: 'USD',
      });
      return { config, fee: fee.id };
    },
    ok: 200,
  },
  'GET /v1/payment-provider-configs/{id}/rules': { params: (x) => ({ id: x.config }), ok: 200 },
  'POST /v1/payment-provider-configs/{id}/rules': { params: (x) => ({ id: x.config }), body: () => ({ conditions: { currency: { eq: 'EUR' } } }), ok: 201 },
  'PATCH /v1/payment-provider-configs/{id}/rules/{ruleId}': {
    params: (x) => ({ id: x.config, ruleId: x.rule }), body: () => ({ conditions: { currency: { eq: 'GBP' } } }), ok: 200,
  },
  'DELETE /v1/payment-provider-configs/{id}/rules/{ruleId}': {
    params: (x) => ({ id: x.config, ruleId: x.rule }),
    fresh: async () => ({ rule: (await asA('post', `/payment-provider-configs/${f.config}/rules`, { conditions: { currency: { eq: 'JPY' } } })).id }),
    ok: 200,
  },

  'GET /v1/routing-plans': { ok: 200 },
  'GET /v1/routing-plans/{id}': { params: (x) => ({ id: x.plan }), ok: 200 },
  'GET /v1/routing-settings': { ok: 200 },
  'PUT /v1/routing-settings': { body: () => ({ elimination: { min_attempts: 8 } }), ok: 200 },
  'GET /v1/analytics/providers': { ok: 200 },
  'GET /v1/audit-events': { ok: 200 },

  'POST /v1/webhook-endpoints': { body: () => ({ url: receiver.url('/another') }), ok: 201 },
  'GET /v1/webhook-endpoints': { ok: 200 },
  'GET /v1/webhook-endpoints/{id}': { params: (x) => ({ id: x.endpoint }), ok: 200 },
  'PATCH /v1/webhook-endpoints/{id}': { params: (x) => ({ id: x.endpoint }), body: () => ({ description: 'orders' }), ok: 200 },
  'DELETE /v1/webhook-endpoints/{id}': { params: (x) => ({ id: x.endpoint }), fresh: async () => ({ endpoint: await newEndpoint() }), ok: 200 },
  'POST /v1/webhook-endpoints/{id}/verify': { params: (x) => ({ id: x.endpoint }), ok: 200 },
  'POST /v1/webhook-endpoints/{id}/rotate-secret': { params: (x) => ({ id: x.endpoint }), body: () => ({ expire_previous_in_seconds: 0 }), ok: 200 },
  'POST /v1/webhook-endpoints/{id}/recover': { params: (x) => ({ id: x.endpoint }), body: () => ({ since: new Date(Date.now() - 3_600_000).toISOString() }), ok: 200 },
  'GET /v1/webhook-deliveries': { ok: 200 },
  'GET /v1/webhook-deliveries/{id}': { params: (x) => ({ id: x.delivery }), ok: 200 },
  'POST /v1/webhook-deliveries/{id}/replay': { params: (x) => ({ id: x.delivery }), ok: 200 },

  'POST /v1/payments': { body: () => ({ amount: 1500, currency: 'USD' }), ok: 201 },
  'GET /v1/payments': { ok: 200 },
  'GET /v1/payments/{id}': { params: (x) => ({ id: x.payment }), ok: 200 },
  // The payment was found in the account: what stops it is the unknown card, at its body path.
  'POST /v1/payments/{id}/confirm': {
    params: (x) => ({ id: x.payment }), body: () => ({ payment_method_id: newId('pm') }), ok: expectFields(400, 'body/payment_method_id'),
  },
  // Found and sent to its workflow, which refuses to capture a payment never authorized.
  'POST /v1/payments/{id}/capture': { params: (x) => ({ id: x.payment }), ok: expectInvalidState },
  'POST /v1/payments/{id}/cancel': { params: (x) => ({ id: x.payment }), fresh: async () => ({ payment: await newPayment() }), ok: 200 },
  'GET /v1/events': { ok: 200 },

  // The payment was found in the named account; it has no captured charge to refund yet.
  'POST /v1/refunds': { body: (x) => ({ payment_id: x.payment }), ok: expectInvalidState },
  'GET /v1/refunds': { ok: 200 },
  'GET /v1/refunds/{id}': { params: (x) => ({ id: x.refund }), ok: 200 },

  'POST /v1/checkout-sessions': { body: () => SESSION, ok: 201 },
  'GET /v1/checkout-sessions': { ok: 200 },
  'GET /v1/checkout-sessions/{id}': { params: (x) => ({ id: x.session }), ok: 200 },
  'POST /v1/checkout-sessions/{id}/expire': { params: (x) => ({ id: x.session }), fresh: async () => ({ session: await newSession() }), ok: 200 },
  'POST /v1/payment-links': { body: () => ({ amount: 500, currency: 'USD' }), ok: 201 },
  'GET /v1/payment-links': { ok: 200 },
  'GET /v1/payment-links/{id}': { params: (x) => ({ id: x.link }), ok: 200 },
  'PATCH /v1/payment-links/{id}': { params: (x) => ({ id: x.link }), body: () => ({ active: true }), ok: 200 },

  'POST /v1/products': { body: () => ({ name: 'Gold' }), ok: 201 },
  'GET /v1/products': { ok: 200 },
  'GET /v1/products/{id}': { params: (x) => ({ id: x.product }), ok: 200 },
  'PATCH /v1/products/{id}': { params: (x) => ({ id: x.product }), body: () => ({ active: true }), ok: 200 },
  'POST /v1/prices': { body: (x) => ({ product_id: x.product, unit_amount: 500, currency: 'USD', recurring: { interval: 'month' } }), ok: 201 },
  'GET /v1/prices': { ok: 200 },
  'GET /v1/prices/{id}': { params: (x) => ({ id: x.price }), ok: 200 },
  'PATCH /v1/prices/{id}': { params: (x) => ({ id: x.price }), body: () => ({ active: true }), ok: 200 },
  // The customer was found in the named account: what stops it is the unknown card, at its body path.
  'POST /v1/subscriptions': {
    body: (x) => ({ customer_id: x.customer, default_payment_method_id: newId('pm'), items: [{ price_id: x.price }] }),
    ok: expectFields(400, 'body/default_payment_method_id'),
  },
  'GET /v1/subscriptions': { ok: 200 },
  'GET /v1/subscriptions/{id}': { params: (x) => ({ id: x.subscription }), ok: 200 },
  // Found in the account and sent to its workflow, which (for a row written here) is not running.
  'PATCH /v1/subscriptions/{id}': { params: (x) => ({ id: x.subscription }), body: () => ({ metadata: { a: 'b' } }), ok: expectInvalidState },
  'POST /v1/subscriptions/{id}/cancel': { params: (x) => ({ id: x.subscription }), ok: expectInvalidState },
  'GET /v1/invoices': { ok: 200 },
  'GET /v1/invoices/{id}': { params: (x) => ({ id: x.invoice }), ok: 200 },
  'POST /v1/invoices/{id}/pay': { params: (x) => ({ id: x.invoice }), ok: expectInvalidState },
  'POST /v1/invoices/{id}/void': { params: (x) => ({ id: x.invoice }), ok: expectInvalidState },
  'POST /v1/invoices/{id}/mark-uncollectible': { params: (x) => ({ id: x.invoice }), ok: expectInvalidState },
  'GET /v1/disputes': { ok: 200 },
  'GET /v1/disputes/{id}': { params: (x) => ({ id: x.dispute }), ok: 200 },
  'POST /v1/disputes/{id}/evidence': { params: (x) => ({ id: x.dispute }), body: () => ({ uncategorized_text: 'receipt' }), ok: expectDisputeClosed },
  'POST /v1/disputes/{id}/accept': { params: (x) => ({ id: x.dispute }), ok: expectDisputeClosed },
  // A is a production account: test clocks exist only in sandbox (the handler's own answer).
  'POST /v1/test-clocks': { body: () => ({ frozen_time: '2026-01-01T00:00:00Z' }), ok: expectFields(400, 'account_id') },
  'GET /v1/test-clocks': { ok: expectFields(400, 'account_id') },
  'GET /v1/test-clocks/{id}': { params: (x) => ({ id: x.clock }), ok: expectFields(400, 'account_id') },
  'POST /v1/test-clocks/{id}/advance': { params: (x) => ({ id: x.clock }), body: () => ({ frozen_time: '2026-02-01T00:00:00Z' }), ok: expectFields(400, 'account_id') },
};

/** The operation's URL with its path parameters from `fixtures` and `account_id` as the query. */
function urlOf(op: Operation, fixtures: Fixtures, accountId: string): string {
  const params = CASES[op.key].params?.(fixtures) ?? {};
  const path = op.template.replace(/\{([A-Za-z]+)\}/g, (_m, name: string) => {
    if (!params[name]) throw new Error(`${op.key}: no fixture for {${name}}`);
    return encodeURIComponent(params[name]);
  });
  return `${path}?account_id=${accountId}`;
}

async function request(op: Operation, token: string, accountId: string): Promise<supertest.Response> {
  const spec = CASES[op.key];
  const fixtures = spec.fresh ? { ...f, ...(await spec.fresh()) } : f;
  return call(op.method, urlOf(op, fixtures, accountId), token, spec.body?.(fixtures));
}

function expectReason(res: supertest.Response, status: number, reason: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toMatchObject({ success: false, error: { code: status, details: { reason } } });
}

beforeAll(async () => {
  // Two hundred operations by the same few credentials in a few seconds: not a test of the rate limit.
  stack = await startStack({ RATE_LIMIT_RPS: '0' });
  worker = await startWorker(stack);
  receiver = await Receiver.start();
  a = await createMerchant(stack);
  c = await createMerchant(stack);
  // A second production account of the same user: a member of both A and B.
  b = await created(await stack.http.post('/v1/accounts').set(bearer(a.token)).send({ name: 'Second shop' }));

  const provider = await createProvider(stack);
  const config = await createConfig(stack, a, provider.id);
  const methodIds = (provider.methods as { id: string }[]).map((m) => m.id);
  const fee = await asA('post', `/payment-provider-configs/${config.id}/fees`, {
    payment_provider_method_id: methodIds[0], volume_fee: 2.9, fixed_fee: 30, fixed_fee_currency: 'USD',
  });
  const rule = await asA('post', `/payment-provider-configs/${config.id}/rules`, { conditions: { currency: { eq: 'USD' } } });
  const customer = await newCustomer();
  const paymentMethod = await asA('post', `/customers/${customer.id}/payment-methods`, card(CARDS.visa));
  const apiKey = await asA('post', '/api-keys', { name: 'custom' });
  const membership = await asA('post', '/account-memberships', { user_id: unique('usr'), role: 'DEVELOPER' });
  const endpoint = await enabledEndpoint(stack, a, receiver);
  const { deliveryIds } = await emit(stack, a, [{ event: 'payment_intent.succeeded', data: { id: 'pay_x' } }]);
  const payment = await newPayment();
  const session = await newSession();
  const link = (await asA('post', '/payment-links', { amount: 500, currency: 'USD' })).id as string;
  const product = (await asA('post', '/products', { name: 'Pro' })).id as string;
  const price = (await asA('post', '/prices', { product_id: product, unit_amount: 1000, currency: 'USD', recurring: { interval: 'month' } })).id as string;

  // What only workflows and the watchdog write: a notification, and a settled payment with its plan,
  // charge and refund.
  const notification = newId('ntf');
  await stack.db('core.notifications').insert({ id: notification, account_id: a.account.id, type: 'payment.stuck', details: JSON.stringify({}) });
  const settled = newId('pay');
  const plan = newId('rp');
  const charge = newId('ch');
  const refund = newId('re');
  const table = (name: string) => stack.db(envTable('production', name));
  await table('payments').insert({ id: settled, account_id: a.account.id, amount: 1000, currency: 'USD', status: 'SUCCEEDED', amount_received: 1000 });
  await table('routing_plans').insert({ id: plan, account_id: a.account.id, payment_id: settled });
  await table('charges').insert({
    id: charge, payment_id: settled, account_id: a.account.id, status: 'PARTIALLY_REFUNDED', amount: 1000, authorized_amount: 1000,
    captured_amount: 1000, refunded_amount: 100, currency: 'USD', attempt_no: 1, routing_plan_id: plan,
  });
  await table('refunds').insert({ id: refund, account_id: a.account.id, charge_id: charge, payment_id: settled, status: 'SUCCEEDED', amount: 100, currency: 'USD' });
  // A subscription (with no workflow running) and its OPEN invoice, and a clock: rows only workflows (or,
  // for a clock, a sandbox) write.
  const subscription = newId('sub');
  const invoice = newId('in');
  const clock = newId('clock');
  const now = new Date();
  await table('subscriptions').insert({
    id: subscription, account_id: a.account.id, customer_id: customer.id, status: 'PAST_DUE', currency: 'USD', interval: 'month', interval_count: 1,
    items: JSON.stringify([{ id: newId('si'), price_id: price, quantity: 1 }]), default_payment_method_id: paymentMethod.id,
    billing_cycle_anchor: now, current_period_start: now, current_period_end: new Date(now.getTime() + 30 * 86_400_000),
  });
  await table('invoices').insert({
    id: invoice, account_id: a.account.id, subscription_id: subscription, customer_id: customer.id, status: 'OPEN', billing_reason: 'subscription_cycle',
    currency: 'USD', period_start: now, period_end: now, lines: '[]', subtotal: 1000, amount_due: 1000,
  });
  await table('test_clocks').insert({ id: clock, account_id: a.account.id, frozen_time: now });
  // A dispute of the settled charge, as its workflow's activity writes it (no workflow runs for it).
  const dispute = newId('dp');
  await table('disputes').insert({
    id: dispute, account_id: a.account.id, payment_id: settled, charge_id: charge, payment_provider_config_id: config.id,
    processor_dispute_id: `du_${unique('x')}`, amount: 1000, currency: 'USD', status: 'NEEDS_RESPONSE', status_at: now,
  });

  f = {
    account: a.account.id,
    customer: customer.id, address: customer.addresses[0].id, paymentMethod: paymentMethod.id,
    apiKey: apiKey.id, managedKey: a.account.api_keys.find((k: any) => k.type === 'PUBLISHABLE').id,
    membership: membership.id, notification,
    providerId: provider.id, methodIds, config: config.id, fee: fee.id, rule: rule.id,
    plan, endpoint: endpoint.id, delivery: deliveryIds[0], payment, refund, session, link,
    product, price, subscription, invoice, clock, dispute,
  };
  expect(f.delivery).toMatch(/^whd_/);
});

afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await receiver?.close();
});

describe('the document', () => {
  it('has a case for every account-scoped operation, and nothing else is exempt', () => {
    expect(SCOPED.map((op) => op.key).filter((key) => !CASES[key])).toEqual([]);
    expect(Object.keys(CASES).filter((key) => !SCOPED.some((op) => op.key === key))).toEqual([]);
    expect(NOT_ACCOUNT_SCOPED.filter((key) => !OPERATIONS.some((op) => op.key === key))).toEqual([]);
  });

  it('declares account_id as an optional query parameter on every account-scoped operation, and on no other (served document)', async () => {
    const served = operationsOf((await stack.http.get('/v1/openapi.json').expect(200)).body);
    expect(served.map((op) => op.key).sort()).toEqual(OPERATIONS.map((op) => op.key).sort());
    for (const op of served) {
      const param = op.parameters.find((p: any) => p.name === 'account_id') as any;
      if (NOT_ACCOUNT_SCOPED.includes(op.key)) {
        expect(param, op.key).toBeUndefined();
      } else {
        expect(param, op.key).toMatchObject({ in: 'query', required: false, schema: { type: 'string', pattern: '^acct_[0-9A-Za-z]+$' } });
      }
    }
  });

  it('answers 400 unknown_field for account_id where no account is acted on', async () => {
    const res = await stack.http.get(`/v1/accounts?account_id=${a.account.id}`).set(bearer(a.token));
    expectReason(res, 400, 'unknown_field');
    expect(res.body.error.details.fields[0].path).toBe('query/account_id');
  });

  it('answers 400 at query/account_id for a malformed one', async () => {
    const res = await stack.http.get(`/v1/customers/${f.customer}?account_id=not-an-account`).set(bearer(a.token));
    expectReason(res, 400, 'validation_failed');
    expect(res.body.error.details.fields[0].path).toBe('query/account_id');
  });
});

describe('(a) an API key naming another account is 403 account_access_denied', () => {
  it.each(SCOPED.map((op) => [op.key, op] as const))('%s', async (_key, op) => {
    expectReason(await request(op, a.secretKey, b.id), 403, 'account_access_denied');
  });
});

describe('(b) a user naming an account they are not a member of is 403 account_access_denied', () => {
  it.each(SCOPED.map((op) => [op.key, op] as const))('%s', async (_key, op) => {
    expectReason(await request(op, a.token, c.account.id), 403, 'account_access_denied');
  });
});

describe('(c) a user naming another of their accounts for a resource of A is 404', () => {
  it.each(BY_ID.map((op) => [op.key, op] as const))('%s', async (_key, op) => {
    expectReason(await request(op, a.token, b.id), 404, 'not_found');
  });
});

describe('(d) naming the resource\'s own account gets through', () => {
  it.each(SCOPED.map((op) => [op.key, op] as const))('%s', async (_key, op) => {
    const spec = CASES[op.key];
    const res = await request(op, a.token, a.account.id);
    if (typeof spec.ok === 'number') {
      expect(res.status, JSON.stringify(res.body)).toBe(spec.ok);
      expect(res.body.success).toBe(true);
    } else {
      spec.ok(res);
    }
  });
});
