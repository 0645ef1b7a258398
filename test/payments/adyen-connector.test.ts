import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, Merchant, RunningWorker, sandboxMerchant, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, confirm, createPayment, getPayment } from '../support/payments';
import { addFees, createConfig, registerConnector } from '../support/routing';
import { eventually } from '../support/worker-process';
import { notificationBody, signItem, startAdyenDouble, AdyenDouble } from '../doubles/adyen/server';
import { startStripeDouble, StripeDouble } from '../doubles/stripe/server';

// The adyen connector end to end: the real API, Postgres and Temporal, the adapter speaking through
// Adyen's library to the local double of Checkout API v71, and the double's signed notifications coming
// back through POST /v1/provider-webhooks/{config}. Captures, cancels and refunds are asynchronous at
// Adyen: received at once, completed (or refused) by their notification.

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const OTHER_HMAC_KEY = '0F0E0D0C0B0A09080706050403020100F0E0D0C0B0A090807060504030201000';

let adyen: AdyenDouble;
let stripe: StripeDouble;
let stack: TestStack;
let worker: RunningWorker;
let merchant: Merchant;
let adyenConfig: any;
let cascade: Merchant;
let cascadeStripe: any;
let cascadeAdyen: any;

const webhookPath = (configId: string) => `/v1/provider-webhooks/${configId}`;
const paymentsAtAdyen = (chargeId: string) => adyen.state().payments.filter((p) => p.merchantReference === chargeId || p.reference === chargeId);
const eventsOf = (paymentId: string) => stack.db('sandbox.events').where({ payment_id: paymentId }).orderBy('created_at').pluck('event');

function holderCard(number: string, holderName = 'John Smith') {
  return { type: 'CARD', card: { number, exp_month: 3, exp_year: new Date().getFullYear() + 3, cvc: '737', holder_name: holderName } };
}


async function payWith(m: Merchant, number: string, holderName?: string, create: Record<string, unknown> = {}) {
  const created = await createPayment(stack, m, { amount: 5000, ...create });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const res = await confirm(stack, m, created.body.data.id, { payment_method: holderCard(number, holderName) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return getPayment(stack, m, created.body.data.id);
}

const settled = (m: Merchant, paymentId: string, test: (p: any) => boolean) => eventually(async () => {
  const p = await getPayment(stack, m, paymentId);
  return test(p) ? p : undefined;
}, 30_000, 100);

const refundSettled = (refundId: string) => eventually(async () => {
  const row = await stack.db('sandbox.refunds').where({ id: refundId }).first();
  return row && row.status !== 'PENDING' ? row : undefined;
}, 30_000, 100);

beforeEach(() => {
  adyen.behave({ times: 0 });
  adyen.holdNotifications(false);
});

beforeAll(async () => {
  adyen = await startAdyenDouble();
  stripe = await startStripeDouble();
  stack = await startStack({ PROVIDER_TIMEOUT_MS: '1000' });
  worker = await startWorker(stack);
  const adyenProvider = await registerConnector(stack, 'adyen', adyen.url);
  const stripeProvider = await registerConnector(stack, 'stripe', stripe.url);

  merchant = await sandboxMerchant(stack);
  adyenConfig = await createConfig(stack, merchant, adyenProvider.id, {
    name: 'Adyen', credentials: { api_key: 'AQE_test_api_key_0001', merchant_account: 'SwitchboardECOM', hmac_key: HMAC_KEY },
  });
  adyen.setWebhook({ url: `${stack.baseUrl}${webhookPath(adyenConfig.id)}`, hmacKey: HMAC_KEY });

  // A second merchant routes Stripe first (cheaper), Adyen next.
  cascade = await sandboxMerchant(stack);
  cascadeStripe = await createConfig(stack, cascade, stripeProvider.id, { name: 'Stripe', credentials: { secret_key: 'sk_test_cascade_0001', webhook_secret: 'whsec_cascade' } });
  cascadeAdyen = await createConfig(stack, cascade, adyenProvider.id, {
    name: 'Adyen', credentials: { api_key: 'AQE_test_api_key_0002', merchant_account: 'CascadeECOM', hmac_key: OTHER_HMAC_KEY },
  });
  await addFees(stack, cascade, cascadeStripe, stripeProvider, 2.9);
  await addFees(stack, cascade, cascadeAdyen, adyenProvider, 3.5);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await adyen?.close();
  await stripe?.close();
});

describe('authorizations at adyen', () => {
  it('approves with immediate capture: SUCCEEDED, one payment at Adyen under the charge id, no card or key stored', async () => {
    const p = await payWith(merchant, CARDS.visa);
    expect(p.status).toBe('SUCCEEDED');
    const [charge] = p.charges;
    expect(charge).toMatchObject({ status: 'CAPTURED', captured_amount: 5000, payment_provider_config_id: adyenConfig.id });
    expect(charge.provider_reference).toMatch(/^[A-Z0-9]{16}$/);
    expect(paymentsAtAdyen(charge.id)).toHaveLength(1);
    expect(adyen.state().creates_by_key[charge.id]).toBe(1);
    const stored = JSON.stringify(charge.exchanges);
    expect(stored).not.toContain(CARDS.visa);
    expect(stored).not.toContain('AQE_test_api_key_0001');
  });

  it('stops at a hard decline chosen by the holder name (BLOCKED CARD → 5)', async () => {
    const p = await payWith(merchant, CARDS.visa, 'BLOCKED CARD');
    expect(p.status).toBe('FAILED');
    expect(p.charges).toHaveLength(1);
    expect(p.charges[0].status).toBe('DECLINED');
    expect(p.charges[0].exchanges[0].provider_code).toBe('5');
    expect(p.last_error).toMatchObject({ code: 'card_declined' });
  });

  it('fails a soft decline on its only candidate with all_providers_failed (ISSUER UNAVAILABLE → 9)', async () => {
    const p = await payWith(merchant, CARDS.visa, 'ISSUER UNAVAILABLE');
    expect(p.status).toBe('FAILED');
    expect(p.charges.map((c: any) => c.status)).toEqual(['FAILED']);
    expect(p.last_error).toMatchObject({ code: 'all_providers_failed' });
  });

  it('settles an authorization whose answer was lost (500 after Adyen made it) by its AUTHORISATION notification — no second payment', async () => {
    adyen.holdNotifications(true);
    adyen.behave({ fail_with_500: true, match: 'POST /v71/payments' });
    const created = await createPayment(stack, merchant, { amount: 2600, auto_capture: false });
    const paymentId = created.body.data.id;
    const confirming = confirm(stack, merchant, paymentId, { payment_method: holderCard(CARDS.visa) });
    const charge = await eventually(async () => {
      const row = await stack.db('sandbox.charges').where({ payment_id: paymentId }).first();
      return row?.status === 'UNKNOWN' ? row : undefined;
    }, 30_000, 25);
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect((await getPayment(stack, merchant, paymentId)).status).toBe('PROCESSING');
    await adyen.releaseNotifications({ duplicate: true });
    adyen.holdNotifications(false);
    const done = await settled(merchant, paymentId, (p) => p.status === 'AUTHORIZED');
    await confirming;
    expect(done.charges).toHaveLength(1);
    expect(done.charges[0]).toMatchObject({ id: charge.id, status: 'AUTHORIZED', authorized_amount: 2600 });
    expect(done.charges[0].exchanges.filter((e: any) => e.request.method === 'NOTIFICATION')).toHaveLength(1);
    expect(adyen.state().creates_by_key[charge.id]).toBe(1);
    const stored = await stack.db('sandbox.provider_events').where({ charge_id: charge.id, type: 'AUTHORISATION' });
    expect(stored).toHaveLength(1);
  });
});

describe('asynchronous modifications', () => {
  it('captures part: AUTHORIZED with the pending capture, then SUCCEEDED by the CAPTURE notification', async () => {
    adyen.holdNotifications(true);
    const p = await payWith(merchant, CARDS.visa, undefined, { auto_capture: false });
    expect(p.status).toBe('AUTHORIZED');
    const res = await stack.http.post(`/v1/payments/${p.id}/capture`).set(bearer(merchant.secretKey)).send({ amount: 3000 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'AUTHORIZED', pending_operation: { type: 'capture', amount: 3000, charge_id: p.charges[0].id } });
    // Nothing else is taken while it is pending.
    const again = await stack.http.post(`/v1/payments/${p.id}/cancel`).set(bearer(merchant.secretKey)).send({});
    expect(again.status).toBe(409);
    await adyen.releaseNotifications();
    adyen.holdNotifications(false);
    const done = await settled(merchant, p.id, (x) => x.status === 'SUCCEEDED');
    expect(done).toMatchObject({ amount_received: 3000, pending_operation: null });
    expect(done.charges[0]).toMatchObject({ status: 'CAPTURED', captured_amount: 3000 });
    expect(adyen.state().requests.filter((r) => r.idempotency_key === `${p.charges[0].id}:capture`)).toHaveLength(1);
    expect(await eventsOf(p.id)).toContain('payment_intent.succeeded');
  });

  it('keeps the payment AUTHORIZED when Adyen refuses the capture in its notification (charge.capture_failed)', async () => {
    const p = await payWith(merchant, CARDS.visa, undefined, { auto_capture: false });
    adyen.behave({ fail_next: 'capture' });
    const res = await stack.http.post(`/v1/payments/${p.id}/capture`).set(bearer(merchant.secretKey)).send({});
    expect(res.body.data.pending_operation).toMatchObject({ type: 'capture' });
    const done = await settled(merchant, p.id, (x) => x.pending_operation === null);
    expect(done).toMatchObject({ status: 'AUTHORIZED', amount_received: 0, last_error: { code: 'capture_failed' } });
    expect(await eventsOf(p.id)).toContain('charge.capture_failed');

    // Captured again: under a key of its own, so it reaches Adyen (the first key holds the refused one's
    // "received", which a replay would answer for good), and its CAPTURE notification completes it.
    const again = await stack.http.post(`/v1/payments/${p.id}/capture`).set(bearer(merchant.secretKey)).send({});
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const captured = await settled(merchant, p.id, (x) => x.status === 'SUCCEEDED');
    expect(captured.charges[0]).toMatchObject({ status: 'CAPTURED', captured_amount: p.amount });
    const charge = p.charges[0].id;
    expect(adyen.state().requests.filter((r) => r.idempotency_key?.startsWith(`${charge}:capture`)).map((r) => [r.idempotency_key, r.replayed ?? false]))
      .toEqual([[`${charge}:capture`, false], [`${charge}:capture:2`, false]]);
  });

  it('voids: cancel answers with the pending void, CANCELED on the CANCELLATION notification', async () => {
    const p = await payWith(merchant, CARDS.visa, undefined, { auto_capture: false });
    adyen.holdNotifications(true);
    const res = await stack.http.post(`/v1/payments/${p.id}/cancel`).set(bearer(merchant.secretKey)).send({});
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'AUTHORIZED', pending_operation: { type: 'void' } });
    adyen.holdNotifications(false);
    const done = await settled(merchant, p.id, (x) => x.status === 'CANCELED');
    expect(done.charges[0].status).toBe('VOIDED');
    expect(done.cancellation_reason).toBe('requested_by_customer');
  });

  it('refunds in two parts, each received, then settled by its REFUND notification', async () => {
    const p = await payWith(merchant, CARDS.visa);
    const ids: string[] = [];
    for (const amount of [1500, 1000]) {
      const res = await stack.http.post('/v1/refunds').set(bearer(merchant.secretKey)).send({ payment_id: p.id, amount });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      ids.push(res.body.data.id);
    }
    for (const id of ids) expect((await refundSettled(id)).status).toBe('SUCCEEDED');
    const charge = await stack.db('sandbox.charges').where({ id: p.charges[0].id }).first();
    expect(charge.status).toBe('PARTIALLY_REFUNDED');
    expect(Number(charge.refunded_amount)).toBe(2500);
    const refunds = adyen.state().modifications.filter((m) => m.paymentPspReference === p.charges[0].provider_reference && m.type === 'refunds');
    expect(refunds.map((m) => m.reference).sort()).toEqual([...ids].sort());
  });

  it('fails a refund Adyen refuses in its notification, and releases the amount', async () => {
    const p = await payWith(merchant, CARDS.visa);
    adyen.behave({ fail_next: 'refund' });
    const res = await stack.http.post('/v1/refunds').set(bearer(merchant.secretKey)).send({ payment_id: p.id, amount: 5000 });
    expect((await refundSettled(res.body.data.id)).status).toBe('FAILED');
    const charge = await stack.db('sandbox.charges').where({ id: p.charges[0].id }).first();
    expect(Number(charge.pending_refund_amount)).toBe(0);
    expect(await eventsOf(p.id)).toContain('refund.failed');
  });
});

describe('notifications', () => {
  it('applies a batch\'s good items and skips one with a bad signature; refuses a batch with none good', async () => {
    const p = await payWith(merchant, CARDS.visa, undefined, { auto_capture: false });
    const item = {
      eventCode: 'CAPTURE', success: 'true', pspReference: 'FORGEDCAPTURE001', originalReference: p.charges[0].provider_reference,
      merchantReference: `${p.charges[0].id}:capture`, merchantAccountCode: 'SwitchboardECOM', amount: { currency: 'USD', value: 5000 },
      eventDate: new Date().toISOString(), paymentMethod: 'visa', operations: [], reason: '', additionalData: {},
    };
    const badOnly = await stack.http.post(webhookPath(adyenConfig.id)).send(notificationBody([signItem(item, OTHER_HMAC_KEY)]));
    expect(badOnly.status).toBe(401);
    const report = { ...item, eventCode: 'REPORT_AVAILABLE', pspReference: 'REPORT0000000001', originalReference: undefined, merchantReference: 'report' };
    const mixed = await stack.http.post(webhookPath(adyenConfig.id)).send(notificationBody([signItem(item, OTHER_HMAC_KEY), signItem(report, HMAC_KEY)]));
    expect(mixed.status).toBe(200);
    expect(mixed.text).toBe('[accepted]');
    expect(await stack.db('sandbox.provider_events').where({ processor_event_id: 'CAPTURE:FORGEDCAPTURE001:true' })).toHaveLength(0);
    expect(await stack.db('sandbox.provider_events').where({ payment_provider_config_id: adyenConfig.id, type: 'REPORT_AVAILABLE' })).toHaveLength(1);
    // The forged capture changed nothing.
    expect((await getPayment(stack, merchant, p.id)).status).toBe('AUTHORIZED');
  });
});

describe('cascading from stripe to adyen', () => {
  it('tries Adyen after Stripe\'s soft decline (processing_error), and Adyen approves', async () => {
    const p = await payWith(cascade, CARDS.processingError);
    expect(p.status).toBe('SUCCEEDED');
    expect(p.charges.map((c: any) => [c.attempt_no, c.status, c.decline_code, c.payment_provider_config_id])).toEqual([
      [1, 'FAILED', 'processing_error', cascadeStripe.id],
      [2, 'CAPTURED', null, cascadeAdyen.id],
    ]);
    expect(paymentsAtAdyen(p.charges[1].id)).toHaveLength(1);
  });

  it('stops at Stripe\'s hard decline: Adyen is never asked', async () => {
    const before = adyen.state().payments.length;
    const p = await payWith(cascade, '4000000000009987');
    expect(p.status).toBe('FAILED');
    expect(p.charges.map((c: any) => [c.status, c.decline_code])).toEqual([['DECLINED', 'lost_card']]);
    expect(adyen.state().payments.length).toBe(before);
  });
});

describe('3-D Secure at the real connectors', () => {
  const challenge = async (url: string, action: 'approve' | 'fail') => (await fetch(url, {
    method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `action=${action}`, redirect: 'manual',
  })).headers.get('location');

  it('adyen: RedirectShopper waits in REQUIRES_ACTION; the customer\'s return (redirectResult) completes it through /payments/details', async () => {
    adyen.holdNotifications(true);
    const created = await createPayment(stack, merchant, { amount: 3100 });
    const res = await confirm(stack, merchant, created.body.data.id, { payment_method: holderCard('4000002760003184'), return_url: 'http://shop.example.test/done' });
    expect(res.body.data.status, JSON.stringify(res.body)).toBe('REQUIRES_ACTION');
    const back = await challenge(res.body.data.next_action.redirect_to_url.url, 'approve');
    expect(back).toContain(`/v1/payments/${created.body.data.id}/authentication-return`);
    expect(back).toContain('redirectResult=');
    const landed = await fetch(back!, { redirect: 'manual' });
    expect(landed.status).toBe(303);
    expect(landed.headers.get('location')).toContain(`payment_intent=${created.body.data.id}`);
    const p = await settled(merchant, created.body.data.id, (x) => x.status === 'SUCCEEDED');
    expect(p.charges[0].exchanges.map((e: any) => e.operation)).toContain('authenticate');
    // The held AUTHORISATION arrives late and changes nothing.
    await adyen.releaseNotifications();
    adyen.holdNotifications(false);
    expect((await getPayment(stack, merchant, created.body.data.id)).charges).toHaveLength(1);
  });

  it('adyen: a forged return (made-up redirectResult) changes nothing; the shopper\'s real return still completes it', async () => {
    const created = await createPayment(stack, merchant, { amount: 3300 });
    const res = await confirm(stack, merchant, created.body.data.id, { payment_method: holderCard('4000002760003184') });
    const chargeId = res.body.data.next_action ? (await getPayment(stack, merchant, created.body.data.id)).charges[0].id : '';
    await fetch(`${stack.baseUrl}/v1/payments/${created.body.data.id}/authentication-return?charge=${chargeId}&redirectResult=forged`, { redirect: 'manual' });
    expect((await getPayment(stack, merchant, created.body.data.id)).status).toBe('REQUIRES_ACTION');
    adyen.holdNotifications(true);
    const back = await challenge(res.body.data.next_action.redirect_to_url.url, 'approve');
    await fetch(back!, { redirect: 'manual' });
    expect((await settled(merchant, created.body.data.id, (x) => x.status !== 'REQUIRES_ACTION')).status).toBe('SUCCEEDED');
  });

  it('adyen: a failed challenge (refusal 11) is a hard authentication_failed', async () => {
    const created = await createPayment(stack, merchant, { amount: 3100 });
    const res = await confirm(stack, merchant, created.body.data.id, { payment_method: holderCard('4000002760003184') });
    await challenge(res.body.data.next_action.redirect_to_url.url, 'fail');
    const p = await settled(merchant, created.body.data.id, (x) => x.status === 'FAILED');
    expect(p.last_error).toMatchObject({ code: 'authentication_failed' });
  });

  it('stripe: requires_action with Stripe\'s redirect; Stripe\'s webhook completes it, then the customer lands on the shop', async () => {
    stripe.setWebhook({ url: `${stack.baseUrl}${webhookPath(cascadeStripe.id)}`, secret: 'whsec_cascade' });
    const created = await createPayment(stack, cascade, { amount: 2700 });
    const res = await confirm(stack, cascade, created.body.data.id, { payment_method: holderCard('4000002760003184'), return_url: 'http://shop.example.test/done' });
    expect(res.body.data.status, JSON.stringify(res.body)).toBe('REQUIRES_ACTION');
    expect(res.body.data.next_action.redirect_to_url.url).toContain(stripe.url);
    const back = await challenge(res.body.data.next_action.redirect_to_url.url, 'approve');
    const p = await settled(cascade, created.body.data.id, (x) => x.status === 'SUCCEEDED');
    expect(p.charges.map((c: any) => [c.status, c.payment_provider_config_id])).toEqual([['CAPTURED', cascadeStripe.id]]);
    const landed = await fetch(back!, { redirect: 'manual' });
    expect(new URL(landed.headers.get('location')!).searchParams.get('redirect_status')).toBe('succeeded');
    // Stripe's client secret, in the return URL, is never kept.
    const charge = await stack.db('sandbox.charges').where({ id: p.charges[0].id }).first();
    expect(charge.return_params_sealed === null || !charge.return_params_sealed.includes('secret')).toBe(true);
    stripe.setWebhook(null);
  });
});
