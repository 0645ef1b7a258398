import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, Merchant, RunningWorker, sandboxMerchant, startStack, startWorker, TestStack } from '../support/stack';
import { card, CARDS, confirm, createPayment, getPayment, pay } from '../support/payments';
import { createConfig, registerConnector } from '../support/routing';
import { eventually } from '../support/worker-process';
import { startStripeDouble, StripeDouble } from '../doubles/stripe/server';
import { startAdyenDouble, AdyenDouble } from '../doubles/adyen/server';
import { createStripeAdapter } from '../../activities/providers/stripe';

// A processor's answer is held to the request: an approval, capture or refund answered with another
// amount (a faulty processor, an answer altered on the way — the doubles' tamper knobs) is an unknown
// outcome, reconciled by key, never a success; a status look-up takes only the object made under our key.

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const STRIPE_KEY = 'sk_test_tamper_0001';

let stripe: StripeDouble;
let adyen: AdyenDouble;
let stack: TestStack;
let worker: RunningWorker;
let atStripe: Merchant;
let atAdyen: Merchant;

const until = (m: Merchant, paymentId: string, test: (p: any) => boolean) => eventually(async () => {
  const p = await getPayment(stack, m, paymentId);
  return test(p) ? p : undefined;
}, 60_000, 200);

/** No event of the payment shows the tampered amount as authorized, captured or received (the recorded answers aside). */
function neverShows(p: any, amount: number) {
  const text = JSON.stringify(p.events, (key, value) => (key === 'exchanges' ? undefined : value));
  for (const field of ['authorized_amount', 'captured_amount', 'amount_received']) expect(text).not.toMatch(new RegExp(`"${field}":${amount}[,}]`));
}

beforeEach(() => {
  stripe.behave({ times: 0 });
  adyen.behave({ times: 0 });
});

beforeAll(async () => {
  stripe = await startStripeDouble();
  adyen = await startAdyenDouble();
  // Room for a loaded CI machine: at 1 s a slow first answer timed out, and the test saw a timeout instead of the tampered answer.
  stack = await startStack({ PROVIDER_TIMEOUT_MS: '10000' });
  worker = await startWorker(stack);
  const stripeProvider = await registerConnector(stack, 'stripe', stripe.url);
  const adyenProvider = await registerConnector(stack, 'adyen', adyen.url);
  atStripe = await sandboxMerchant(stack);
  await createConfig(stack, atStripe, stripeProvider.id, { name: 'Stripe', credentials: { secret_key: STRIPE_KEY, webhook_secret: 'whsec_tamper' } });
  atAdyen = await sandboxMerchant(stack);
  const adyenConfig = await createConfig(stack, atAdyen, adyenProvider.id, {
    name: 'Adyen', credentials: { api_key: 'AQE_test_tamper_0001', merchant_account: 'TamperECOM', hmac_key: HMAC_KEY },
  });
  adyen.setWebhook({ url: `${stack.baseUrl}/v1/provider-webhooks/${adyenConfig.id}`, hmacKey: HMAC_KEY });
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await stripe?.close();
  await adyen?.close();
});

describe('tampered answers at stripe', () => {
  it('an authorization answered with another amount is UNKNOWN, then reconciled by the search: SUCCEEDED with the amount asked', async () => {
    stripe.behave({ tamper_amount: 1 });
    const created = await createPayment(stack, atStripe, { amount: 1234 });
    const paymentId = created.body.data.id;
    const confirming = confirm(stack, atStripe, paymentId, { payment_method: card(CARDS.visa) });
    const done = await until(atStripe, paymentId, (p) => p.status === 'SUCCEEDED');
    await confirming;
    expect(done.amount_received).toBe(1234);
    const [charge] = done.charges;
    expect(charge).toMatchObject({ status: 'CAPTURED', authorized_amount: 1234, captured_amount: 1234 });
    // The tampered answer is recorded as it came, read as unknown; the look-up settled the charge.
    expect(charge.exchanges[0]).toMatchObject({ operation: 'authorize', outcome: 'unknown', error: 'answer does not match the request: amount 1 answered, 1234 asked', response: { body: { amount: 1 } } });
    expect(charge.exchanges.map((e: any) => [e.operation, e.outcome])).toContainEqual(['get_status', 'approved']);
    expect(stripe.state().creates_by_key[charge.id]).toBe(1);
    neverShows(done, 1);
  }, 90_000);

  it('a capture of 500 answered 900 is not taken: the intent itself tells 500 was captured', async () => {
    const authorized = await pay(stack, atStripe, CARDS.visa, { amount: 1000, auto_capture: false });
    expect(authorized.body.data.status).toBe('AUTHORIZED');
    const reference = authorized.body.data.charges[0].provider_reference;
    stripe.behave({ tamper_amount: 900, match: `POST /v1/payment_intents/${reference}/capture` });
    const res = await stack.http.post(`/v1/payments/${authorized.body.data.id}/capture`).set(bearer(atStripe.secretKey)).send({ amount: 500 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'SUCCEEDED', amount_received: 500 });
    const done = await getPayment(stack, atStripe, authorized.body.data.id);
    const charge = done.charges[0];
    expect(charge).toMatchObject({ status: 'CAPTURED', captured_amount: 500 });
    // The capture's answer was refused; the intent read back settled it (the exchange recorded).
    expect(charge.exchanges.filter((e: any) => e.idempotency_key === `${charge.id}:capture`).map((e: any) => [e.operation, e.outcome, e.request.method]))
      .toEqual([['get_status', 'approved', 'GET']]);
    expect(stripe.state().intents.find((pi) => pi.id === reference)).toMatchObject({ amount_received: 500 });
    neverShows(done, 900);
  }, 90_000);

  it('a refund answered with another amount is settled by the look-up among the intent\'s refunds', async () => {
    const paid = await pay(stack, atStripe, CARDS.visa, { amount: 1000 });
    stripe.behave({ tamper_amount: 999, match: 'POST /v1/refunds' });
    const res = await stack.http.post('/v1/refunds').set(bearer(atStripe.secretKey)).send({ payment_id: paid.body.data.id, amount: 300 });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const row = await eventually(async () => {
      const r = await stack.db('sandbox.refunds').where({ id: res.body.data.id }).first();
      return r && r.status !== 'PENDING' ? r : undefined;
    }, 60_000, 200);
    expect(row).toMatchObject({ status: 'SUCCEEDED' });
    expect(Number(row.amount)).toBe(300);
    const charge = (await getPayment(stack, atStripe, paid.body.data.id)).charges[0];
    const refundExchanges = charge.exchanges.filter((e: any) => e.idempotency_key === res.body.data.id);
    // The refund's answer was refused; the look-up among the intent's refunds settled it (the exchange recorded).
    expect(refundExchanges.map((e: any) => [e.operation, e.outcome])).toEqual([['get_status', 'approved']]);
    expect(stripe.state().refunds.filter((r) => r.metadata.switchboard_refund_id === res.body.data.id).map((r) => r.amount)).toEqual([300]);
  }, 90_000);
});

describe('the stripe look-up by metadata', () => {
  const at = () => createStripeAdapter({ apiBase: stripe.url, timeoutMs: 5_000 });
  const authorize = (key: string, amount: number) => at().authorize({
    credentials: { secret_key: STRIPE_KEY }, idempotencyKey: key, amount, currency: 'USD', installments: 1,
    card: { number: CARDS.visa, exp_month: 12, exp_year: 2099, cvc: '123' },
  });

  it('takes the intent made under the key, not the first one a search lists', async () => {
    const suffix = Date.now().toString(36);
    const other = await authorize(`ch_other_${suffix}`, 700);
    const ours = await authorize(`ch_ours_${suffix}`, 1500);
    expect([other.outcome.kind, ours.outcome.kind]).toEqual(['approved', 'approved']);
    stripe.behave({ match: 'GET /v1/payment_intents/search', search_lists_others: true });
    const status = await at().getStatus({ credentials: { secret_key: STRIPE_KEY }, idempotencyKey: `ch_ours_${suffix}` });
    expect(status).toMatchObject({ lookup: 'found', operation: 'authorize', outcome: { kind: 'approved', authorizedAmount: 1500 } });
    expect(status.lookup === 'found' && status.outcome.kind === 'approved' && status.outcome.providerReference)
      .toBe(ours.outcome.kind === 'approved' && ours.outcome.providerReference);
  });

  it('a search listing only other intents has found nothing', async () => {
    stripe.behave({ match: 'GET /v1/payment_intents/search', search_lists_others: true });
    const status = await at().getStatus({ credentials: { secret_key: STRIPE_KEY }, idempotencyKey: `ch_never_made_${Date.now().toString(36)}` });
    expect(status.lookup).toBe('not_found');
  });
});

describe('tampered answers at adyen', () => {
  it('an Authorised answer with another amount is UNKNOWN, then settled by the AUTHORISATION notification with the amount asked', async () => {
    adyen.behave({ tamper_amount: 1, match: 'POST /v71/payments' });
    const created = await createPayment(stack, atAdyen, { amount: 2600, auto_capture: false });
    const paymentId = created.body.data.id;
    const confirming = confirm(stack, atAdyen, paymentId, { payment_method: card(CARDS.visa) });
    const done = await until(atAdyen, paymentId, (p) => p.status === 'AUTHORIZED');
    await confirming;
    const [charge] = done.charges;
    expect(charge).toMatchObject({ status: 'AUTHORIZED', authorized_amount: 2600 });
    expect(charge.exchanges[0]).toMatchObject({
      operation: 'authorize', outcome: 'unknown', error: 'answer does not match the request: amount 1 answered, 2600 asked', response: { body: { amount: { value: 1 } } },
    });
    expect(charge.exchanges.some((e: any) => e.request.method === 'NOTIFICATION' && e.outcome === 'approved')).toBe(true);
    expect(adyen.state().creates_by_key[charge.id]).toBe(1);
    neverShows(done, 1);
  }, 90_000);

  it('a capture received for another amount is not taken: asked again under its key, the true answer, then its notification', async () => {
    const created = await createPayment(stack, atAdyen, { amount: 5000, auto_capture: false });
    const authorized = await confirm(stack, atAdyen, created.body.data.id, { payment_method: card(CARDS.visa) });
    expect(authorized.body.data.status).toBe('AUTHORIZED');
    adyen.behave({ tamper_amount: 4000, match: `POST /v71/payments/${authorized.body.data.charges[0].provider_reference}/captures` });
    const res = await stack.http.post(`/v1/payments/${created.body.data.id}/capture`).set(bearer(atAdyen.secretKey)).send({ amount: 3000 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const done = await until(atAdyen, created.body.data.id, (p) => p.status === 'SUCCEEDED');
    expect(done).toMatchObject({ amount_received: 3000 });
    expect(done.charges[0]).toMatchObject({ status: 'CAPTURED', captured_amount: 3000 });
    // The tampered "received" was not taken: the capture was asked again under its key, and Adyen's stored (true) answer replayed.
    const chargeId = done.charges[0].id;
    expect(adyen.state().requests.filter((r) => r.idempotency_key === `${chargeId}:capture`).map((r) => r.replayed ?? false)).toEqual([false, true]);
    expect(adyen.state().modifications.filter((m) => m.reference === `${chargeId}:capture`).map((m) => m.amount.value)).toEqual([3000]);
    neverShows(done, 4000);
  }, 90_000);
});
