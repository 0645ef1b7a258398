import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, Merchant, RunningWorker, sandboxMerchant, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, newCustomer, savedCard, startSimulator, TestSimulator } from '../support/payments';
import { addFees, createConfig, createProvider, registerConnector } from '../support/routing';
import { eventually } from '../support/worker-process';
import { startStripeDouble, StripeDouble } from '../doubles/stripe/server';
import { AdyenDouble, startAdyenDouble } from '../doubles/adyen/server';
import { sealedConfirm, sealedStart } from '../../api/routes/payment-seals';
import { startPayment } from '../../workflows/payments/client';
import { newId } from '../../lib/ids';
import type { PaymentInput, RecurringUse } from '../../contracts/payments';

// Stored-credential payments (docs/billing.md#stored-credentials) through the real stack: a payment whose
// start carries `recurring`, confirmed with a customer's saved card. The first (customer-initiated)
// approval's network transaction id lands on the card; a merchant-initiated renewal sends it, with each
// processor's flags, as the sandbox processor, the Stripe double and the Adyen double received them.

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const STEP_UP = '4000002500003155';
const ALWAYS_AUTHENTICATE = '4000002760003184';

let sim: TestSimulator;
let stripe: StripeDouble;
let adyen: AdyenDouble;
let stack: TestStack;
let worker: RunningWorker;
/** One merchant per processor, each with that one config: every payment goes where its test says. */
let onSandbox: Merchant;
let onStripe: Merchant;
let onAdyen: Merchant;
let sandboxConfig: any;
let sandboxProvider: any;

const FINAL = ['SUCCEEDED', 'FAILED', 'REQUIRES_ACTION', 'AUTHORIZED', 'CANCELED'];

/** Starts a payment of `m` whose start carries `recurring`, confirmed with the saved card; resolves with its row once the walk rests. */
async function payRecurring(m: Merchant, customerId: string, paymentMethodId: string, initiator: RecurringUse['initiator'] | undefined, amount = 2500) {
  const paymentId = newId('pay');
  const input: PaymentInput = sealedStart(stack.deps, {
    paymentId, accountId: m.account.id, workspaceId: m.workspaceId, environment: 'sandbox', amount, currency: 'USD', autoCapture: true,
    secureMode: 'NONE', installments: 1, customerId, metadata: {}, routing: {}, authExpiryMs: 3_600_000, paymentExpiryMs: 3_600_000, authenticationTimeoutMs: 3_600_000,
    ...(initiator ? { recurring: { model: 'subscription' as const, initiator } } : {}),
    context: { actor: { type: 'system', id: 'billing-test' } },
  });
  const confirm = sealedConfirm(stack.deps, paymentId, { paymentMethodId, context: input.context });
  await startPayment(await stack.deps.temporal(), input, confirm);
  return rested(paymentId);
}

const rested = (paymentId: string, statuses = FINAL) => eventually(async () => {
  const row = await stack.db('sandbox.payments').where({ id: paymentId }).first();
  return row && statuses.includes(row.status) ? row : undefined;
}, 30_000, 100);

const chargesOf = (paymentId: string) => stack.db('sandbox.charges').where({ payment_id: paymentId }).orderBy('attempt_no', 'asc');
const anchorOf = async (pmId: string): Promise<string | null> => (await stack.db('sandbox.payment_methods').where({ id: pmId }).first()).network_transaction_id;

async function savedCardOf(m: Merchant, number: string = CARDS.visa) {
  const customerId = await newCustomer(stack, m);
  return { customerId, pmId: await savedCard(stack, m, customerId, number) };
}

beforeAll(async () => {
  sim = await startSimulator();
  stripe = await startStripeDouble();
  adyen = await startAdyenDouble();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '5000' });
  worker = await startWorker(stack);

  sandboxProvider = await createProvider(stack, { sandbox: true });
  onSandbox = await sandboxMerchant(stack);
  sandboxConfig = await createConfig(stack, onSandbox, sandboxProvider.id, { name: 'Sandbox', credentials: { api_key: 'sim_stored_key_0001' } });
  await addFees(stack, onSandbox, sandboxConfig, sandboxProvider, 2.9);

  const stripeProvider = await registerConnector(stack, 'stripe', stripe.url);
  onStripe = await sandboxMerchant(stack);
  const stripeConfig = await createConfig(stack, onStripe, stripeProvider.id, { name: 'Stripe', credentials: { secret_key: 'sk_test_stored_0001', webhook_secret: 'whsec_stored' } });
  await addFees(stack, onStripe, stripeConfig, stripeProvider, 2.9);

  const adyenProvider = await registerConnector(stack, 'adyen', adyen.url);
  onAdyen = await sandboxMerchant(stack);
  const adyenConfig = await createConfig(stack, onAdyen, adyenProvider.id, {
    name: 'Adyen', credentials: { api_key: 'AQE_test_stored_0001', merchant_account: 'StoredECOM', hmac_key: HMAC_KEY },
  });
  await addFees(stack, onAdyen, adyenConfig, adyenProvider, 2.9);
  adyen.setWebhook({ url: `${stack.baseUrl}/v1/provider-webhooks/${adyenConfig.id}`, hmacKey: HMAC_KEY });
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await adyen?.close();
  await stripe?.close();
  await sim?.close();
});

describe('the network transaction id and the stored-credential flags', () => {
  it('sandbox: the first payment anchors the card; a renewal sends the id, off-session, as merchant-initiated', async () => {
    const { customerId, pmId } = await savedCardOf(onSandbox);
    const first = await payRecurring(onSandbox, customerId, pmId, 'customer');
    expect(first.status).toBe('SUCCEEDED');
    const anchor = await anchorOf(pmId);
    expect(anchor).toMatch(/^\d{15}$/);

    const renewal = await payRecurring(onSandbox, customerId, pmId, 'merchant');
    expect(renewal.status).toBe('SUCCEEDED');
    const [firstCharge] = await chargesOf(first.id);
    const [renewalCharge] = await chargesOf(renewal.id);
    expect((await sim.key(firstCharge.id)).stored_credential).toEqual({ model: 'subscription', initiator: 'customer' });
    expect((await sim.key(renewalCharge.id)).stored_credential).toEqual({ model: 'subscription', initiator: 'merchant', network_transaction_id: anchor });
    // The chain keeps its first id: the renewal's own approval does not replace it.
    expect(await anchorOf(pmId)).toBe(anchor);
    // Not recorded beyond the processor's answer: the request's record says only that an id went.
    expect(renewalCharge.exchanges[0].request.body.stored_credential).toEqual({ model: 'subscription', initiator: 'merchant', network_transaction_id: true });
  });

  it('a plain payment with a saved card sends no flags, and anchors the card all the same', async () => {
    const { customerId, pmId } = await savedCardOf(onSandbox);
    const plain = await payRecurring(onSandbox, customerId, pmId, undefined);
    expect(plain.status).toBe('SUCCEEDED');
    const [charge] = await chargesOf(plain.id);
    expect((await sim.key(charge.id)).stored_credential).toBeNull();
    expect(await anchorOf(pmId)).toMatch(/^\d{15}$/);
  });

  it('stripe: setup_future_usage off_session first; then off_session with the mit_exemption network_transaction_id', async () => {
    const { customerId, pmId } = await savedCardOf(onStripe);
    const first = await payRecurring(onStripe, customerId, pmId, 'customer');
    expect(first.status).toBe('SUCCEEDED');
    const anchor = await anchorOf(pmId);
    expect(anchor).toMatch(/^\d{15}$/);
    const renewal = await payRecurring(onStripe, customerId, pmId, 'merchant');
    expect(renewal.status).toBe('SUCCEEDED');

    const received = (paymentCharge: { id: string }) => stripe.state().stored_credentials.find((use) => use.charge_id === paymentCharge.id);
    const [firstCharge] = await chargesOf(first.id);
    const [renewalCharge] = await chargesOf(renewal.id);
    expect(received(firstCharge)).toMatchObject({ setup_future_usage: 'off_session', off_session: false, mit_network_transaction_id: null });
    expect(received(renewalCharge)).toMatchObject({ setup_future_usage: null, off_session: true, mit_network_transaction_id: anchor });
    expect(await anchorOf(pmId)).toBe(anchor);
    // The exchange keeps the latest charge's id, not the expanded charge.
    expect(typeof firstCharge.exchanges[0].response.body.latest_charge).toBe('string');
  });

  it('adyen: Ecommerce + Subscription first; then ContAuth + Subscription with the networkPaymentReference', async () => {
    const { customerId, pmId } = await savedCardOf(onAdyen);
    const first = await payRecurring(onAdyen, customerId, pmId, 'customer');
    expect(first.status).toBe('SUCCEEDED');
    const anchor = await anchorOf(pmId);
    expect(anchor).toMatch(/^\d{15}$/);
    const renewal = await payRecurring(onAdyen, customerId, pmId, 'merchant');
    expect(renewal.status).toBe('SUCCEEDED');

    const received = (charge: { id: string }) => adyen.state().stored_credentials.find((use) => use.merchantReference === charge.id);
    const [firstCharge] = await chargesOf(first.id);
    const [renewalCharge] = await chargesOf(renewal.id);
    expect(received(firstCharge)).toMatchObject({ shopperInteraction: 'Ecommerce', recurringProcessingModel: 'Subscription', networkPaymentReference: null });
    expect(received(renewalCharge)).toMatchObject({ shopperInteraction: 'ContAuth', recurringProcessingModel: 'Subscription', networkPaymentReference: anchor });
  });
});

describe('issuers do not ask again on a merchant-initiated transaction', () => {
  /** The cardholder passes the simulator's challenge of a REQUIRES_ACTION payment. */
  async function authenticate(payment: { next_action: { redirect_to_url: { url: string } } }) {
    const res = await fetch(payment.next_action.redirect_to_url.url, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'action=approve', redirect: 'manual',
    });
    expect([200, 303]).toContain(res.status);
  }

  it('4000002500003155 needs 3-D Secure on the first payment, not on the renewal that references it', async () => {
    const { customerId, pmId } = await savedCardOf(onSandbox, STEP_UP);
    const first = await payRecurring(onSandbox, customerId, pmId, 'customer');
    expect(first.status).toBe('REQUIRES_ACTION');
    await authenticate(first);
    expect((await rested(first.id, ['SUCCEEDED', 'FAILED'])).status).toBe('SUCCEEDED');
    const anchor = await anchorOf(pmId);
    expect(anchor).toMatch(/^\d{15}$/);

    const renewal = await payRecurring(onSandbox, customerId, pmId, 'merchant');
    expect(renewal.status).toBe('SUCCEEDED');
    const charges = await chargesOf(renewal.id);
    expect(charges.map((c: { status: string }) => c.status)).toEqual(['CAPTURED']);
  });

  it('4000002760003184 answers a renewal authentication_required: the payment steps up and waits for the customer', async () => {
    const { customerId, pmId } = await savedCardOf(onSandbox, ALWAYS_AUTHENTICATE);
    await stack.db('sandbox.payment_methods').where({ id: pmId }).update({ network_transaction_id: '483920175604821' });
    const renewal = await payRecurring(onSandbox, customerId, pmId, 'merchant');
    expect(renewal.status).toBe('REQUIRES_ACTION');
    const [offSession, stepUp] = await chargesOf(renewal.id);
    expect(offSession).toMatchObject({ status: 'FAILED', decline_code: 'authentication_required' });
    expect(stepUp.status).toBe('REQUIRES_ACTION');
    expect((await sim.key(offSession.id)).stored_credential).toEqual({ model: 'subscription', initiator: 'merchant', network_transaction_id: '483920175604821' });
    // The customer is brought back: the step-up is their own transaction.
    expect((await sim.key(stepUp.id)).stored_credential).toEqual({ model: 'subscription', initiator: 'customer' });
    await authenticate(renewal.next_action ? renewal : await rested(renewal.id));
    expect((await rested(renewal.id, ['SUCCEEDED', 'FAILED'])).status).toBe('SUCCEEDED');
  });
});

describe('the sandbox decline_code knob', () => {
  const putSimulate = (simulate: Record<string, unknown>) => stack.http.put(`/v1/payment-provider-configs/${sandboxConfig.id}`).set(bearer(onSandbox.secretKey))
    .send({ credentials: { api_key: 'sim_stored_key_0001', simulate } });

  it('refuses a code the sandbox does not know, on create and on update (400 at the field)', async () => {
    const created = await stack.http.post(`/v1/payment-provider-configs?account_id=${onSandbox.account.id}`).set(bearer(onSandbox.token))
      .send({ payment_provider_id: sandboxProvider.id, name: 'Bad knob', credentials: { api_key: 'sim_bad_0001', simulate: { decline_code: 'made_up' } } });
    expect(created.status, JSON.stringify(created.body)).toBe(400);
    expect(created.body.error.details.fields.map((f: { path: string }) => f.path)).toEqual(['body/credentials/simulate/decline_code']);
    const updated = await putSimulate({ decline_code: 'not_a_code' });
    expect(updated.status, JSON.stringify(updated.body)).toBe(400);
  });

  it('declines every new authorization with the code, and an update takes effect for the next one', async () => {
    try {
      expect((await putSimulate({ decline_code: 'stolen_card' })).status).toBe(200);
      const { customerId, pmId } = await savedCardOf(onSandbox);
      const stolen = await payRecurring(onSandbox, customerId, pmId, 'merchant');
      expect(stolen.status).toBe('FAILED');
      expect(stolen.last_error).toMatchObject({ decline_code: 'stolen_card' });
      const plain = await payRecurring(onSandbox, customerId, pmId, undefined);
      expect(plain.last_error).toMatchObject({ decline_code: 'stolen_card' });

      expect((await putSimulate({ decline_code: 'insufficient_funds' })).status).toBe(200);
      const broke = await payRecurring(onSandbox, customerId, pmId, 'merchant');
      expect(broke.status).toBe('FAILED');
      expect(broke.last_error).toMatchObject({ code: 'card_declined', decline_code: 'insufficient_funds' });
      expect(await anchorOf(pmId)).toBeNull();

      // A soft one, as the table says: the walk ends at the last candidate, card_declined.
      expect((await putSimulate({ decline_code: 'issuer_unavailable' })).status).toBe(200);
      const soft = await payRecurring(onSandbox, customerId, pmId, 'merchant');
      expect(soft.last_error).toMatchObject({ decline_code: 'issuer_unavailable' });
    } finally {
      expect((await putSimulate({})).status).toBe(200);
    }
  });
});
