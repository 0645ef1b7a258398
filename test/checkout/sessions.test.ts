import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createMerchant, RunningWorker, signToken, startStack, startWorker, TestStack, unique } from '../support/stack';
import { card, CARDS, confirm, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually } from '../support/worker-process';
import { insertApiKey } from '../../db/api-keys';
import { insertCheckoutSession } from '../../db/checkout-sessions';
import { newId, newUnguessableId } from '../../lib/ids';
import { Vault } from '../../lib/vault';
import { checkoutActivities } from '../../activities/checkout';
import { checkoutSignals, checkoutWorkflowId, type CheckoutRef, type CheckoutSessionInput } from '../../contracts/checkout';
import { createSession, eventsOfPayment, getSession, openSession, paymentRow, SESSION, SESSION_FIELDS, sessionRow, SHOP } from './session-support';

// Checkout sessions against the real API, Postgres, Temporal and the sandbox processor: the session's
// workflow, its payment, its expiry by `expire` and its completion when the payment is paid.

const CARD_3DS = '4000002760003184';

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let f: PaymentsFixture;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '2000' });
  worker = await startWorker(stack);
  f = await paymentsFixture(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

const expire = (id: string, key = f.merchant.secretKey) => stack.http.post(`/v1/checkout-sessions/${id}/expire`).set(bearer(key)).send({});

/** The session once its row says it ended. */
const ended = (id: string) => eventually(async () => {
  const row = await sessionRow(stack, id);
  return row.status !== 'OPEN' ? row : undefined;
}, 20_000, 100);

describe('creating a checkout session', () => {
  it('answers 201 with the session, its payment created with it and a hosted page url', async () => {
    const before = Date.now();
    const res = await createSession(stack, f.merchant, { metadata: { order: '42' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const s = res.body.data;
    expect(Object.keys(s).sort()).toEqual(SESSION_FIELDS);
    const payment = await paymentRow(stack, s.payment_id);
    expect(s).toEqual({
      object: 'checkout_session', id: expect.stringMatching(/^cs_[0-9A-Z]{26}$/), status: 'OPEN', payment_status: 'UNPAID',
      amount: 1500, currency: 'USD', line_items: null, url: `${stack.config.publicUrl}/checkout/${s.id}`,
      client_secret: payment.client_secret, payment_id: expect.stringMatching(/^pay_/), customer_id: null,
      success_url: SESSION.success_url, cancel_url: SESSION.cancel_url, expires_at: expect.any(String), metadata: { order: '42' },
      created_at: expect.any(String), updated_at: expect.any(String),
    });
    expect(s.client_secret).toMatch(new RegExp(`^${s.payment_id}_secret_`));
    const expiresIn = (Date.parse(s.expires_at) - before) / 1000;
    expect(expiresIn).toBeGreaterThan(3590);
    expect(expiresIn).toBeLessThan(3700);
    expect(payment).toMatchObject({ checkout_session_id: s.id, amount: 1500, currency: 'USD', status: 'CREATED', auto_capture: true, account_id: f.merchant.account.id });
    const events = await eventsOfPayment(stack, f.merchant, s.payment_id);
    expect(events.map((e) => [e.event, e.checkout_session_id])).toEqual([['payment_intent.created', s.id]]);
  });

  it('sums line_items into the amount, in the account\'s currency unless one is given', async () => {
    const items = [{ name: 'T-shirt', quantity: 2, unit_amount: 1250 }, { name: 'Socks <3', quantity: 3, unit_amount: 400 }];
    const s = await openSession(stack, f.merchant, { amount: undefined, currency: undefined, line_items: items });
    expect(s).toMatchObject({ amount: 3700, currency: 'USD', line_items: items });
    expect(await paymentRow(stack, s.payment_id)).toMatchObject({ amount: 3700, currency: 'USD' });
    const eur = await openSession(stack, f.merchant, { amount: undefined, currency: 'EUR', line_items: items });
    expect(eur).toMatchObject({ amount: 3700, currency: 'EUR' });
  });

  it('takes the same Idempotency-Key as one session with one payment', async () => {
    const key = unique('idem');
    const [a, b] = [await createSession(stack, f.merchant, {}, { ...bearer(f.merchant.secretKey), 'Idempotency-Key': key }),
      await createSession(stack, f.merchant, {}, { ...bearer(f.merchant.secretKey), 'Idempotency-Key': key })];
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.body.data.id).toBe(a.body.data.id);
    expect(await stack.db('live.payments').where({ checkout_session_id: a.body.data.id }).count({ n: '*' })).toEqual([{ n: 1 }]);
  });

  it('refuses bad requests with the field and why', async () => {
    const customer = await stack.http.post('/v1/customers').set(bearer(f.merchant.secretKey)).send({ name: 'C', email: 'c@example.com' });
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ line_items: [{ name: 'x', quantity: 1, unit_amount: 100 }] }, 'body', /exactly one of amount and line_items/],
      [{ amount: undefined, currency: undefined }, 'body', /exactly one of amount and line_items/],
      [{ currency: undefined }, 'body/currency', /required with amount/],
      [{ success_url: 'ftp://shop.example.test/x' }, 'body/success_url', /https/],
      [{ success_url: 'http://shop.example.test/thanks' }, 'body/success_url', /absolute https:\/\/ URL/],
      [{ success_url: 'https://user:pw@shop.example.test/' }, 'body/success_url', /https/],
      [{ cancel_url: 'not a url' }, 'body/cancel_url', /./],
      [{ success_url: undefined }, 'body/success_url', /required/],
      [{ expires_in: 1799 }, 'body/expires_in', />= 1800/],
      [{ expires_in: 86_401 }, 'body/expires_in', /<= 86400/],
      [{ save_payment_method: true }, 'body/save_payment_method', /needs customer_id/],
      [{ customer_id: 'cus_nobody' }, 'body/customer_id', /no such customer/],
      [{ amount: undefined, line_items: [{ name: 'x', quantity: 0, unit_amount: 100 }] }, 'body/line_items/0/quantity', />= 1/],
    ];
    for (const [body, path, message] of cases) {
      const res = await createSession(stack, f.merchant, body);
      expect(res.status, `${JSON.stringify(body)} → ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.error.details.reason).toBe('validation_failed');
      expect(res.body.error.details.fields[0].path, JSON.stringify(body)).toBe(path);
      expect(res.body.error.details.fields[0].message, JSON.stringify(body)).toMatch(message);
    }
    // Every line valid, their sum too large for one payment: 422, naming the field.
    const tooMuch = await createSession(stack, f.merchant, { amount: undefined, line_items: [{ name: 'x', quantity: 10_000, unit_amount: 99_999_999 }] });
    expect(tooMuch.status, JSON.stringify(tooMuch.body)).toBe(422);
    expect(tooMuch.body.error.details).toMatchObject({ reason: 'amount_too_large', amount: 999_999_990_000, maximum: 99_999_999, fields: ['body/line_items'] });
    // With its customer, saving the card is accepted.
    const saving = await createSession(stack, f.merchant, { customer_id: customer.body.data.id, save_payment_method: true });
    expect(saving.status, JSON.stringify(saving.body)).toBe(201);
    expect(saving.body.data.customer_id).toBe(customer.body.data.id);
    expect((await sessionRow(stack, saving.body.data.id)).save_payment_method).toBe(true);
  });

  it('allows http:// redirect URLs in sandbox only, and keeps to the account\'s return_url_hosts', async () => {
    const sandbox = await createMerchant(stack, { sandboxOf: f.merchant });
    const res = await createSession(stack, sandbox, { success_url: 'http://localhost:8080/thanks' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(await sessionRow(stack, res.body.data.id, 'sandbox')).toMatchObject({ success_url: 'http://localhost:8080/thanks' });

    const m = await createMerchant(stack);
    const hosts = await stack.http.put(`/v1/accounts/${m.account.id}/settings/return_url_hosts`).set(bearer(m.token)).send({ hosts: ['shop.example.test'] });
    expect(hosts.status, JSON.stringify(hosts.body)).toBe(200);
    const elsewhere = await createSession(stack, m, { cancel_url: 'https://evil.example.test/' });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error.details.fields[0]).toMatchObject({ path: 'body/cancel_url', message: expect.stringMatching(/return_url_hosts/) });
    expect((await createSession(stack, m)).status).toBe(201);
  });
});

describe('permissions', () => {
  it('needs checkout:write to create: a read-only key and a publishable key are refused, reads need checkout:read', async () => {
    const s = await openSession(stack, f.merchant);
    const { plaintext: readOnly } = await insertApiKey(stack.db, stack.config.apiKeyPepper, {
      accountId: f.merchant.account.id, environment: 'production', type: 'SECRET', name: 'ro', managed: false, permissions: { checkout: ['read'] },
    });
    const refused = await createSession(stack, f.merchant, {}, bearer(readOnly));
    expect(refused.status).toBe(403);
    expect(refused.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'checkout:write' });
    expect((await expire(s.id, readOnly)).status).toBe(403);
    expect((await stack.http.get(`/v1/checkout-sessions/${s.id}`).set(bearer(readOnly))).status).toBe(200);

    const publishable = await createSession(stack, f.merchant, {}, bearer(f.merchant.publishableKey));
    expect(publishable.status).toBe(403);
    expect(publishable.body.error.details.reason).toBe('publishable_key_not_allowed');
    expect((await stack.http.get(`/v1/checkout-sessions/${s.id}`).set(bearer(f.merchant.publishableKey))).status).toBe(403);

    const viewer = unique('usr');
    await stack.db('core.account_memberships').insert({ id: unique('mem'), account_id: f.merchant.account.id, user_id: viewer, role: 'VIEWER' });
    const token = signToken({ sub: viewer, workspace_id: f.merchant.workspaceId });
    expect((await createSession(stack, f.merchant, {}, bearer(token)).query({ account_id: f.merchant.account.id })).status).toBe(403);
    expect((await stack.http.get(`/v1/checkout-sessions/${s.id}`).set(bearer(token))).status).toBe(200);
    // The account's owner (a user token) creates, naming the account.
    const owner = await stack.http.post(`/v1/checkout-sessions?account_id=${f.merchant.account.id}`).set(bearer(f.merchant.token)).send(SESSION);
    expect(owner.status, JSON.stringify(owner.body)).toBe(201);
  });
});

describe('reading sessions', () => {
  it('gets one by id, and not another account\'s', async () => {
    const s = await openSession(stack, f.merchant);
    expect(await getSession(stack, f.merchant, s.id)).toEqual(s);
    const other = await createMerchant(stack);
    const hidden = await stack.http.get(`/v1/checkout-sessions/${s.id}`).set(bearer(other.secretKey));
    expect(hidden.status).toBe(404);
    expect((await stack.http.get('/v1/checkout-sessions/cs_nothing').set(bearer(f.merchant.secretKey))).status).toBe(404);
  });

  it('lists newest first in keyset pages, filtered by status', async () => {
    const m = await createMerchant(stack);
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) ids.push((await openSession(stack, m)).id);
    const first = await stack.http.get('/v1/checkout-sessions?limit=2').set(bearer(m.secretKey));
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ total: 3, page: 1, limit: 2, has_more: true });
    expect(first.body.data.map((s: any) => s.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.data[0].client_secret).toMatch(/_secret_/);
    const next = await stack.http.get(`/v1/checkout-sessions?limit=2&starting_after=${ids[1]}`).set(bearer(m.secretKey));
    expect(next.body).toMatchObject({ page: null, has_more: false, total: null });
    expect(next.body.data.map((s: any) => s.id)).toEqual([ids[0]]);
    const back = await stack.http.get(`/v1/checkout-sessions?limit=2&ending_before=${ids[0]}`).set(bearer(m.secretKey));
    expect(back.body.data.map((s: any) => s.id)).toEqual([ids[2], ids[1]]);

    expect((await expire(ids[1], m.secretKey)).status).toBe(200);
    const expired = await stack.http.get('/v1/checkout-sessions?status=EXPIRED').set(bearer(m.secretKey));
    expect(expired.body.data.map((s: any) => s.id)).toEqual([ids[1]]);
    const open = await stack.http.get('/v1/checkout-sessions?status=OPEN').set(bearer(m.secretKey));
    expect(open.body.data.map((s: any) => s.id)).toEqual([ids[2], ids[0]]);

    const foreign = await stack.http.get(`/v1/checkout-sessions?starting_after=${(await openSession(stack, f.merchant)).id}`).set(bearer(m.secretKey));
    expect(foreign.status).toBe(422);
    expect(foreign.body.error.details.reason).toBe('invalid_pagination');
    expect((await stack.http.get('/v1/checkout-sessions?status=PAID').set(bearer(m.secretKey))).status).toBe(400);
  });
});

describe('expiring a session', () => {
  it('expires it, cancels its payment as abandoned, tells checkout.session.expired; a second expire is 409', async () => {
    const s = await openSession(stack, f.merchant);
    const res = await expire(s.id);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ id: s.id, status: 'EXPIRED', payment_status: 'UNPAID' });
    expect(await paymentRow(stack, s.payment_id)).toMatchObject({ status: 'CANCELED', cancellation_reason: 'abandoned' });
    const events = await eventsOfPayment(stack, f.merchant, s.payment_id);
    expect(events.map((e) => e.event)).toEqual(['payment_intent.created', 'payment_intent.canceled', 'checkout.session.expired']);
    const expired = events.at(-1);
    expect(expired).toMatchObject({ subject_type: 'checkout_session', subject_id: s.id, checkout_session_id: s.id });
    expect(expired.data.object).toMatchObject({ object: 'checkout_session', id: s.id, status: 'EXPIRED', client_secret: null });

    const again = await expire(s.id);
    expect(again.status).toBe(409);
    expect(again.body.error.details).toMatchObject({ reason: 'invalid_state', status: 'EXPIRED' });
    expect((await stack.http.post('/v1/checkout-sessions/cs_nothing/expire').set(bearer(f.merchant.secretKey)).send({})).status).toBe(404);
  });

  it('does not expire under a payment being paid; once that payment failed it expires', async () => {
    const s = await openSession(stack, f.merchant);
    const confirmed = await confirm(stack, f.merchant, s.payment_id, { payment_method: card(CARD_3DS), return_url: `${SHOP}/back` });
    expect(confirmed.body.data.status, JSON.stringify(confirmed.body)).toBe('REQUIRES_ACTION');
    const refused = await expire(s.id);
    expect(refused.status).toBe(409);
    expect(refused.body.error.details).toMatchObject({ reason: 'invalid_state', status: 'OPEN', payment_status: 'REQUIRES_ACTION' });
    expect(await sessionRow(stack, s.id)).toMatchObject({ status: 'OPEN' });
    expect(await paymentRow(stack, s.payment_id)).toMatchObject({ status: 'REQUIRES_ACTION' });

    // The customer fails the challenge: the payment is FAILED, and the session may expire.
    const answer = await fetch(confirmed.body.data.next_action.redirect_to_url.url, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'action=fail', redirect: 'manual',
    });
    expect([200, 303]).toContain(answer.status);
    await eventually(async () => (await paymentRow(stack, s.payment_id)).status === 'FAILED', 20_000, 100);
    expect((await expire(s.id)).status).toBe(200);
    expect(await paymentRow(stack, s.payment_id)).toMatchObject({ status: 'CANCELED', cancellation_reason: 'abandoned' });
  });
});

describe('completing a session', () => {
  it('completes, not expires, when its payment was paid meanwhile (read at expiry), once', async () => {
    const s = await openSession(stack, f.merchant);
    const paid = await confirm(stack, f.merchant, s.payment_id, { payment_method: card(CARDS.visa) });
    expect(paid.body.data.status, JSON.stringify(paid.body)).toBe('SUCCEEDED');
    const res = await expire(s.id);
    expect(res.status).toBe(409);
    expect(res.body.error.details).toMatchObject({ reason: 'invalid_state', status: 'COMPLETE' });
    expect(await getSession(stack, f.merchant, s.id)).toMatchObject({ status: 'COMPLETE', payment_status: 'PAID' });
    expect(await paymentRow(stack, s.payment_id)).toMatchObject({ status: 'SUCCEEDED', cancellation_reason: null });
    const events = (await eventsOfPayment(stack, f.merchant, s.payment_id)).filter((e) => e.event.startsWith('checkout.'));
    expect(events.map((e) => e.event)).toEqual(['checkout.session.completed']);
    expect(events[0].data.object).toMatchObject({ id: s.id, status: 'COMPLETE', payment_status: 'PAID', client_secret: null });
  });

  it('completes on its payment\'s paymentSettled signal, and only if the payment row says paid', async () => {
    const client = await stack.deps.temporal();
    const s = await openSession(stack, f.merchant, { auto_capture: false });
    const handle = client.workflow.getHandle(checkoutWorkflowId(s.id));
    // Anyone reaching Temporal can signal: an unpaid payment leaves the session open.
    await handle.signal(checkoutSignals.paymentSettled, { paymentId: s.payment_id, status: 'SUCCEEDED' });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await sessionRow(stack, s.id)).toMatchObject({ status: 'OPEN', payment_status: 'UNPAID' });

    const authorized = await confirm(stack, f.merchant, s.payment_id, { payment_method: card(CARDS.visa) });
    expect(authorized.body.data.status, JSON.stringify(authorized.body)).toBe('AUTHORIZED');
    // What the payment's workflow sends when the payment is authorized (auto_capture: false completes the session).
    await handle.signal(checkoutSignals.paymentSettled, { paymentId: s.payment_id, status: 'AUTHORIZED' }).catch(() => {});
    expect(await ended(s.id)).toMatchObject({ status: 'COMPLETE', payment_status: 'PAID' });
    expect(await handle.result()).toMatchObject({ status: 'COMPLETE' });
    // A late expiry does nothing.
    expect((await expire(s.id)).status).toBe(409);
    const events = (await eventsOfPayment(stack, f.merchant, s.payment_id)).filter((e) => e.event.startsWith('checkout.'));
    expect(events.map((e) => e.event)).toEqual(['checkout.session.completed']);
  });

  it('reads the payment at expiry: paid completes the session instead, once; being paid keeps it open', async () => {
    const activities = checkoutActivities({ db: stack.db, config: stack.config, vault: new Vault(stack.config.vaultKeys), temporal: () => stack.deps.temporal() });
    /** A session row and its payment's row in `status`, written directly: the activity alone decides here, no workflow. */
    async function sessionWithPayment(status: string): Promise<CheckoutRef> {
      const ref: CheckoutRef = {
        sessionId: newUnguessableId('cs'), paymentId: newId('pay'), accountId: f.merchant.account.id, workspaceId: f.merchant.workspaceId,
        environment: 'production', context: { actor: { type: 'system', id: 'test' } },
      };
      await stack.db('live.payments').insert({ id: ref.paymentId, account_id: ref.accountId, amount: 1500, currency: 'USD', status, checkout_session_id: ref.sessionId });
      await insertCheckoutSession(stack.db, 'production', {
        ...ref, amount: 1500, currency: 'USD', lineItems: null, successUrl: SESSION.success_url, cancelUrl: SESSION.cancel_url,
        savePaymentMethod: false, autoCapture: true, expiresAt: Date.now(), metadata: {},
      } as unknown as CheckoutSessionInput);
      return ref;
    }
    const paid = await sessionWithPayment('SUCCEEDED');
    expect(await activities.expireCheckoutSession(paid)).toMatchObject({ outcome: 'completed', status: 'COMPLETE' });
    expect(await sessionRow(stack, paid.sessionId)).toMatchObject({ status: 'COMPLETE', payment_status: 'PAID' });
    expect(await activities.expireCheckoutSession(paid)).toEqual({ outcome: 'closed', status: 'COMPLETE' });
    expect(await activities.settleCheckoutSession(paid)).toEqual({ outcome: 'closed', status: 'COMPLETE' });
    const events = (await eventsOfPayment(stack, f.merchant, paid.paymentId)).map((e) => e.event);
    expect(events).toEqual(['checkout.session.completed']);

    const paying = await sessionWithPayment('PROCESSING');
    expect(await activities.expireCheckoutSession(paying)).toEqual({ outcome: 'in_flight', status: 'OPEN', paymentStatus: 'PROCESSING' });
    expect(await activities.settleCheckoutSession(paying)).toEqual({ outcome: 'open', status: 'OPEN' });
    expect(await sessionRow(stack, paying.sessionId)).toMatchObject({ status: 'OPEN', payment_status: 'UNPAID' });
  });

  // Needs the payment workflow's signal (/tmp/out/sessions-payment-patch.md): unskip once it has landed.
  it('completes as soon as its payment succeeds, told by the payment\'s workflow', async () => {
    const s = await openSession(stack, f.merchant);
    const paid = await confirm(stack, f.merchant, s.payment_id, { payment_method: card(CARDS.visa) });
    expect(paid.body.data.status).toBe('SUCCEEDED');
    expect(await ended(s.id)).toMatchObject({ status: 'COMPLETE', payment_status: 'PAID' });
  });
});
