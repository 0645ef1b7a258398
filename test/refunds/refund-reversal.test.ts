import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bearer, Merchant, RunningWorker, sandboxMerchant, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, card, confirm, createPayment, getPayment, pay } from '../support/payments';
import { createConfig, registerConnector } from '../support/routing';
import { eventually } from '../support/worker-process';
import { signStripePayload, startStripeDouble, StripeDouble } from '../doubles/stripe/server';
import { notificationBody, signItem, startAdyenDouble, AdyenDouble } from '../doubles/adyen/server';
import { refundWorkflowId } from '../../contracts/refunds';

// A refund the processor reported succeeded, then failed (Stripe's refund.failed for a succeeded refund:
// the card was closed meanwhile; Adyen's REFUNDED_REVERSED). The real API, Postgres and Temporal; the
// doubles' signed notifications through POST /v1/provider-webhooks/{config}.

const SECRET = 'whsec_refund_reversal_0001';
const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';

let stripe: StripeDouble;
let adyen: AdyenDouble;
let stack: TestStack;
let worker: RunningWorker;
let merchant: Merchant;
let adyenMerchant: Merchant;
let stripeConfig: any;
let adyenConfig: any;

const webhookPath = (configId: string) => `/v1/provider-webhooks/${configId}`;
const refundRow = (id: string) => stack.db('sandbox.refunds').where({ id }).first();
const chargeRow = (id: string) => stack.db('sandbox.charges').where({ id }).first();
const eventsOf = (paymentId: string, type: string) => stack.db('sandbox.events').where({ payment_id: paymentId, event: type }).pluck('refund_id');
const stripeRefundOf = (refundId: string) => stripe.state().refunds.find((r) => r.metadata.switchboard_refund_id === refundId);

async function refund(m: Merchant, paymentId: string, amount: number) {
  const res = await stack.http.post('/v1/refunds').set(bearer(m.secretKey)).send({ payment_id: paymentId, amount });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.id as string;
}

const settledAs = (refundId: string, status: string) => eventually(async () => {
  const row = await refundRow(refundId);
  return row?.status === status ? row : undefined;
}, 30_000, 100);

async function workflowStatus(refundId: string): Promise<string> {
  const client = await stack.deps.temporal();
  return (await client.workflow.getHandle(refundWorkflowId(refundId)).describe()).status.name;
}

/** A Stripe payment of `amount`, refunded `refunded` (settled SUCCEEDED at once), its workflow listening. */
async function succeededStripeRefund(amount: number, refunded: number) {
  const paid = await pay(stack, merchant, CARDS.visa, { amount });
  expect(paid.body.data.status).toBe('SUCCEEDED');
  const paymentId = paid.body.data.id;
  const chargeId = paid.body.data.charges[0].id;
  const refundId = await refund(merchant, paymentId, refunded);
  await settledAs(refundId, 'SUCCEEDED');
  await stripe.webhooksIdle();
  return { paymentId, chargeId, refundId, reference: stripeRefundOf(refundId)!.id as string };
}

beforeEach(() => {
  stripe.holdWebhooks(false);
  stripe.behave({ times: 0 });
  adyen.holdNotifications(false);
  adyen.behave({ times: 0 });
});

beforeAll(async () => {
  stripe = await startStripeDouble();
  adyen = await startAdyenDouble();
  stack = await startStack({ PROVIDER_TIMEOUT_MS: '1000' });
  worker = await startWorker(stack);
  merchant = await sandboxMerchant(stack);
  const stripeProvider = await registerConnector(stack, 'stripe', stripe.url);
  stripeConfig = await createConfig(stack, merchant, stripeProvider.id, { name: 'Stripe', credentials: { secret_key: 'sk_test_reversal_0001', webhook_secret: SECRET } });
  stripe.setWebhook({ url: `${stack.baseUrl}${webhookPath(stripeConfig.id)}`, secret: SECRET });
  adyenMerchant = await sandboxMerchant(stack);
  const adyenProvider = await registerConnector(stack, 'adyen', adyen.url);
  adyenConfig = await createConfig(stack, adyenMerchant, adyenProvider.id, {
    name: 'Adyen', credentials: { api_key: 'AQE_test_reversal_0001', merchant_account: 'ReversalECOM', hmac_key: HMAC_KEY },
  });
  adyen.setWebhook({ url: `${stack.baseUrl}${webhookPath(adyenConfig.id)}`, hmacKey: HMAC_KEY });
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await stripe?.close();
  await adyen?.close();
});

describe('a Stripe refund that fails after it succeeded', () => {
  it('is reversed once, the notification sent twice: FAILED, the amount refundable again, one refund.failed', async () => {
    const { paymentId, chargeId, refundId, reference } = await succeededStripeRefund(2000, 2000);
    expect(await getPayment(stack, merchant, paymentId)).toMatchObject({ status: 'REFUNDED', amount_refunded: 2000 });
    // Listening for the processor changing its mind.
    expect(await workflowStatus(refundId)).toBe('RUNNING');

    stripe.holdWebhooks(true);
    stripe.settleRefund(reference, 'failed');
    await stripe.releaseWebhooks({ duplicate: true });
    const failed = await settledAs(refundId, 'FAILED');
    expect(failed.failure_reason).toBe('refund_failed');
    await eventually(async () => (await workflowStatus(refundId)) === 'COMPLETED' || undefined, 10_000, 100);

    const charge = await chargeRow(chargeId);
    expect(charge).toMatchObject({ status: 'CAPTURED' });
    expect(Number(charge.refunded_amount)).toBe(0);
    expect(Number(charge.pending_refund_amount)).toBe(0);
    expect(await getPayment(stack, merchant, paymentId)).toMatchObject({ status: 'SUCCEEDED', amount_refunded: 0 });
    expect(await eventsOf(paymentId, 'refund.failed')).toEqual([refundId]);
    expect(await eventsOf(paymentId, 'refund.succeeded')).toEqual([refundId]);

    // The whole amount can be refunded again, and is.
    const again = await refund(merchant, paymentId, 2000);
    await settledAs(again, 'SUCCEEDED');
    expect(await getPayment(stack, merchant, paymentId)).toMatchObject({ status: 'REFUNDED', amount_refunded: 2000 });
  });

  it('takes back only that refund\'s amount: the charge stays PARTIALLY_REFUNDED by the others', async () => {
    const { paymentId, chargeId, refundId, reference } = await succeededStripeRefund(3000, 1000);
    const other = await refund(merchant, paymentId, 500);
    await settledAs(other, 'SUCCEEDED');
    stripe.settleRefund(reference, 'failed');
    await settledAs(refundId, 'FAILED');
    const charge = await chargeRow(chargeId);
    expect(charge).toMatchObject({ status: 'PARTIALLY_REFUNDED' });
    expect(Number(charge.refunded_amount)).toBe(500);
    expect(await getPayment(stack, merchant, paymentId)).toMatchObject({ status: 'PARTIALLY_REFUNDED', amount_refunded: 500 });
    expect((await refundRow(other)).status).toBe('SUCCEEDED');
  });

  it('is reversed by charge.refund.updated (the refund failed) too; a forged one, unsigned, changes nothing', async () => {
    const { paymentId, chargeId, refundId, reference } = await succeededStripeRefund(1500, 1500);
    const failedRefund = { ...stripeRefundOf(refundId), id: reference, status: 'failed', failure_reason: 'expired_or_canceled_card' };
    const event = {
      id: `evt_${Date.now()}reversal`, object: 'event', api_version: '2025-02-24.acacia', created: Math.floor(Date.now() / 1000),
      data: { object: failedRefund, previous_attributes: { status: 'succeeded' } }, livemode: false, pending_webhooks: 1,
      request: { id: null, idempotency_key: null }, type: 'charge.refund.updated',
    };
    const raw = JSON.stringify(event);
    const forged = await stack.http.post(webhookPath(stripeConfig.id)).set('Content-Type', 'application/json').send(raw);
    expect(forged.status).toBe(401);
    expect((await refundRow(refundId)).status).toBe('SUCCEEDED');

    const signed = await stack.http.post(webhookPath(stripeConfig.id)).set('Content-Type', 'application/json')
      .set('Stripe-Signature', signStripePayload(raw, SECRET)).send(raw);
    expect(signed.status).toBe(200);
    await settledAs(refundId, 'FAILED');
    expect(Number((await chargeRow(chargeId)).refunded_amount)).toBe(0);
    expect(await eventsOf(paymentId, 'refund.failed')).toEqual([refundId]);
  });

  it('ends FAILED when the failure overtakes the success (events reversed) of a refund Stripe answered pending', async () => {
    const paid = await pay(stack, merchant, CARDS.visa, { amount: 1200 });
    stripe.behave({ refund_status: 'pending' });
    const refundId = await refund(merchant, paid.body.data.id, 1200);
    const reference = await eventually(async () => stripeRefundOf(refundId)?.id as string | undefined, 10_000, 50);
    await stripe.webhooksIdle();
    stripe.holdWebhooks(true);
    stripe.settleRefund(reference, 'succeeded');
    stripe.settleRefund(reference, 'failed');
    await stripe.releaseWebhooks({ reverse: true });
    await settledAs(refundId, 'FAILED');
    await stripe.webhooksIdle();
    // The success that arrived last changed nothing.
    const charge = await chargeRow(paid.body.data.charges[0].id);
    expect(charge).toMatchObject({ status: 'CAPTURED' });
    expect(Number(charge.refunded_amount)).toBe(0);
    expect(Number(charge.pending_refund_amount)).toBe(0);
    expect(await eventsOf(paid.body.data.id, 'refund.failed')).toEqual([refundId]);
    expect(await eventsOf(paid.body.data.id, 'refund.succeeded')).toEqual([]);
  });
});

describe('an Adyen refund reversed after it succeeded (REFUNDED_REVERSED)', () => {
  it('is reversed once, the notification sent twice', async () => {
    const created = await createPayment(stack, adyenMerchant, { amount: 4000 });
    const confirmed = await confirm(stack, adyenMerchant, created.body.data.id, { payment_method: card(CARDS.visa) });
    expect(confirmed.body.data.status, JSON.stringify(confirmed.body)).toBe('SUCCEEDED');
    const paymentId = created.body.data.id;
    const refundId = await refund(adyenMerchant, paymentId, 4000);
    await settledAs(refundId, 'SUCCEEDED');
    await adyen.notificationsIdle();
    const modification = adyen.state().modifications.find((m: any) => m.reference === refundId)!;
    const charge = (await getPayment(stack, adyenMerchant, paymentId)).charges[0];
    const item = signItem({
      eventCode: 'REFUNDED_REVERSED', success: 'true', pspReference: modification.pspReference, originalReference: charge.provider_reference,
      merchantReference: refundId, merchantAccountCode: 'ReversalECOM', amount: { value: 4000, currency: 'USD' },
      eventDate: new Date().toISOString(), reason: 'Refund returned by the issuer', paymentMethod: 'visa',
    }, HMAC_KEY);
    for (let i = 0; i < 2; i++) {
      const res = await stack.http.post(webhookPath(adyenConfig.id)).set('Content-Type', 'application/json').send(JSON.stringify(notificationBody([item])));
      expect(res.status).toBe(200);
    }
    const failed = await settledAs(refundId, 'FAILED');
    expect(failed.failure_reason).toBe('refund_failed');
    expect(await getPayment(stack, adyenMerchant, paymentId)).toMatchObject({ status: 'SUCCEEDED', amount_refunded: 0 });
    expect(await eventsOf(paymentId, 'refund.failed')).toEqual([refundId]);
  });
});
