import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMerchant, Merchant, RunningWorker, sandboxMerchant, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, confirm, createPayment, getPayment } from '../support/payments';
import { createConfig, createProvider } from '../support/routing';
import { eventually } from '../support/worker-process';
import { signItem, startAdyenDouble, type AdyenDouble } from '../doubles/adyen/server';
import { signStripePayload } from '../doubles/stripe/server';

// A processor's events of the wrong mode settle nothing (docs/security.md §15): a test-mode event at a live
// config (where test cards "succeed") and a live-mode one at a sandbox config are acknowledged as the
// processor expects, stored without a target, and counted. A live payment at the Adyen double (a live
// provider aimed at it through PROVIDER_API_BASE_EXTRA_HOSTS) shows the test-mode AUTHORISATION refused
// and the live one taken.

const HMAC_KEY = '7F1E3AB3F6C4D2E1A0B9C8D7E6F5A4B3C2D1E0F9A8B7C6D5E4F3A2B1C0D9E8F7';
const STRIPE_SECRET = 'whsec_test_mode_events_0001';

let adyen: AdyenDouble;
let stack: TestStack;
let worker: RunningWorker;
let live: Merchant;
let adyenConfig: any;
let stripeConfig: any;

const webhook = (configId: string) => `/v1/provider-webhooks/${configId}`;

/** provider_events_wrong_mode_total for the adapter and reason, as GET /metrics tells it. */
async function refusedCount(provider: string, reason: string): Promise<number> {
  const text = (await stack.http.get('/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`provider_events_wrong_mode_total{provider="${provider}",reason="${reason}"}`));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

function postAdyen(configId: string, items: unknown[], liveFlag: 'true' | 'false') {
  const body = { live: liveFlag, notificationItems: items.map((item) => ({ NotificationRequestItem: item })) };
  return stack.http.post(webhook(configId)).set('Content-Type', 'application/json').send(JSON.stringify(body));
}

function stripeEvent(livemode: boolean) {
  return {
    id: `evt_${Math.random().toString(36).slice(2)}${Date.now()}`, object: 'event', api_version: '2025-02-24.acacia',
    created: Math.floor(Date.now() / 1000), livemode, pending_webhooks: 1, request: { id: null, idempotency_key: null },
    type: 'payment_intent.canceled', data: { object: { id: 'pi_WRONGMODE0001', object: 'payment_intent', status: 'canceled', amount: 100, metadata: {} } },
  };
}

function postStripe(configId: string, event: unknown, secret = STRIPE_SECRET) {
  const raw = JSON.stringify(event);
  return stack.http.post(webhook(configId)).set('Content-Type', 'application/json').set('Stripe-Signature', signStripePayload(raw, secret)).send(raw);
}

beforeAll(async () => {
  adyen = await startAdyenDouble();
  stack = await startStack({ PROVIDER_TIMEOUT_MS: '1000', PROVIDER_API_BASE_EXTRA_HOSTS: '127.0.0.1' });
  worker = await startWorker(stack);
  live = await createMerchant(stack);
  const adyenProvider = await createProvider(stack, { body: { name: 'Adyen', identifier: 'adyen', config: { api_base: adyen.url } } });
  adyenConfig = await createConfig(stack, live, adyenProvider.id, {
    name: 'Adyen', credentials: { api_key: 'AQE_live_api_key_0001', merchant_account: 'ShopECOM', hmac_key: HMAC_KEY },
  });
  const stripeProvider = await createProvider(stack, { body: { name: 'Stripe', identifier: 'stripe' } });
  stripeConfig = await createConfig(stack, live, stripeProvider.id, {
    name: 'Stripe', credentials: { secret_key: 'sk_live_test_mode_events_0001', webhook_secret: STRIPE_SECRET },
  });
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await adyen?.close();
});

/** A live payment whose authorization's answer was lost (500 after Adyen made it): only a notification can settle it. */
async function unknownAuthorization(amount: number) {
  adyen.holdNotifications(true);
  adyen.behave({ fail_with_500: true, match: 'POST /v71/payments' });
  const created = await createPayment(stack, live, { amount, auto_capture: false });
  expect(created.status, created.text).toBe(201);
  const paymentId = created.body.data.id;
  const card = { type: 'CARD', card: { number: CARDS.visa, exp_month: 3, exp_year: new Date().getFullYear() + 3, cvc: '737', holder_name: 'John Smith' } };
  const confirming = confirm(stack, live, paymentId, { payment_method: card });
  const charge = await eventually(async () => {
    const row = await stack.db('live.charges').where({ payment_id: paymentId }).first();
    return row?.status === 'UNKNOWN' ? row : undefined;
  }, 30_000, 25);
  const items = adyen.pendingNotifications().filter((n: any) => n.merchantReference === charge.id).map((item) => signItem(item, HMAC_KEY));
  expect(items.map((i: any) => i.eventCode)).toEqual(['AUTHORISATION']);
  return { paymentId, charge, items, confirming };
}

describe('a live config', () => {
  it('refuses a test-mode Adyen AUTHORISATION: acknowledged, stored without a target, counted, settling nothing', async () => {
    const { paymentId, items, confirming } = await unknownAuthorization(2600);
    const before = await refusedCount('adyen', 'test_event_on_live_config');
    const res = await postAdyen(adyenConfig.id, items, 'false');
    expect(res.status).toBe(200);
    expect(res.text).toBe('[accepted]');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await getPayment(stack, live, paymentId)).status).toBe('PROCESSING');
    const [item] = items as { eventCode: string; pspReference: string }[];
    const stored = await stack.db('live.provider_events')
      .where({ payment_provider_config_id: adyenConfig.id, processor_event_id: `${item.eventCode}:${item.pspReference}:true` });
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ delivery: 'no_target', charge_id: null, payment_id: null });
    expect(await refusedCount('adyen', 'test_event_on_live_config')).toBe(before + 1);
    // The confirm gives up waiting and answers what it knows: still processing.
    expect((await confirming).body.data.status).toBe('PROCESSING');
  });

  it('takes the live platform\'s AUTHORISATION (live: "true") and settles the payment', async () => {
    const { paymentId, charge, items, confirming } = await unknownAuthorization(2700);
    const before = await refusedCount('adyen', 'test_event_on_live_config');
    expect((await postAdyen(adyenConfig.id, items, 'true')).status).toBe(200);
    const done = await eventually(async () => {
      const p = await getPayment(stack, live, paymentId);
      return p.status === 'AUTHORIZED' ? p : undefined;
    }, 30_000, 100);
    await confirming;
    expect(done.charges[0]).toMatchObject({ id: charge.id, status: 'AUTHORIZED', authorized_amount: 2700 });
    expect(await refusedCount('adyen', 'test_event_on_live_config')).toBe(before);
  });

  it('refuses a Stripe event with livemode: false, and takes one with livemode: true', async () => {
    const before = await refusedCount('stripe', 'test_event_on_live_config');
    const testEvent = stripeEvent(false);
    const res = await postStripe(stripeConfig.id, testEvent);
    expect(res.status).toBe(200);
    expect(await refusedCount('stripe', 'test_event_on_live_config')).toBe(before + 1);
    expect(await stack.db('live.provider_events').where({ processor_event_id: testEvent.id }).first()).toMatchObject({ delivery: 'no_target' });
    expect((await postStripe(stripeConfig.id, stripeEvent(true))).status).toBe(200);
    expect(await refusedCount('stripe', 'test_event_on_live_config')).toBe(before + 1);
  });
});

describe('a sandbox config', () => {
  it('refuses and counts a Stripe event with livemode: true', async () => {
    const sandbox = await sandboxMerchant(stack);
    const provider = await createProvider(stack, { sandbox: true, body: { name: 'Stripe', identifier: 'stripe' } });
    const config = await createConfig(stack, sandbox, provider.id, { name: 'Stripe', credentials: { secret_key: 'sk_test_mode_0001', webhook_secret: STRIPE_SECRET } });
    const before = await refusedCount('stripe', 'live_event_on_sandbox_config');
    expect((await postStripe(config.id, stripeEvent(true))).status).toBe(200);
    expect(await refusedCount('stripe', 'live_event_on_sandbox_config')).toBe(before + 1);
    expect((await postStripe(config.id, stripeEvent(false))).status).toBe(200);
    expect(await refusedCount('stripe', 'live_event_on_sandbox_config')).toBe(before + 1);
    // Metrics carry the adapter and the reason, never a config, an account or a secret.
    const text = (await stack.http.get('/metrics')).text;
    expect(text).not.toContain(config.id);
    expect(text).not.toContain(STRIPE_SECRET);
  });
});
