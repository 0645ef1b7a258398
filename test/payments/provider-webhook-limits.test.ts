import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Merchant, RunningWorker, sandboxMerchant, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, card, confirm, createPayment, getPayment } from '../support/payments';
import { createConfig, registerConnector } from '../support/routing';
import { eventually } from '../support/worker-process';
import { signStripePayload, startStripeDouble, StripeDouble } from '../doubles/stripe/server';

// The provider webhook route's limits, per source IP: the API runs behind a proxy here (TRUST_PROXY), so
// each request's source is its X-Forwarded-For. The Stripe double posts from the machine itself.

const SECRET = 'whsec_provider_webhook_limits_0001';
const FAILURES = 5;
const RPS = 10;

let double: StripeDouble;
let stack: TestStack;
let worker: RunningWorker;
let merchant: Merchant;
let config: { id: string };

const webhookPath = (configId: string) => `/v1/provider-webhooks/${configId}`;

function post(from: string, body: unknown, signature?: string) {
  const req = stack.http.post(webhookPath(config.id)).set('Content-Type', 'application/json').set('X-Forwarded-For', from);
  return (signature === undefined ? req : req.set('Stripe-Signature', signature)).send(JSON.stringify(body));
}

function stripeEvent(type: string, object: Record<string, unknown>) {
  return {
    id: `evt_${Math.random().toString(36).slice(2)}${Date.now()}`, object: 'event', api_version: '2025-02-24.acacia',
    created: Math.floor(Date.now() / 1000), data: { object }, livemode: false, pending_webhooks: 1, request: { id: null, idempotency_key: null }, type,
  };
}

/** A signed event about an object Switchboard did not make: verified, stored and acknowledged. */
const foreignEvent = () => stripeEvent('payment_intent.succeeded', { id: `pi_${Math.random().toString(36).slice(2)}`, object: 'payment_intent', metadata: {} });

beforeEach(() => {
  double.holdWebhooks(false);
  double.behave({ times: 0 });
});

beforeAll(async () => {
  const trustProxy = process.env.TRUST_PROXY;
  process.env.TRUST_PROXY = 'true';
  double = await startStripeDouble();
  try {
    stack = await startStack({ PROVIDER_TIMEOUT_MS: '1000', PROVIDER_WEBHOOK_FAILURES_PER_MINUTE: String(FAILURES), PROVIDER_WEBHOOK_RPS: String(RPS) });
  } finally {
    if (trustProxy === undefined) delete process.env.TRUST_PROXY;
    else process.env.TRUST_PROXY = trustProxy;
  }
  worker = await startWorker(stack);
  merchant = await sandboxMerchant(stack);
  const stripe = await registerConnector(stack, 'stripe', double.url);
  config = await createConfig(stack, merchant, stripe.id, { name: 'Stripe', credentials: { secret_key: 'sk_test_limits_0001', webhook_secret: SECRET } });
  double.setWebhook({ url: `${stack.baseUrl}${webhookPath(config.id)}`, secret: SECRET });
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await double?.close();
});

describe('the provider webhook route\'s limits', () => {
  it('refuses a source after its bad signatures with 429 before checking the next, others still pass, and the processor\'s notification still settles the payment', async () => {
    // A payment whose authorization is unknown (Stripe made the intent, then answered 500): only the
    // processor's notification can settle it.
    double.holdWebhooks(true);
    double.behave({ fail_with_500: true });
    const created = await createPayment(stack, merchant, { amount: 2468 });
    const paymentId = created.body.data.id;
    const confirming = confirm(stack, merchant, paymentId, { payment_method: card(CARDS.visa) });
    await eventually(async () => {
      const row = await stack.db('sandbox.charges').where({ payment_id: paymentId }).first();
      return row?.status === 'UNKNOWN' ? row : undefined;
    }, 30_000, 25);
    double.behave({ match: 'GET /v1/payment_intents/search', fail_with_500: true, times: 10_000 });

    const forged = foreignEvent();
    for (let i = 1; i <= FAILURES; i += 1) {
      const res = await post('203.0.113.7', forged, 't=1,v1=deadbeef');
      expect(res.status, `request ${i}`).toBe(401);
    }
    const limited = await post('203.0.113.7', forged, signStripePayload(JSON.stringify(forged), SECRET));
    expect(limited.status).toBe(429);
    expect(limited.body.error.details.reason).toBe('rate_limited');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Refused before its signature was checked: a valid one changed nothing, and nothing was stored.
    expect(await stack.db('sandbox.provider_events').where({ processor_event_id: forged.id })).toHaveLength(0);

    // Another source is counted on its own.
    expect((await post('203.0.113.8', forged, 't=1,v1=deadbeef')).status).toBe(401);
    const fromElsewhere = foreignEvent();
    expect((await post('203.0.113.8', fromElsewhere, signStripePayload(JSON.stringify(fromElsewhere), SECRET))).status).toBe(200);

    // Stripe's own notifications (from the machine itself) settle the payment.
    await double.releaseWebhooks();
    const done = await eventually(async () => {
      const p = await getPayment(stack, merchant, paymentId);
      return p.status === 'SUCCEEDED' ? p : undefined;
    }, 30_000, 100);
    await confirming;
    double.behave({ times: 0 });
    expect(done.charges[0]).toMatchObject({ status: 'CAPTURED', captured_amount: 2468 });
    expect(double.webhooksSent().every((sent) => sent.status === 200)).toBe(true);
  }, 90_000);

  it('counts verified notifications per config and source: past PROVIDER_WEBHOOK_RPS in a second, 429 at that source only', async () => {
    const sendSigned = (from: string) => {
      const event = foreignEvent();
      return post(from, event, signStripePayload(JSON.stringify(event), SECRET));
    };
    const statuses = await Promise.all(Array.from({ length: RPS + 1 }, () => sendSigned('198.51.100.1')));
    expect(statuses.filter((r) => r.status === 200)).toHaveLength(RPS);
    const limited = statuses.filter((r) => r.status === 429);
    expect(limited).toHaveLength(1);
    expect(Number(limited[0].headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect((await sendSigned('198.51.100.2')).status).toBe(200);
  });
});
