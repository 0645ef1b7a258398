import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, Merchant, RunningWorker, sandboxMerchant, startStack, startWorker, TestStack } from '../support/stack';
import { addFees, createConfig, registerConnector } from '../support/routing';
import { card, confirm, createPayment } from '../support/payments';
import { startStripeDouble, StripeDouble } from '../doubles/stripe/server';
import { startAdyenDouble, AdyenDouble } from '../doubles/adyen/server';
import { DISPUTE_CARDS, disputeOf } from './support';

// Disputes end to end through each processor's double, built from its published contract: the double
// disputes a captured charge with a dispute test card and sends its signed notifications; the engine
// makes the dispute and sends the merchant's evidence or acceptance through the connector.

const STRIPE_SECRET = 'whsec_dispute_0001';
const ADYEN_HMAC = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const TIMING_MS = { after_capture_ms: 200, decision_ms: 300 };

let stack: TestStack;
let worker: RunningWorker;
let stripe: StripeDouble;
let adyen: AdyenDouble;
let stripeMerchant: Merchant;
let adyenMerchant: Merchant;

const webhookPath = (configId: string) => `/v1/provider-webhooks/${configId}`;

beforeAll(async () => {
  [stripe, adyen] = await Promise.all([startStripeDouble(), startAdyenDouble()]);
  stripe.disputeTiming({ ...TIMING_MS, evidence_due_ms: 7 * 86_400_000 });
  adyen.disputeTiming({ ...TIMING_MS, defense_period_ms: 7 * 86_400_000 });
  stack = await startStack({ PROVIDER_TIMEOUT_MS: '5000' });
  worker = await startWorker(stack);

  stripeMerchant = await sandboxMerchant(stack);
  const stripeProvider = await registerConnector(stack, 'stripe', stripe.url);
  const stripeConfig = await createConfig(stack, stripeMerchant, stripeProvider.id, { name: 'Stripe', credentials: { secret_key: 'sk_test_dispute_0001', webhook_secret: STRIPE_SECRET } });
  await addFees(stack, stripeMerchant, stripeConfig, stripeProvider, 2.9);
  stripe.setWebhook({ url: `${stack.baseUrl}${webhookPath(stripeConfig.id)}`, secret: STRIPE_SECRET });

  adyenMerchant = await sandboxMerchant(stack);
  const adyenProvider = await registerConnector(stack, 'adyen', adyen.url);
  const adyenConfig = await createConfig(stack, adyenMerchant, adyenProvider.id, {
    name: 'Adyen', credentials: { api_key: 'AQE_test_dispute_0001', merchant_account: 'SwitchboardECOM', hmac_key: ADYEN_HMAC },
  });
  await addFees(stack, adyenMerchant, adyenConfig, adyenProvider, 2.9);
  adyen.setWebhook({ url: `${stack.baseUrl}${webhookPath(adyenConfig.id)}`, hmacKey: ADYEN_HMAC });
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await stripe?.close();
  await adyen?.close();
});

async function disputed(m: Merchant, amount: number): Promise<{ paymentId: string; dispute: any }> {
  const created = await createPayment(stack, m, { amount });
  const res = await confirm(stack, m, created.body.data.id, { payment_method: { ...card(DISPUTE_CARDS.fraudulent), card: { ...card(DISPUTE_CARDS.fraudulent).card, cvc: '737', holder_name: 'Jenny Rosen' } } });
  expect(res.body.data?.status, JSON.stringify(res.body)).toBe('SUCCEEDED');
  const paymentId = created.body.data.id;
  return { paymentId, dispute: await disputeOf(stack, m, paymentId, (d) => d.balance_transactions.length > 0) };
}

const answer = (m: Merchant, path: string, body: Record<string, unknown>) => stack.http.post(path).set(bearer(m.secretKey)).send(body);

for (const processor of ['stripe', 'adyen'] as const) {
  describe(`a chargeback through ${processor === 'stripe' ? 'Stripe' : 'Adyen'}`, () => {
    const merchant = () => (processor === 'stripe' ? stripeMerchant : adyenMerchant);

    it('is made from its notices, and won with evidence that wins: the money comes back', async () => {
      const { paymentId, dispute } = await disputed(merchant(), 5100);
      expect(dispute).toMatchObject({ status: 'NEEDS_RESPONSE', amount: 5100, reason: 'fraudulent', is_inquiry: false });
      const submitted = await answer(merchant(), `/v1/disputes/${dispute.id}/evidence`, {
        customer_name: 'Jenny Rosen', uncategorized_text: 'Delivered and signed for. winning_evidence', submit: true,
      });
      expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
      expect(submitted.body.data.status).toBe('UNDER_REVIEW');
      const won = await disputeOf(stack, merchant(), paymentId, (d) => d.status === 'WON' && d.balance_transactions.length === 2, 30_000);
      expect(won.balance_transactions.map((b: any) => b.kind)).toEqual(['withdrawn', 'reinstated']);
      const received = processor === 'stripe' ? stripe.state().dispute_requests : adyen.disputes();
      expect(JSON.stringify(received)).toContain('winning_evidence');
    });

    it('is lost with evidence that does not win, and lost when accepted', async () => {
      const lost = await disputed(merchant(), 5200);
      expect((await answer(merchant(), `/v1/disputes/${lost.dispute.id}/evidence`, { uncategorized_text: 'It was fine.', submit: true })).status).toBe(200);
      await disputeOf(stack, merchant(), lost.paymentId, (d) => d.status === 'LOST', 30_000);

      const accepted = await disputed(merchant(), 5300);
      const res = await answer(merchant(), `/v1/disputes/${accepted.dispute.id}/accept`, {});
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.status).toBe('LOST');
      await disputeOf(stack, merchant(), accepted.paymentId, (d) => d.status === 'LOST');
    });
  });
}
