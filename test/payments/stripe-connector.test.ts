import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createMerchant, Merchant, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, card, confirm, createPayment, getPayment, pay, startSimulator, TestSimulator } from '../support/payments';
import { addFees, createConfig, createProvider, systemToken } from '../support/routing';
import { eventually } from '../support/worker-process';
import { startStripeDouble, StripeDouble } from '../doubles/stripe/server';
import { paymentWorkflowId } from '../../contracts/payments';
import { flatten } from '../support/history';

// The stripe connector end to end: the real API, Postgres and Temporal, the adapter speaking to the
// local double of Stripe's API (test/doubles/stripe) at the HTTP boundary. A sandbox account, since a
// provider's api_base may be http:// on loopback only in sandbox.

const STRIPE_CARDS = { lost: '4000000000009987', stepUp: '4000002500003155' } as const;

let sim: TestSimulator;
let double: StripeDouble;
let stack: TestStack;
let worker: RunningWorker;
let merchant: Merchant;
let stripeConfig: any;
let sandboxConfig: any;


function registerStripe(config: Record<string, unknown>, sandbox: boolean) {
  return stack.http.post(`/v1/payment-providers${sandbox ? '?sandbox_mode=true' : ''}`).set(bearer(systemToken()))
    .send({ name: 'Stripe', identifier: 'stripe', config });
}

const intentsOf = (chargeId: string) => double.state().intents.filter((pi) => pi.metadata.switchboard_charge_id === chargeId);

beforeAll(async () => {
  sim = await startSimulator();
  double = await startStripeDouble();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '1000' });
  worker = await startWorker(stack);
  const production = await createMerchant(stack);
  merchant = await createMerchant(stack, { sandboxOf: production });
  const registered = await registerStripe({ api_base: double.url }, true);
  expect(registered.status, JSON.stringify(registered.body)).toBe(201);
  const stripe = registered.body.data;
  const sandbox = await createProvider(stack, { sandbox: true });
  stripeConfig = await createConfig(stack, merchant, stripe.id, { name: 'Stripe', credentials: { secret_key: 'sk_test_switchboard_0001', webhook_secret: 'whsec_test_0001' } });
  sandboxConfig = await createConfig(stack, merchant, sandbox.id, { name: 'Sandbox', credentials: { api_key: 'sim_sandbox_key_0001' } });
  // Stripe ranks first on cost; the sandbox processor is the next candidate.
  await addFees(stack, merchant, stripeConfig, stripe, 2.9);
  await addFees(stack, merchant, sandboxConfig, sandbox, 3.5);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await double?.close();
  await sim?.close();
});

describe('registering and connecting', () => {
  it('requires https api_base in live, and http only on loopback in sandbox (400 at the field path)', async () => {
    for (const [base, sandbox] of [['http://127.0.0.1:9', false], ['http://stripe.example.com', true], ['https://api.stripe.com/v1', false]] as const) {
      const res = await registerStripe({ api_base: base }, sandbox);
      expect(res.status, base).toBe(400);
      expect(res.body.error.details.fields.map((x: any) => x.path)).toEqual(['body/config/api_base']);
    }
    expect((await registerStripe({ api_base: 'https://api.stripe.com' }, false)).status).toBe(201);
    expect((await registerStripe({}, false)).status).toBe(201);
  });

  it('validates credentials against the stripe schema', async () => {
    const res = await stack.http.post(`/v1/payment-provider-configs?account_id=${merchant.account.id}`).set(bearer(merchant.token))
      .send({ payment_provider_id: stripeConfig.payment_provider_id, name: 'No webhook secret', credentials: { secret_key: 'sk_test_abc' } });
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields.map((x: any) => x.path)).toContain('body/credentials/webhook_secret');
    const bad = await stack.http.post(`/v1/payment-provider-configs?account_id=${merchant.account.id}`).set(bearer(merchant.token))
      .send({ payment_provider_id: stripeConfig.payment_provider_id, name: 'Publishable', credentials: { secret_key: 'pk_test_abc', webhook_secret: 'whsec_1' } });
    expect(bad.body.error.details.fields.map((x: any) => x.path)).toContain('body/credentials/secret_key');
    expect(JSON.stringify(stripeConfig.credentials)).not.toContain('sk_test_switchboard_0001');
  });

  it('refuses a live key in a sandbox account, on create and on update (it would charge real cards for test payments)', async () => {
    expect(merchant.account.environment).toBe('sandbox');
    const live = { secret_key: 'sk_live_51Abc', webhook_secret: 'whsec_1' };
    const expectRefused = (res: { status: number; body: any }) => {
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error.details.fields).toEqual([{ path: 'body/credentials/secret_key', message: 'must be a test key (sk_test_…) in a sandbox account: a live key would move real money' }]);
    };
    expectRefused(await stack.http.post(`/v1/payment-provider-configs?account_id=${merchant.account.id}`).set(bearer(merchant.token))
      .send({ payment_provider_id: stripeConfig.payment_provider_id, name: 'Live key', credentials: live }));
    expectRefused(await stack.http.put(`/v1/payment-provider-configs/${stripeConfig.id}`).set(bearer(merchant.secretKey)).send({ credentials: live }));
    const kept = await stack.db('sandbox.payment_provider_configs').where({ id: stripeConfig.id }).first();
    expect(stack.deps.vault.decryptJson<{ secret_key: string }>(kept.credentials_encrypted).secret_key).toBe('sk_test_switchboard_0001');
  });
});

describe('payments through stripe', () => {
  it('approves with automatic capture: SUCCEEDED, one intent, no separate capture call', async () => {
    const res = await pay(stack, merchant, CARDS.visa, { amount: 2500 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.status).toBe('SUCCEEDED');
    const [charge] = res.body.data.charges;
    expect(charge).toMatchObject({ status: 'CAPTURED', authorized_amount: 2500, captured_amount: 2500, payment_provider_config_id: stripeConfig.id });
    expect(charge.provider_reference ?? charge.exchanges[0].response.body.id).toMatch(/^pi_/);
    expect(charge.exchanges.map((e: any) => e.operation)).toEqual(['authorize']);
    expect(JSON.stringify(res.body)).not.toContain(CARDS.visa);
    const intents = intentsOf(charge.id);
    expect(intents).toHaveLength(1);
    expect(intents[0]).toMatchObject({ status: 'succeeded', capture_method: 'automatic', amount: 2500, currency: 'usd' });
    expect(double.state().creates_by_key[charge.id]).toBe(1);
    // Neither the Stripe secret key nor the card is in the payment's Temporal history.
    const client = await stack.deps.temporal();
    const history = flatten(await client.workflow.getHandle(paymentWorkflowId(res.body.data.id)).fetchHistory()).join('\n');
    expect(history).toContain(charge.id);
    expect(history).not.toContain('sk_test_switchboard_0001');
    expect(history).not.toContain('whsec_test_0001');
    expect(history).not.toContain(CARDS.visa);
  });

  it('authorizes with manual capture, then captures part', async () => {
    const res = await pay(stack, merchant, CARDS.visa, { amount: 5000, auto_capture: false });
    expect(res.body.data.status).toBe('AUTHORIZED');
    const chargeId = res.body.data.charges[0].id;
    expect(intentsOf(chargeId)[0]).toMatchObject({ status: 'requires_capture', capture_method: 'manual', amount_capturable: 5000 });
    const part = await stack.http.post(`/v1/payments/${res.body.data.id}/capture`).set(bearer(merchant.secretKey)).send({ amount: 3000 });
    expect(part.status, JSON.stringify(part.body)).toBe(200);
    expect(part.body.data).toMatchObject({ status: 'SUCCEEDED', amount_received: 3000 });
    expect(part.body.data.charges[0]).toMatchObject({ status: 'CAPTURED', captured_amount: 3000, authorized_amount: 5000 });
    expect(intentsOf(chargeId)[0]).toMatchObject({ status: 'succeeded', amount_received: 3000 });
    expect(double.state().requests.filter((r) => r.idempotency_key === `${chargeId}:capture`)).toHaveLength(1);
  });

  it('voids an authorization when the payment is canceled', async () => {
    const res = await pay(stack, merchant, CARDS.visa, { auto_capture: false });
    const canceled = await stack.http.post(`/v1/payments/${res.body.data.id}/cancel`).set(bearer(merchant.secretKey)).send({});
    expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
    expect(canceled.body.data.status).toBe('CANCELED');
    expect(canceled.body.data.charges[0].status).toBe('VOIDED');
    expect(intentsOf(res.body.data.charges[0].id)[0].status).toBe('canceled');
  });

  it('answers a capture Stripe refuses at once with 402 capture_declined, recorded; the payment stays AUTHORIZED', async () => {
    const res = await pay(stack, merchant, CARDS.visa, { amount: 1500, auto_capture: false });
    const charge = res.body.data.charges[0];
    // The intent canceled at Stripe behind our back (its dashboard, say): Stripe refuses to capture it.
    const canceled = await fetch(`${double.url}/v1/payment_intents/${charge.provider_reference}/cancel`, {
      method: 'POST', headers: { Authorization: 'Bearer sk_test_switchboard_0001', 'Content-Type': 'application/x-www-form-urlencoded' }, body: '',
    });
    expect(canceled.status, await canceled.clone().text()).toBe(200);
    const capture = await stack.http.post(`/v1/payments/${res.body.data.id}/capture`).set(bearer(merchant.secretKey)).send({});
    expect(capture.status, JSON.stringify(capture.body)).toBe(402);
    expect(capture.body.error.details).toMatchObject({ reason: 'capture_declined', decline_code: expect.any(String) });
    const after = await getPayment(stack, merchant, res.body.data.id);
    expect(after).toMatchObject({ status: 'AUTHORIZED', last_error: { code: 'capture_failed', charge_id: charge.id } });
    expect(after.events.map((e: { event: string }) => e.event)).toContain('charge.capture_failed');
    expect(after.charges[0].exchanges.at(-1)).toMatchObject({ operation: 'capture' });
  });

  it('refunds in several parts, each once at Stripe under the refund id', async () => {
    const paid = await pay(stack, merchant, CARDS.visa, { amount: 1000 });
    const refundIds: string[] = [];
    for (const amount of [300, 200]) {
      const res = await stack.http.post('/v1/refunds').set(bearer(merchant.secretKey)).send({ payment_id: paid.body.data.id, amount });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      refundIds.push(res.body.data.id);
    }
    for (const id of refundIds) {
      const row = await eventually(async () => {
        const r = await stack.db('sandbox.refunds').where({ id }).first();
        return r && r.status !== 'PENDING' ? r : undefined;
      }, 30_000, 200);
      expect(row.status).toBe('SUCCEEDED');
    }
    const intent = intentsOf(paid.body.data.charges[0].id)[0];
    const refunds = double.state().refunds.filter((r) => r.payment_intent === intent.id);
    expect(refunds.map((r) => r.amount).sort()).toEqual([200, 300]);
    expect(refunds.map((r) => r.metadata.switchboard_refund_id).sort()).toEqual([...refundIds].sort());
  });

  it('stops at a hard decline (lost_card): one charge, FAILED, the sandbox provider never tried', async () => {
    const res = await pay(stack, merchant, STRIPE_CARDS.lost);
    expect(res.body.data.status).toBe('FAILED');
    expect(res.body.data.charges).toHaveLength(1);
    expect(res.body.data.charges[0]).toMatchObject({ status: 'DECLINED', decline_code: 'lost_card', payment_provider_config_id: stripeConfig.id });
    expect(res.body.data.charges[0].exchanges[0]).toMatchObject({ response: { status: 402 }, provider_code: 'lost_card' });
  });

  it('maps insufficient_funds to a hard decline, as the sandbox does', async () => {
    const res = await pay(stack, merchant, CARDS.insufficientFunds);
    expect(res.body.data.status).toBe('FAILED');
    expect(res.body.data.charges.map((c: any) => [c.status, c.decline_code])).toEqual([['DECLINED', 'insufficient_funds']]);
  });

  it('steps up at Stripe: authentication_required is retried there with request_three_d_secure, and waits for the customer', async () => {
    const res = await pay(stack, merchant, STRIPE_CARDS.stepUp);
    expect(res.body.data.status).toBe('REQUIRES_ACTION');
    expect(res.body.data.next_action.redirect_to_url.url).toContain(double.url);
    const charges = (await getPayment(stack, merchant, res.body.data.id)).charges;
    expect(charges.map((c: any) => [c.attempt_no, c.status, c.decline_code, c.payment_provider_config_id])).toEqual([
      [1, 'FAILED', 'authentication_required', stripeConfig.id],
      [2, 'REQUIRES_ACTION', null, stripeConfig.id],
    ]);
    await stack.http.post(`/v1/payments/${res.body.data.id}/cancel`).set(bearer(merchant.secretKey)).send({});
  });

  it('cascades on a soft decline from Stripe to the sandbox provider', async () => {
    const processing = await pay(stack, merchant, CARDS.processingError);
    expect(processing.body.data.charges.map((c: any) => [c.status, c.decline_code, c.payment_provider_config_id])).toEqual([
      ['FAILED', 'processing_error', stripeConfig.id],
      ['FAILED', 'processing_error', sandboxConfig.id],
    ]);
  });
});

describe('unknown outcomes at stripe', () => {
  async function reconciled(behaviour: Record<string, unknown>) {
    double.behave(behaviour);
    const created = await createPayment(stack, merchant, { amount: 1234 });
    const paymentId = created.body.data.id;
    const confirming = confirm(stack, merchant, paymentId, { payment_method: card(CARDS.visa) });
    const done = await eventually(async () => {
      const p = await getPayment(stack, merchant, paymentId);
      return p.status === 'SUCCEEDED' ? p : undefined;
    }, 60_000, 250);
    await confirming;
    expect(done.charges).toHaveLength(1);
    const [charge] = done.charges;
    expect(charge).toMatchObject({ status: 'CAPTURED', captured_amount: 1234, payment_provider_config_id: stripeConfig.id });
    const operations = charge.exchanges.map((e: any) => e.operation);
    expect(operations).toContain('get_status');
    // One intent at Stripe: the look-up found it; nothing was created twice, nothing sent to the sandbox.
    expect(double.state().creates_by_key[charge.id]).toBe(1);
    expect(intentsOf(charge.id)).toHaveLength(1);
    return charge;
  }

  it('a timeout after the request was sent → UNKNOWN → found by the metadata search', async () => {
    const charge = await reconciled({ latency_ms: 2500 });
    expect(charge.exchanges.find((e: any) => e.operation === 'get_status')).toMatchObject({ request: { path: '/v1/payment_intents/search' }, outcome: 'approved' });
  }, 90_000);

  it('a 5xx (stored under the idempotency key) → UNKNOWN → found by the metadata search', async () => {
    const charge = await reconciled({ fail_with_500: true });
    expect(charge.exchanges[0]).toMatchObject({ operation: 'authorize', response: { status: 500 }, outcome: 'unknown' });
  }, 90_000);
});
