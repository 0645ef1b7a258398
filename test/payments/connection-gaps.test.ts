import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, Merchant, RunningWorker, sandboxMerchant, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, card, confirm, createPayment, getPayment, paymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { createConfig, registerConnector } from '../support/routing';
import { eventually } from '../support/worker-process';
import { startStripeDouble, StripeDouble } from '../doubles/stripe/server';
import { startAdyenDouble, AdyenDouble } from '../doubles/adyen/server';
import { DroppingProxy, startDroppingProxy } from '../doubles/dropping-proxy';

// A processor that received the request and did the work, then the connection dropped before its answer
// (reset, socket hang up): the outcome is unknown and reconciled with the processor — never a blind retry
// elsewhere, never a second charge. And a capture refused once is sent again under a key of its own.
// The real API, Postgres and Temporal; the Stripe and Adyen doubles, and the sandbox simulator behind a
// proxy that drops the connection after the simulator answered.

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';

let sim: TestSimulator;
let proxy: DroppingProxy;
let stripe: StripeDouble;
let adyen: AdyenDouble;
let stack: TestStack;
let worker: RunningWorker;
let stripeMerchant: Merchant;
let adyenMerchant: Merchant;
let adyenConfig: any;

const webhookPath = (configId: string) => `/v1/provider-webhooks/${configId}`;

/** Confirms a payment of `amount` with `number` and waits until it is no longer PROCESSING (or `status`). */
async function payAndSettle(m: Merchant, number: string, create: Record<string, unknown>, until: (p: any) => boolean) {
  const created = await createPayment(stack, m, create);
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const paymentId = created.body.data.id;
  const confirming = confirm(stack, m, paymentId, { payment_method: card(number) });
  const done = await eventually(async () => {
    const p = await getPayment(stack, m, paymentId);
    return until(p) ? p : undefined;
  }, 60_000, 250);
  await confirming;
  return done;
}

beforeEach(() => {
  stripe.behave({ times: 0 });
  adyen.behave({ times: 0 });
  adyen.holdNotifications(false);
});

beforeAll(async () => {
  sim = await startSimulator();
  proxy = await startDroppingProxy(sim.url);
  stripe = await startStripeDouble();
  adyen = await startAdyenDouble();
  stack = await startStack({ SIMULATOR_URL: proxy.url, PROVIDER_TIMEOUT_MS: '1000' });
  worker = await startWorker(stack);
  stripeMerchant = await sandboxMerchant(stack);
  await createConfig(stack, stripeMerchant, (await registerConnector(stack, 'stripe', stripe.url)).id, {
    name: 'Stripe', credentials: { secret_key: 'sk_test_gaps_0001', webhook_secret: 'whsec_gaps_0001' },
  });
  adyenMerchant = await sandboxMerchant(stack);
  adyenConfig = await createConfig(stack, adyenMerchant, (await registerConnector(stack, 'adyen', adyen.url)).id, {
    name: 'Adyen', credentials: { api_key: 'AQE_test_gaps_0001', merchant_account: 'GapsECOM', hmac_key: HMAC_KEY },
  });
  adyen.setWebhook({ url: `${stack.baseUrl}${webhookPath(adyenConfig.id)}`, hmacKey: HMAC_KEY });
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await proxy?.close();
  await sim?.close();
  await stripe?.close();
  await adyen?.close();
});

describe('a connection dropped after the processor did the work', () => {
  it('sandbox: the authorization is UNKNOWN, then reconciled by key — one charge at the processor, the backup never tried', async () => {
    const f = await paymentsFixture(stack);
    proxy.dropAfterAnswer({ times: 1 });
    const p = await payAndSettle(f.merchant, CARDS.visa, { amount: 1717 }, (x) => !['CREATED', 'PROCESSING'].includes(x.status));
    expect(proxy.dropped()).toEqual([expect.objectContaining({ method: 'POST', path: '/v1/charges', status: 200 })]);
    expect(p.status).toBe('SUCCEEDED');
    expect(p.charges).toHaveLength(1);
    const [charge] = p.charges;
    expect(charge).toMatchObject({ status: 'CAPTURED', captured_amount: 1717, payment_provider_config_id: f.primary.id });
    expect(charge.exchanges[0]).toMatchObject({ operation: 'authorize', outcome: 'unknown', error: expect.stringMatching(/UND_ERR_SOCKET|other side closed|ECONNRESET/) });
    expect(charge.exchanges.map((e: any) => e.operation)).toContain('get_status');
    expect(await sim.key(charge.id)).toMatchObject({ calls: 1, operation: 'authorize' });
  }, 90_000);

  it('stripe: the authorization is UNKNOWN (the library\'s own retry dropped too), then found by the search — one intent', async () => {
    stripe.behave({ drop_connection: true, times: 2 });
    const p = await payAndSettle(stripeMerchant, CARDS.visa, { amount: 1818 }, (x) => !['CREATED', 'PROCESSING'].includes(x.status));
    expect(p.status).toBe('SUCCEEDED');
    expect(p.charges).toHaveLength(1);
    const [charge] = p.charges;
    expect(charge.exchanges[0]).toMatchObject({ operation: 'authorize', outcome: 'unknown', error: expect.stringContaining('ECONNRESET') });
    expect(charge.exchanges.find((e: any) => e.operation === 'get_status')).toMatchObject({ request: { path: '/v1/payment_intents/search' }, outcome: 'approved' });
    expect(stripe.state().creates_by_key[charge.id]).toBe(1);
    expect(stripe.state().intents.filter((pi) => pi.metadata.switchboard_charge_id === charge.id)).toHaveLength(1);
  }, 90_000);

  it('stripe: a capture whose answer was dropped is confirmed from the intent — captured once', async () => {
    const p = await payAndSettle(stripeMerchant, CARDS.visa, { amount: 1900, auto_capture: false }, (x) => x.status === 'AUTHORIZED');
    const [charge] = p.charges;
    stripe.behave({ drop_connection: true, times: 2, match: `POST /v1/payment_intents/${charge.provider_reference}/capture` });
    const res = await stack.http.post(`/v1/payments/${p.id}/capture`).set(bearer(stripeMerchant.secretKey)).send({});
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'SUCCEEDED', amount_received: 1900 });
    const captures = stripe.state().requests.filter((r) => r.path.endsWith('/capture'));
    expect(captures.map((r) => r.idempotency_key)).toEqual([`${charge.id}:capture`, `${charge.id}:capture`]);
    expect(stripe.state().intents.find((pi) => pi.id === charge.provider_reference)).toMatchObject({ status: 'succeeded', amount_received: 1900 });
  }, 90_000);

  it('adyen: the authorization is UNKNOWN, settled by its AUTHORISATION notification — one payment at Adyen', async () => {
    adyen.behave({ drop_connection: true });
    const p = await payAndSettle(adyenMerchant, CARDS.visa, { amount: 2020 }, (x) => !['CREATED', 'PROCESSING'].includes(x.status));
    expect(p.status).toBe('SUCCEEDED');
    expect(p.charges).toHaveLength(1);
    const [charge] = p.charges;
    expect(charge.exchanges[0]).toMatchObject({ operation: 'authorize', outcome: 'unknown' });
    expect(charge.exchanges[0].error).not.toMatch(/ECONNREFUSED/);
    expect(adyen.state().creates_by_key[charge.id]).toBe(1);
    expect(adyen.state().payments.filter((x) => x.merchantReference === charge.id)).toHaveLength(1);
  }, 90_000);

  it('adyen: a capture whose answer was dropped is sent again under the same key — one capture, completed by its notification', async () => {
    const p = await payAndSettle(adyenMerchant, CARDS.visa, { amount: 2100, auto_capture: false }, (x) => x.status === 'AUTHORIZED');
    const [charge] = p.charges;
    adyen.behave({ drop_connection: true, match: `POST /v71/payments/${charge.provider_reference}/captures` });
    const res = await stack.http.post(`/v1/payments/${p.id}/capture`).set(bearer(adyenMerchant.secretKey)).send({});
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const captured = await eventually(async () => {
      const x = await getPayment(stack, adyenMerchant, p.id);
      return x.status === 'SUCCEEDED' ? x : undefined;
    }, 30_000, 100);
    expect(captured.charges[0]).toMatchObject({ status: 'CAPTURED', captured_amount: 2100 });
    expect(adyen.state().modifications.filter((m: any) => m.type === 'captures' && m.paymentPspReference === charge.provider_reference)).toHaveLength(1);
    expect(adyen.state().requests.filter((r) => r.idempotency_key === `${charge.id}:capture`).map((r) => r.replayed ?? false)).toEqual([false, true]);
  }, 90_000);
});

describe('a capture sent again after the processor refused one', () => {
  it('stripe: the second capture reaches Stripe under <charge>:capture:2, not answered from the first key', async () => {
    const p = await payAndSettle(stripeMerchant, CARDS.visa, { amount: 2200, auto_capture: false }, (x) => x.status === 'AUTHORIZED');
    const [charge] = p.charges;
    // The intent canceled at Stripe behind our back: Stripe refuses to capture it, each time it is asked.
    const canceled = await fetch(`${stripe.url}/v1/payment_intents/${charge.provider_reference}/cancel`, {
      method: 'POST', headers: { Authorization: 'Bearer sk_test_gaps_0001', 'Content-Type': 'application/x-www-form-urlencoded' }, body: '',
    });
    expect(canceled.status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const res = await stack.http.post(`/v1/payments/${p.id}/capture`).set(bearer(stripeMerchant.secretKey)).send({});
      expect(res.status, JSON.stringify(res.body)).toBe(402);
    }
    const captures = stripe.state().requests.filter((r) => r.path === `/v1/payment_intents/${charge.provider_reference}/capture`);
    expect(captures.map((r) => r.idempotency_key)).toEqual([`${charge.id}:capture`, `${charge.id}:capture:2`]);
    const after = await getPayment(stack, stripeMerchant, p.id);
    expect(after).toMatchObject({ status: 'AUTHORIZED', last_error: { code: 'capture_failed' } });
    expect(after.charges[0].exchanges.filter((e: any) => e.operation === 'capture').map((e: any) => e.idempotency_key))
      .toEqual([`${charge.id}:capture`, `${charge.id}:capture:2`]);
  }, 90_000);
});
