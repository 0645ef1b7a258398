import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, Merchant, RunningWorker, sandboxMerchant, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, card, confirm, createPayment, getPayment, pay } from '../support/payments';
import { createConfig, registerConnector } from '../support/routing';
import { eventually } from '../support/worker-process';
import { startAdyenDouble, AdyenDouble } from '../doubles/adyen/server';
import { startStripeDouble, StripeDouble } from '../doubles/stripe/server';
import { paymentWorkflowId } from '../../contracts/payments';
import { PROVIDER_EVENT_SIGNAL, type ProviderEventSignal } from '../../contracts/temporal';

// A capture made with the authorization that the processor reports failed afterwards (Adyen's CAPTURE_FAILED:
// the card scheme rejected it). The real API, Postgres and Temporal; the Adyen double's signed notifications
// through POST /v1/provider-webhooks/{config}.

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';

let adyen: AdyenDouble;
let stripe: StripeDouble;
let stack: TestStack;
let worker: RunningWorker;
let merchant: Merchant;
let stripeMerchant: Merchant;

const eventsOf = (paymentId: string, type: string) => stack.db('sandbox.events').where({ payment_id: paymentId, event: type }).pluck('id');
const chargeRow = (id: string) => stack.db('sandbox.charges').where({ id }).first();

async function workflowStatus(paymentId: string): Promise<string> {
  const client = await stack.deps.temporal();
  return (await client.workflow.getHandle(paymentWorkflowId(paymentId)).describe()).status.name;
}

const settled = (m: Merchant, paymentId: string, test: (p: any) => boolean) => eventually(async () => {
  const p = await getPayment(stack, m, paymentId);
  return test(p) ? p : undefined;
}, 30_000, 100);

/** An Adyen payment captured at once (SUCCEEDED with the authorization); its charge and Adyen's reference. */
async function capturedAtOnce(amount: number) {
  const created = await createPayment(stack, merchant, { amount });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const paymentId = created.body.data.id as string;
  const res = await confirm(stack, merchant, paymentId, { payment_method: card(CARDS.visa) });
  expect(res.body.data.status, JSON.stringify(res.body)).toBe('SUCCEEDED');
  const charge = (await getPayment(stack, merchant, paymentId)).charges[0];
  return { paymentId, chargeId: charge.id as string, reference: charge.provider_reference as string };
}

async function capture(paymentId: string) {
  const res = await stack.http.post(`/v1/payments/${paymentId}/capture`).set(bearer(merchant.secretKey)).send({});
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

beforeEach(() => {
  adyen.behave({ times: 0 });
  adyen.holdNotifications(false);
});

beforeAll(async () => {
  adyen = await startAdyenDouble();
  stripe = await startStripeDouble();
  stack = await startStack({ PROVIDER_TIMEOUT_MS: '10000' });
  worker = await startWorker(stack);
  merchant = await sandboxMerchant(stack);
  const adyenProvider = await registerConnector(stack, 'adyen', adyen.url);
  const config = await createConfig(stack, merchant, adyenProvider.id, {
    name: 'Adyen', credentials: { api_key: 'AQE_test_capture_failure_0001', merchant_account: 'CaptureFailureECOM', hmac_key: HMAC_KEY },
  });
  adyen.setWebhook({ url: `${stack.baseUrl}/v1/provider-webhooks/${config.id}`, hmacKey: HMAC_KEY });
  stripeMerchant = await sandboxMerchant(stack);
  const stripeProvider = await registerConnector(stack, 'stripe', stripe.url);
  await createConfig(stack, stripeMerchant, stripeProvider.id, { name: 'Stripe', credentials: { secret_key: 'sk_test_capture_failure_0001', webhook_secret: 'whsec_capture_failure' } });
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await adyen?.close();
  await stripe?.close();
});

describe('an Adyen capture made with the authorization that fails afterwards (CAPTURE_FAILED)', () => {
  it('takes the payment back to AUTHORIZED once, however the notifications come; it is then captured again under the next key', async () => {
    // Every notification of the payment held: AUTHORISATION, CAPTURE, then CAPTURE_FAILED, sent reversed and twice.
    adyen.holdNotifications(true);
    const { paymentId, chargeId, reference } = await capturedAtOnce(4200);
    expect(await workflowStatus(paymentId)).toBe('RUNNING');
    adyen.failCapture(reference);
    await adyen.releaseNotifications({ reverse: true, duplicate: true });

    const reverted = await settled(merchant, paymentId, (p) => p.status === 'AUTHORIZED');
    expect(reverted).toMatchObject({ amount_received: 0, amount_capturable: 4200, last_error: { code: 'capture_failed', charge_id: chargeId } });
    const charge = await chargeRow(chargeId);
    expect(charge).toMatchObject({ status: 'AUTHORIZED' });
    expect(Number(charge.captured_amount)).toBe(0);
    expect(await eventsOf(paymentId, 'charge.capture_failed')).toHaveLength(1);
    // The CAPTURE success that came after it changed nothing.
    await adyen.notificationsIdle();
    expect((await getPayment(stack, merchant, paymentId)).status).toBe('AUTHORIZED');

    adyen.holdNotifications(false);
    expect(await capture(paymentId)).toMatchObject({ status: 'AUTHORIZED', pending_operation: { type: 'capture', charge_id: chargeId } });
    const captured = await settled(merchant, paymentId, (p) => p.status === 'SUCCEEDED');
    expect(captured).toMatchObject({ amount_received: 4200, last_error: null });
    expect(adyen.state().requests.filter((r) => r.idempotency_key?.startsWith(`${chargeId}:capture`)).map((r) => r.idempotency_key))
      .toEqual([`${chargeId}:capture:2`]);
    expect(await eventsOf(paymentId, 'charge.capture_failed')).toHaveLength(1);
    await eventually(async () => (await workflowStatus(paymentId)) === 'COMPLETED' || undefined, 10_000, 100);
  });

  it('flags the payment needs_attention instead when its charge was refunded meanwhile', async () => {
    const { paymentId, chargeId, reference } = await capturedAtOnce(3000);
    const refunded = await stack.http.post('/v1/refunds').set(bearer(merchant.secretKey)).send({ payment_id: paymentId, amount: 1000 });
    expect(refunded.status, JSON.stringify(refunded.body)).toBe(201);
    await settled(merchant, paymentId, (p) => p.status === 'PARTIALLY_REFUNDED');
    await adyen.notificationsIdle();

    adyen.failCapture(reference);
    const flagged = await settled(merchant, paymentId, (p) => p.needs_attention === true);
    expect(flagged).toMatchObject({ status: 'PARTIALLY_REFUNDED', needs_attention_reason: 'capture_failed_after_refund', amount_received: 3000 });
    expect((await chargeRow(chargeId)).status).toBe('PARTIALLY_REFUNDED');
    expect(await eventsOf(paymentId, 'charge.capture_failed')).toHaveLength(0);
    await eventually(async () => (await workflowStatus(paymentId)) === 'COMPLETED' || undefined, 10_000, 100);
  });

  it('changes nothing on a forged providerEvent signal: the payment stays SUCCEEDED and listening', async () => {
    const { paymentId, chargeId } = await capturedAtOnce(1500);
    await adyen.notificationsIdle();
    const forged: ProviderEventSignal = {
      eventId: 'pev_forged_capture_failure', type: 'CAPTURE_FAILED', operation: 'capture', chargeId,
      outcome: { kind: 'hard_decline', declineCode: 'capture_failed' },
    };
    const client = await stack.deps.temporal();
    await client.workflow.getHandle(paymentWorkflowId(paymentId)).signal(PROVIDER_EVENT_SIGNAL, forged);
    // Looked at (the activity ran), and ignored.
    await eventually(async () => {
      const history = await client.workflow.getHandle(paymentWorkflowId(paymentId)).fetchHistory();
      return (history.events ?? []).some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'settleCaptureFailure') || undefined;
    }, 10_000, 100);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await getPayment(stack, merchant, paymentId)).toMatchObject({ status: 'SUCCEEDED', amount_received: 1500, last_error: null });
    expect(await eventsOf(paymentId, 'charge.capture_failed')).toHaveLength(0);
    expect(await workflowStatus(paymentId)).toBe('RUNNING');
  });
});

describe('a processor whose capture answer is final (Stripe)', () => {
  it('ends the payment workflow as soon as the payment SUCCEEDED', async () => {
    const paid = await pay(stack, stripeMerchant, CARDS.visa, { amount: 2500 });
    expect(paid.body.data.status, JSON.stringify(paid.body)).toBe('SUCCEEDED');
    await eventually(async () => (await workflowStatus(paid.body.data.id)) === 'COMPLETED' || undefined, 5_000, 100);
  });
});
