import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import jwt from 'jsonwebtoken';
import type supertest from 'supertest';
import { AUDIT_ACTIONS } from '../../api/audit-actions';
import { verifyAuditChains } from '../../db/audit';
import { runOps } from '../../scripts/ops';
import {
  bearer, createMerchant, Merchant, RunningWorker, startStack, startWorker, suiteEnv, TEST_SYSTEM_JWT_SECRET, TestStack, unique,
} from '../support/stack';
import { createConfig } from '../support/routing';
import { card, CARDS, startSimulator, TestSimulator } from '../support/payments';
import { enabledEndpoint, Receiver } from '../webhooks/support';

/**
 * The audit trail (docs/security.md §19): every change api/audit-actions.ts lists, driven through the
 * API, appends exactly one row, with no secret in it; rows cannot be changed through SQL, and one changed
 * behind the trigger's back fails audit:verify, which names it.
 */

let stack: TestStack;
let worker: RunningWorker;
let sim: TestSimulator;
let receiver: Receiver;
let m: Merchant;
let provider: { id: string; methods: { id: string }[] };

const CREDENTIAL = 'sk_sim_AUDITSECRET_first_0001';
const NEW_CREDENTIAL = 'sk_sim_AUDITSECRET_second_0002';
/** Every secret plaintext this file sees: none may appear in any audit row. */
const plaintexts: string[] = [CREDENTIAL, NEW_CREDENTIAL];

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ RATE_LIMIT_RPS: '0', SIMULATOR_URL: sim.url });
  worker = await startWorker(stack);
  receiver = await Receiver.start();
  m = await createMerchant(stack);
  plaintexts.push(m.secretKey, m.publishableKey);
  provider = await registerProvider(unique('req_setup'));
});

/** The platform's system token (it names no workspace): the one credential that registers payment providers. */
function platformToken(): string {
  return jwt.sign({ sub: unique('usr_platform'), actor_type: 'system' }, TEST_SYSTEM_JWT_SECRET, { algorithm: 'HS256', expiresIn: 3600 });
}

async function registerProvider(requestId: string) {
  const res = await stack.http.post('/v1/payment-providers').set(as(platformToken(), requestId)).send({ name: 'Audited processor', identifier: 'sandbox' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}
afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
  await stack?.close();
  await sim?.close();
});

type Call = (requestId: string) => Promise<supertest.Response>;
const as = (token: string, requestId: string) => ({ ...bearer(token), 'X-Request-Id': requestId });
const scoped = (path: string) => `${path}${path.includes('?') ? '&' : '?'}account_id=${m.account.id}`;
const post = (path: string, body: object = {}, token = m.token): Call => (rid) => stack.http.post(scoped(path)).set(as(token, rid)).send(body);
const put = (path: string, body: object): Call => (rid) => stack.http.put(scoped(path)).set(as(m.token, rid)).send(body);
const patch = (path: string, body: object): Call => (rid) => stack.http.patch(scoped(path)).set(as(m.token, rid)).send(body);
const del = (path: string): Call => (rid) => stack.http.delete(scoped(path)).set(as(m.token, rid));

/** A change made only to have something to change next (its own audit row is not this test's). */
async function made(call: Call): Promise<any> {
  const res = await call(unique('req_setup'));
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return res.body.data;
}

async function authorizedPayment(): Promise<string> {
  const res = await stack.http.post('/v1/payments').set(bearer(m.secretKey))
    .send({ amount: 1500, currency: 'USD', confirm: true, auto_capture: false, payment_method: card(CARDS.visa) });
  expect(res.body.data?.status, JSON.stringify(res.body)).toBe('AUTHORIZED');
  return res.body.data.id;
}

async function succeededPayment(): Promise<string> {
  const res = await stack.http.post('/v1/payments').set(bearer(m.secretKey))
    .send({ amount: 1500, currency: 'USD', confirm: true, payment_method: card(CARDS.visa) });
  expect(res.body.data?.status, JSON.stringify(res.body)).toBe('SUCCEEDED');
  return res.body.data.id;
}

/**
 * A succeeded payment its processor disputes (Stripe's fraudulent-chargeback test card, which every
 * processor here honours): the dispute, once its notification came in.
 */
async function disputedPayment(): Promise<string> {
  const res = await stack.http.post('/v1/payments').set(bearer(m.secretKey))
    .send({ amount: 1500, currency: 'USD', confirm: true, payment_method: card('4000000000000259') });
  expect(res.body.data?.status, JSON.stringify(res.body)).toBe('SUCCEEDED');
  for (let waited = 0; waited < 30_000; waited += 250) {
    const listed = await stack.http.get(`/v1/disputes?payment_id=${res.body.data.id}`).set(bearer(m.secretKey));
    const dispute = listed.body.data?.find((d: any) => d.status === 'NEEDS_RESPONSE');
    if (dispute) return dispute.id;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`payment ${res.body.data.id} was not disputed within 30 s`);
}

/** Each audited route: how to call it once (after whatever it needs), and the resource the row must name. */
const CASES: Record<string, () => Promise<{ call: Call; resourceId?: (res: supertest.Response) => string; account?: (res: supertest.Response) => string | null }>> = {
  'POST /accounts': async () => ({
    call: (rid) => stack.http.post('/v1/accounts').set(as(m.token, rid)).send({ name: 'Second shop' }),
    account: (res) => res.body.data.id,
  }),
  'PUT /accounts/:id/settings/return_url_hosts': async () => ({
    call: put(`/v1/accounts/${m.account.id}/settings/return_url_hosts`, { hosts: ['shop.example.com'] }), resourceId: () => m.account.id,
  }),
  'POST /api-keys': async () => ({ call: post('/v1/api-keys', { name: 'reporting' }) }),
  'DELETE /api-keys/:id': async () => {
    const key = await made(post('/v1/api-keys', { name: 'spare' }));
    plaintexts.push(key.key);
    return { call: del(`/v1/api-keys/${key.id}`), resourceId: () => key.id };
  },
  'POST /api-keys/:id/regenerate': async () => {
    const keys = await made((rid) => stack.http.get(scoped('/v1/api-keys')).set(as(m.token, rid)));
    const publishable = keys.find((k: any) => k.managed && k.type === 'PUBLISHABLE');
    return { call: post(`/v1/api-keys/${publishable.id}/regenerate`), resourceId: () => publishable.id };
  },
  'POST /account-memberships': async () => ({ call: post('/v1/account-memberships', { user_id: unique('usr'), role: 'VIEWER' }) }),
  'DELETE /account-memberships/:id': async () => {
    const membership = await made(post('/v1/account-memberships', { user_id: unique('usr'), role: 'VIEWER' }));
    return { call: del(`/v1/account-memberships/${membership.id}`), resourceId: () => membership.id };
  },
  'POST /payment-providers': async () => ({
    call: (rid) => stack.http.post('/v1/payment-providers').set(as(platformToken(), rid)).send({ name: 'Audited processor', identifier: 'sandbox' }),
    account: () => null,
  }),
  'POST /payment-provider-configs': async () => ({
    call: post('/v1/payment-provider-configs', { payment_provider_id: provider.id, name: 'Audited', credentials: { api_key: CREDENTIAL } }),
  }),
  'PUT /payment-provider-configs/:id': async () => {
    const config = await createConfig(stack, m, provider.id);
    return { call: put(`/v1/payment-provider-configs/${config.id}`, { name: 'Renamed', credentials: { api_key: NEW_CREDENTIAL } }), resourceId: () => config.id };
  },
  'DELETE /payment-provider-configs/:id': async () => {
    const config = await createConfig(stack, m, provider.id);
    return { call: del(`/v1/payment-provider-configs/${config.id}`), resourceId: () => config.id };
  },
  'POST /payment-provider-configs/:id/fees': async () => {
    const config = await createConfig(stack, m, provider.id);
    return { call: post(`/v1/payment-provider-configs/${config.id}/fees`, fee(provider.methods[0].id)) };
  },
  'DELETE /payment-provider-configs/:id/fees/:feeId': async () => {
    const config = await createConfig(stack, m, provider.id);
    const created = await made(post(`/v1/payment-provider-configs/${config.id}/fees`, fee(provider.methods[0].id)));
    return { call: del(`/v1/payment-provider-configs/${config.id}/fees/${created.id}`), resourceId: () => created.id };
  },
  'POST /payment-provider-configs/:id/rules': async () => {
    const config = await createConfig(stack, m, provider.id);
    return { call: post(`/v1/payment-provider-configs/${config.id}/rules`, { conditions: { currency: { eq: 'EUR' } } }) };
  },
  'PATCH /payment-provider-configs/:id/rules/:ruleId': async () => {
    const config = await createConfig(stack, m, provider.id);
    const rule = await made(post(`/v1/payment-provider-configs/${config.id}/rules`, { conditions: { currency: { eq: 'EUR' } } }));
    return { call: patch(`/v1/payment-provider-configs/${config.id}/rules/${rule.id}`, { conditions: { currency: { eq: 'GBP' } } }), resourceId: () => rule.id };
  },
  'DELETE /payment-provider-configs/:id/rules/:ruleId': async () => {
    const config = await createConfig(stack, m, provider.id);
    const rule = await made(post(`/v1/payment-provider-configs/${config.id}/rules`, { conditions: { currency: { eq: 'EUR' } } }));
    return { call: del(`/v1/payment-provider-configs/${config.id}/rules/${rule.id}`), resourceId: () => rule.id };
  },
  'PUT /routing-settings': async () => ({ call: put('/v1/routing-settings', { elimination: { min_attempts: 8 } }), resourceId: () => m.account.id }),
  'POST /webhook-endpoints': async () => ({ call: post('/v1/webhook-endpoints', { url: receiver.url('/audited') }) }),
  'PATCH /webhook-endpoints/:id': async () => {
    const endpoint = await enabledEndpoint(stack, m, receiver);
    return { call: patch(`/v1/webhook-endpoints/${endpoint.id}`, { description: 'orders' }), resourceId: () => endpoint.id };
  },
  'DELETE /webhook-endpoints/:id': async () => {
    const endpoint = await enabledEndpoint(stack, m, receiver);
    return { call: del(`/v1/webhook-endpoints/${endpoint.id}`), resourceId: () => endpoint.id };
  },
  'POST /webhook-endpoints/:id/verify': async () => {
    const endpoint = await enabledEndpoint(stack, m, receiver);
    return { call: post(`/v1/webhook-endpoints/${endpoint.id}/verify`), resourceId: () => endpoint.id };
  },
  'POST /webhook-endpoints/:id/rotate-secret': async () => {
    const endpoint = await enabledEndpoint(stack, m, receiver);
    plaintexts.push(endpoint.secret);
    return { call: post(`/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { expire_previous_in_seconds: 0 }), resourceId: () => endpoint.id };
  },
  'POST /payments/:id/capture': async () => {
    const id = await authorizedPayment();
    return { call: post(`/v1/payments/${id}/capture`, {}, m.secretKey), resourceId: () => id };
  },
  'POST /payments/:id/cancel': async () => {
    const id = await authorizedPayment();
    return { call: post(`/v1/payments/${id}/cancel`, {}, m.secretKey), resourceId: () => id };
  },
  'POST /refunds': async () => {
    const id = await succeededPayment();
    return { call: post('/v1/refunds', { payment_id: id, amount: 500 }, m.secretKey) };
  },
  'POST /checkout-sessions/:id/expire': async () => {
    const session = (await post('/v1/checkout-sessions', SESSION, m.secretKey)(unique('req_setup'))).body.data;
    return { call: post(`/v1/checkout-sessions/${session.id}/expire`, {}, m.secretKey), resourceId: () => session.id };
  },
  'POST /payment-links': async () => ({ call: post('/v1/payment-links', { amount: 500, currency: 'USD' }, m.secretKey) }),
  'PATCH /payment-links/:id': async () => {
    const link = (await post('/v1/payment-links', { amount: 500, currency: 'USD' }, m.secretKey)(unique('req_setup'))).body.data;
    return { call: patch(`/v1/payment-links/${link.id}`, { active: false }), resourceId: () => link.id };
  },
  'PUT /accounts/:id/settings/billing': async () => ({
    call: put(`/v1/accounts/${m.account.id}/settings/billing`, { retry_days: [2, 4], when_exhausted: 'UNPAID' }), resourceId: () => m.account.id,
  }),
  'POST /products': async () => ({ call: post('/v1/products', { name: 'Audited plan' }, m.secretKey) }),
  'PATCH /products/:id': async () => {
    const product = await made(post('/v1/products', { name: 'Audited plan' }, m.secretKey));
    return { call: patch(`/v1/products/${product.id}`, { active: false }), resourceId: () => product.id };
  },
  'POST /prices': async () => {
    const product = await made(post('/v1/products', { name: 'Audited plan' }, m.secretKey));
    return { call: post('/v1/prices', { product_id: product.id, unit_amount: 900, currency: 'USD', recurring: { interval: 'month' } }, m.secretKey) };
  },
  'PATCH /prices/:id': async () => {
    const price = await monthlyPrice();
    return { call: patch(`/v1/prices/${price}`, { active: false }), resourceId: () => price };
  },
  'PATCH /subscriptions/:id': async () => {
    const sub = await subscription(CARDS.visa);
    return { call: patch(`/v1/subscriptions/${sub.id}`, { metadata: { desk: 'billing' } }), resourceId: () => sub.id };
  },
  'POST /subscriptions/:id/cancel': async () => {
    const sub = await subscription(CARDS.visa);
    return { call: post(`/v1/subscriptions/${sub.id}/cancel`, {}, m.secretKey), resourceId: () => sub.id };
  },
  // A first invoice declined: the subscription INCOMPLETE, its invoice OPEN, to void or write off.
  'POST /invoices/:id/void': async () => {
    const sub = await subscription(CARDS.declined);
    return { call: post(`/v1/invoices/${sub.latest_invoice_id}/void`, {}, m.secretKey), resourceId: () => sub.latest_invoice_id };
  },
  'POST /invoices/:id/mark-uncollectible': async () => {
    const sub = await subscription(CARDS.declined);
    return { call: post(`/v1/invoices/${sub.latest_invoice_id}/mark-uncollectible`, {}, m.secretKey), resourceId: () => sub.latest_invoice_id };
  },
  'POST /disputes/:id/evidence': async () => {
    const id = await disputedPayment();
    return { call: post(`/v1/disputes/${id}/evidence`, { customer_name: 'Ada Lovelace', uncategorized_text: 'AUDITSECRET receipt' }, m.secretKey), resourceId: () => id };
  },
  'POST /disputes/:id/accept': async () => {
    const id = await disputedPayment();
    return { call: post(`/v1/disputes/${id}/accept`, {}, m.secretKey), resourceId: () => id };
  },
};

async function monthlyPrice(): Promise<string> {
  const product = await made(post('/v1/products', { name: 'Audited plan' }, m.secretKey));
  return (await made(post('/v1/prices', { product_id: product.id, unit_amount: 900, currency: 'USD', recurring: { interval: 'month' } }, m.secretKey))).id;
}

/** A live subscription on a card saved to a new customer (its first invoice paid, or declined with CARDS.declined). */
async function subscription(number: string): Promise<any> {
  const customer = await made(post('/v1/customers', { name: 'Subscriber' }, m.secretKey));
  const card_ = await made(post(`/v1/customers/${customer.id}/payment-methods`, card(number), m.secretKey));
  return made(post('/v1/subscriptions', {
    customer_id: customer.id, default_payment_method_id: card_.id, items: [{ price_id: await monthlyPrice() }],
  }, m.secretKey));
}

const SESSION = { amount: 1500, currency: 'USD', success_url: 'https://shop.example.com/ok', cancel_url: 'https://shop.example.com/back' };

function fee(methodId: string) {
  return { payment_provider_method_id: methodId, volume_fee: 2.5, fixed_fee: 25, fixed_fee_currency: 'USD' };
}

/** Secrets a response hands out once (keys, signing secrets): they may not reach the trail either. */
function collectSecrets(res: supertest.Response): void {
  const data = res.body?.data ?? {};
  for (const value of [data.key, data.secret, ...(data.api_keys ?? []).map((k: any) => k.key)]) {
    if (typeof value === 'string' && /^(sk_|pk_|whsec_)/.test(value)) plaintexts.push(value);
  }
}

describe('the audit trail', () => {
  it('writes exactly one row for every listed action, with who, where from and what, and no secret in any row', async () => {
    expect(Object.keys(CASES).sort()).toEqual(Object.keys(AUDIT_ACTIONS).sort());
    const written: any[] = [];
    for (const [key, setup] of Object.entries(CASES)) {
      const { call, resourceId, account } = await setup();
      const requestId = unique('req_audit');
      const res = await call(requestId);
      expect(res.status, `${key}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
      collectSecrets(res);
      const rows = await stack.db('core.audit_events').where({ request_id: requestId });
      expect(rows.map((r) => r.action), key).toEqual([AUDIT_ACTIONS[key].action]);
      const [row] = rows;
      expect(row, key).toMatchObject({
        resource_type: AUDIT_ACTIONS[key].resource,
        resource_id: resourceId ? resourceId(res) : res.body.data.id,
        account_id: account ? account(res) : m.account.id,
        ip: expect.any(String),
        request_id: requestId,
      });
      expect(row.actor_id, key).toBeTruthy();
      expect(row.hash).toMatch(/^[0-9a-f]{64}$/);
      written.push(row);
    }

    const byKey = Object.fromEntries(Object.keys(CASES).map((k, i) => [k, written[i]]));
    expect(byKey['POST /api-keys']).toMatchObject({ actor_type: 'user', actor_id: m.userId, user_id: m.userId, api_key_id: null });
    expect(byKey['POST /refunds']).toMatchObject({ actor_type: 'api_key', api_key_id: expect.stringMatching(/^key_/), user_id: null });
    expect(byKey['POST /payment-providers']).toMatchObject({ actor_type: 'system', account_id: null });
    // That credentials and secrets changed is recorded; what they are is not.
    expect(byKey['POST /payment-provider-configs'].changes).toMatchObject({ name: 'Audited', credentials: '[changed]' });
    expect(byKey['PUT /payment-provider-configs/:id'].changes).toEqual({ name: 'Renamed', credentials: '[changed]' });
    expect(byKey['POST /api-keys/:id/regenerate'].changes).toEqual({ key: '[changed]' });
    expect(byKey['POST /webhook-endpoints/:id/rotate-secret'].changes).toEqual({ expire_previous_in_seconds: 0, secret: '[changed]' });
    expect(byKey['POST /refunds'].changes).toMatchObject({ amount: 500 });
    // Evidence is the customer's details and long texts: that it changed is recorded, not what it says.
    expect(byKey['POST /disputes/:id/evidence'].changes).toEqual({ customer_name: '[changed]', uncategorized_text: '[changed]' });

    const everyRow = JSON.stringify(await stack.db('core.audit_events'));
    expect(plaintexts.length).toBeGreaterThan(6);
    for (const secret of plaintexts) expect(everyRow).not.toContain(secret);
    expect(everyRow).not.toContain('AUDITSECRET');

    const [chain] = await verifyAuditChains(stack.db, m.account.id);
    expect(chain).toMatchObject({ accountId: m.account.id, broken: null });
  });

  it('answers a replayed request (same Idempotency-Key) without a second row', async () => {
    const key = unique('idem');
    const requestId = unique('req_audit');
    const send = () => stack.http.post(scoped('/v1/api-keys')).set({ ...as(m.token, requestId), 'Idempotency-Key': key }).send({ name: 'once' });
    expect((await send()).status).toBe(201);
    expect((await send()).status).toBe(201);
    expect(await stack.db('core.audit_events').where({ request_id: requestId }).count({ n: '*' })).toEqual([{ n: 1 }]);
  });

  it('writes no row for a change that failed', async () => {
    const requestId = unique('req_audit');
    const res = await stack.http.delete(scoped(`/v1/api-keys/key_${'0'.repeat(26)}`)).set(as(m.token, requestId));
    expect(res.status).toBe(404);
    expect(await stack.db('core.audit_events').where({ request_id: requestId })).toEqual([]);
  });
});

describe('append-only', () => {
  it('refuses UPDATE, DELETE and TRUNCATE through SQL', async () => {
    const row = await stack.db('core.audit_events').where({ account_id: m.account.id }).first();
    await expect(stack.db('core.audit_events').where({ id: row.id }).update({ action: 'nothing.happened' })).rejects.toThrow(/append-only/);
    await expect(stack.db('core.audit_events').where({ id: row.id }).delete()).rejects.toThrow(/append-only/);
    await expect(stack.db.transaction((trx) => trx.raw('TRUNCATE core.audit_events'))).rejects.toThrow(/append-only/);
    expect(await stack.db('core.audit_events').where({ id: row.id }).first()).toEqual(row);
  });
});

describe('audit:verify', () => {
  it('passes an intact chain, and names the first row a superuser changed behind the trigger', async () => {
    const t = await createMerchant(stack);
    for (const name of ['one', 'two', 'three']) {
      expect((await stack.http.post('/v1/api-keys').set(bearer(t.secretKey)).send({ name })).status).toBe(201);
    }
    const verify = async () => {
      const out: string[] = [];
      const code = await runOps(['audit:verify', '--account', t.account.id], { env: suiteEnv(), io: { out: (l) => out.push(l), err: (l) => out.push(l) } });
      return { code, out: out.join('\n') };
    };
    expect(await verify()).toMatchObject({ code: 0, out: expect.stringContaining('verified') });

    const [, second] = await stack.db('core.audit_events').where({ account_id: t.account.id }).orderBy('seq');
    const tamper = (changes: object) => stack.db.transaction(async (trx) => {
      await trx.raw('SET LOCAL session_replication_role = replica');
      await trx('core.audit_events').where({ id: second.id }).update({ changes: JSON.stringify(changes) });
    });
    await tamper({ name: 'someone else' });
    try {
      const { code, out } = await verify();
      expect(code).toBe(1);
      expect(out).toContain(`broken at audit event ${second.id} (seq 2)`);
    } finally {
      // Put it back: other files' chains are verified in the same database.
      await tamper(second.changes);
    }
    expect((await verify()).code).toBe(0);
  });
});
