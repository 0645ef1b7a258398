import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, Merchant, RunningWorker, sandboxMerchant, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, card, confirm, createPayment, getPayment, pay } from '../support/payments';
import { createConfig, registerConnector, systemToken } from '../support/routing';
import { eventually } from '../support/worker-process';
import { signStripePayload, startStripeDouble, StripeDouble } from '../doubles/stripe/server';

// The inbound path end to end: the Stripe double posts signed events to POST /v1/provider-webhooks/{config}
// of the real API, which stores them and signals the payment and refund workflows on the real Temporal
// server. Forged, foreign and repeated events are sent by hand, signed (or not) as Stripe signs.

const PUBLIC_URL = 'https://payments.example.test';
const SECRET = 'whsec_provider_webhooks_0001';
const OTHER_SECRET = 'whsec_provider_webhooks_0002';

let double: StripeDouble;
let stack: TestStack;
let worker: RunningWorker;
let merchant: Merchant;
let other: Merchant;
let config: any;
let otherConfig: any;

const webhookPath = (configId: string) => `/v1/provider-webhooks/${configId}`;
const eventsOf = (configId: string) => stack.db('sandbox.provider_events').where({ payment_provider_config_id: configId }).orderBy('created_at');
const intentsOf = (chargeId: string) => double.state().intents.filter((pi) => pi.metadata.switchboard_charge_id === chargeId);

function post(configId: string, body: unknown, signature?: string) {
  const raw = JSON.stringify(body);
  const req = stack.http.post(webhookPath(configId)).set('Content-Type', 'application/json');
  return (signature === undefined ? req : req.set('Stripe-Signature', signature)).send(raw);
}

function stripeEvent(type: string, object: Record<string, unknown>) {
  return {
    id: `evt_${Math.random().toString(36).slice(2)}${Date.now()}`, object: 'event', api_version: '2025-02-24.acacia',
    created: Math.floor(Date.now() / 1000), data: { object }, livemode: false, pending_webhooks: 1, request: { id: null, idempotency_key: null }, type,
  };
}

/** A payment whose authorization is unknown (Stripe made the intent, then answered 500), look-ups failing. */
async function unknownPayment(amount: number) {
  double.holdWebhooks(true);
  double.behave({ fail_with_500: true });
  const created = await createPayment(stack, merchant, { amount });
  const paymentId = created.body.data.id;
  const confirming = confirm(stack, merchant, paymentId, { payment_method: card(CARDS.visa) });
  const charge = await eventually(async () => {
    const row = await stack.db('sandbox.charges').where({ payment_id: paymentId }).first();
    return row?.status === 'UNKNOWN' ? row : undefined;
  }, 30_000, 25);
  // Stripe's search answers 500 from now on: only the notification can settle the charge.
  double.behave({ match: 'GET /v1/payment_intents/search', fail_with_500: true, times: 10_000 });
  return { paymentId, charge, confirming };
}

beforeEach(() => {
  double.holdWebhooks(false);
  double.behave({ times: 0 });
});

beforeAll(async () => {
  double = await startStripeDouble();
  stack = await startStack({ PROVIDER_TIMEOUT_MS: '1000', PUBLIC_URL });
  worker = await startWorker(stack);
  merchant = await sandboxMerchant(stack);
  other = await sandboxMerchant(stack);
  const stripe = await registerConnector(stack, 'stripe', double.url);
  config = await createConfig(stack, merchant, stripe.id, { name: 'Stripe', credentials: { secret_key: 'sk_test_webhooks_0001', webhook_secret: SECRET } });
  otherConfig = await createConfig(stack, other, stripe.id, { name: 'Stripe', credentials: { secret_key: 'sk_test_webhooks_0002', webhook_secret: OTHER_SECRET } });
  double.setWebhook({ url: `${stack.baseUrl}${webhookPath(config.id)}`, secret: SECRET });
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await double?.close();
});

describe('the provider webhook route', () => {
  it('shows each config\'s webhook_url, built from PUBLIC_URL', async () => {
    expect(config.webhook_url).toBe(`${PUBLIC_URL}/v1/provider-webhooks/${config.id}`);
    const read = await stack.http.get(`/v1/payment-provider-configs/${config.id}`).set(bearer(merchant.token));
    expect(read.body.data.webhook_url).toBe(config.webhook_url);
  });

  it('refuses a missing, forged or foreign signature with 401 invalid_signature, and stores nothing', async () => {
    const before = (await eventsOf(config.id)).length;
    const body = stripeEvent('payment_intent.canceled', { id: 'pi_x', object: 'payment_intent', status: 'canceled', amount: 1, metadata: {} });
    const raw = JSON.stringify(body);
    for (const signature of [undefined, 't=1,v1=deadbeef', signStripePayload(raw, OTHER_SECRET), signStripePayload(raw, SECRET, Math.floor(Date.now() / 1000) - 3600)]) {
      const res = await post(config.id, body, signature);
      expect(res.status, String(signature)).toBe(401);
      expect(res.body.error.details.reason).toBe('invalid_signature');
    }
    expect(await eventsOf(config.id)).toHaveLength(before);
  });

  it('answers 404 for an unknown config, and 401 for a sandbox config\'s unsigned request', async () => {
    expect((await post('ppc_01NOSUCHCONFIG0000000000000', {}, 't=1,v1=0')).status).toBe(404);
    expect((await post('not-an-id', {}, 't=1,v1=0')).status).toBe(404);
    const sandbox = await stack.http.post('/v1/payment-providers?sandbox_mode=true').set(bearer(systemToken()))
      .send({ name: 'Sandbox', identifier: 'sandbox', config: {} });
    const sandboxConfig = await createConfig(stack, merchant, sandbox.body.data.id, { name: 'Sim', credentials: { api_key: 'sim_key_0001' } });
    const res = await post(sandboxConfig.id, {}, 't=1,v1=0');
    expect(res.status).toBe(401);
    expect(res.body.error.details.reason).toBe('invalid_signature');
  });

  it('stores and acknowledges an event about something Switchboard did not make', async () => {
    const body = stripeEvent('customer.created', { id: 'cus_x', object: 'customer' });
    const res = await post(config.id, body, signStripePayload(JSON.stringify(body), SECRET));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: true });
    const [row] = (await eventsOf(config.id)).filter((e: any) => e.processor_event_id === body.id);
    expect(row).toMatchObject({ type: 'customer.created', operation: null, delivery: 'no_target', charge_id: null });
  });

  it('stores and acknowledges a signed event holding U+0000 or an unpaired surrogate, with U+FFFD in their place (Postgres refused it: 500, sent again for good)', async () => {
    // An intent id with U+0000 is looked up as a charge's provider reference (text) as well as stored.
    const body = stripeEvent('payment_intent.canceled', {
      id: 'pi_\u0000', object: 'payment_intent', status: 'canceled', amount: 1, metadata: { note: 'a\u0000b' }, description: 'x\ud800y', 'k\udc00': 'pair \u{1F600}',
    });
    body.id = `${body.id}\u0000`;
    const raw = JSON.stringify(body);
    for (let sent = 1; sent <= 2; sent += 1) {
      const res = await post(config.id, body, signStripePayload(raw, SECRET));
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ received: true });
    }
    const rows = (await eventsOf(config.id)).filter((e: any) => e.processor_event_id === `${body.id.slice(0, -1)}\ufffd`);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ type: 'payment_intent.canceled', delivery: 'no_target', charge_id: null });
    expect(rows[0].payload.data.object).toMatchObject({ id: 'pi_\ufffd', metadata: { note: 'a\ufffdb' }, description: 'x\ufffdy', 'k\ufffd': 'pair \u{1F600}' });
  });
});

describe('a signed event that names our charge but not what the charge is', () => {
  it('is stored and settles nothing: another intent carrying our charge id, more than the charge asked for, or a live-mode event', async () => {
    const authorized = (await pay(stack, merchant, CARDS.visa, { amount: 1234, auto_capture: false })).body.data;
    expect(authorized.status).toBe('AUTHORIZED');
    const charge = authorized.charges[0];
    const [intent] = intentsOf(charge.id);
    expect(charge.provider_reference).toBe(intent.id);
    const succeeded = (object: Record<string, unknown>) => stripeEvent('payment_intent.succeeded', { ...intent, status: 'succeeded', ...object });
    // A live-mode event settles nothing in a sandbox account (real money is not a test payment's).
    const live = { ...succeeded({ amount_received: 1234 }), livemode: true };
    const events = [
      succeeded({ id: 'pi_NOTTHEONE000001', amount: 1234, amount_received: 1234 }),
      succeeded({ amount: 999_999, amount_received: 999_999 }),
      live,
    ];
    for (const event of events) {
      const res = await post(config.id, event, signStripePayload(JSON.stringify(event), SECRET));
      expect(res.status).toBe(200);
      expect((await eventsOf(config.id)).find((e: any) => e.processor_event_id === event.id)).toMatchObject({ delivery: 'no_target', charge_id: null });
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const after = await getPayment(stack, merchant, authorized.id);
    expect(after).toMatchObject({ status: 'AUTHORIZED', amount_capturable: 1234 });
    expect(after.charges[0]).toMatchObject({ status: 'AUTHORIZED', provider_reference: intent.id, authorized_amount: 1234, captured_amount: 0 });
    // Its own capture still goes to its own intent.
    const captured = await stack.http.post(`/v1/payments/${authorized.id}/capture`).set(bearer(merchant.secretKey)).send({});
    expect(captured.status, JSON.stringify(captured.body)).toBe(200);
    expect(captured.body.data.charges[0]).toMatchObject({ status: 'CAPTURED', captured_amount: 1234, provider_reference: intent.id });
  });
});

describe('an unknown authorization settled by the processor\'s notification', () => {
  it('settles once, on the genuine event (duplicated), after a foreign config\'s event changed nothing — one intent at Stripe', async () => {
    const { paymentId, charge, confirming } = await unknownPayment(4321);
    // The same facts, validly signed by another merchant's config: stored, acknowledged, inert.
    const [intent] = intentsOf(charge.id);
    const foreign = stripeEvent('payment_intent.payment_failed', {
      ...intent, status: 'requires_payment_method', last_payment_error: { type: 'card_error', code: 'card_declined', decline_code: 'stolen_card' },
    });
    const res = await post(otherConfig.id, foreign, signStripePayload(JSON.stringify(foreign), OTHER_SECRET));
    expect(res.status).toBe(200);
    expect((await eventsOf(otherConfig.id)).find((e: any) => e.processor_event_id === foreign.id)).toMatchObject({ delivery: 'no_target', charge_id: null });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await getPayment(stack, merchant, paymentId)).status).toBe('PROCESSING');

    // Stripe's own events, each sent twice.
    await double.releaseWebhooks({ duplicate: true });
    double.holdWebhooks(false);
    const done = await eventually(async () => {
      const p = await getPayment(stack, merchant, paymentId);
      return p.status === 'SUCCEEDED' ? p : undefined;
    }, 30_000, 100);
    await confirming;
    double.behave({ times: 0 });
    expect(done.charges).toHaveLength(1);
    expect(done.charges[0]).toMatchObject({ id: charge.id, status: 'CAPTURED', captured_amount: 4321 });
    const notifications = done.charges[0].exchanges.filter((e: any) => e.request.method === 'NOTIFICATION');
    expect(notifications).toHaveLength(1);
    expect(notifications[0]).toMatchObject({ operation: 'authorize', outcome: 'approved', request: { path: 'payment_intent.succeeded' } });
    expect(double.state().creates_by_key[charge.id]).toBe(1);
    const stored = (await eventsOf(config.id)).filter((e: any) => e.charge_id === charge.id && e.type === 'payment_intent.succeeded');
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ operation: 'authorize', delivery: 'signalled', payment_id: paymentId });
    // Every delivery, the duplicates included, was answered 2xx (Stripe stops retrying).
    expect(double.webhooksSent().filter((d) => d.type === 'payment_intent.succeeded' && intent.id && d.status !== 200)).toEqual([]);
    expect(JSON.stringify(stored[0].payload)).not.toContain(CARDS.visa);
    expect(JSON.stringify(stored[0].payload)).not.toContain('_secret_');
  });
});

describe('refunds Stripe answers pending', () => {
  async function pendingRefund(amount: number) {
    const paid = await pay(stack, merchant, CARDS.visa, { amount: 2000 });
    expect(paid.body.data.status).toBe('SUCCEEDED');
    double.behave({ refund_status: 'pending' });
    const res = await stack.http.post('/v1/refunds').set(bearer(merchant.secretKey)).send({ payment_id: paid.body.data.id, amount });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data.status).toBe('PENDING');
    const refundId = res.body.data.id;
    const reference = await eventually(async () => {
      const found = double.state().refunds.find((r) => r.metadata.switchboard_refund_id === refundId);
      return found?.id;
    }, 10_000, 50);
    // Asked once: a pending refund waits for its notification, it is not asked again.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(double.state().requests.filter((r) => r.idempotency_key === refundId)).toHaveLength(1);
    expect((await stack.db('sandbox.refunds').where({ id: refundId }).first()).status).toBe('PENDING');
    return { paymentId: paid.body.data.id, chargeId: paid.body.data.charges[0].id, refundId, reference };
  }

  const settledRefund = (refundId: string) => eventually(async () => {
    const row = await stack.db('sandbox.refunds').where({ id: refundId }).first();
    return row.status !== 'PENDING' ? row : undefined;
  }, 30_000, 100);

  it('succeeds when Stripe reports the refund succeeded', async () => {
    const { refundId, reference, chargeId } = await pendingRefund(700);
    await double.settleRefund(reference, 'succeeded');
    expect((await settledRefund(refundId)).status).toBe('SUCCEEDED');
    const charge = await stack.db('sandbox.charges').where({ id: chargeId }).first();
    expect(charge).toMatchObject({ status: 'PARTIALLY_REFUNDED' });
    expect(Number(charge.refunded_amount)).toBe(700);
    expect(Number(charge.pending_refund_amount)).toBe(0);
  });

  it('fails, releases the amount and emits refund.failed when Stripe reports the refund failed', async () => {
    const { refundId, reference, chargeId, paymentId } = await pendingRefund(900);
    await double.settleRefund(reference, 'failed');
    expect((await settledRefund(refundId)).status).toBe('FAILED');
    const charge = await stack.db('sandbox.charges').where({ id: chargeId }).first();
    expect(Number(charge.refunded_amount)).toBe(0);
    expect(Number(charge.pending_refund_amount)).toBe(0);
    const events = await stack.db('sandbox.events').where({ payment_id: paymentId }).pluck('event');
    expect(events).toContain('refund.failed');
    // The whole amount is refundable again.
    const again = await stack.http.post('/v1/refunds').set(bearer(merchant.secretKey)).send({ payment_id: paymentId, amount: 2000 });
    expect(again.status, JSON.stringify(again.body)).toBe(201);
  });
});
