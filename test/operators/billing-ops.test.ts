import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, type RunningWorker, startStack, startWorker, type TestStack } from '../support/stack';
import { startSimulator, type TestSimulator } from '../support/payments';
import { advanceClock, api, billingFixture, type BillingFixture, customerWithCard, monthlyPrice, newClock } from '../billing/support';
import { ops } from './support';

// `npm run ops -- subscriptions:show / invoices:retry`, run in-process against the real stack: a
// subscription paid at creation, and one whose renewal the sandbox declined on a test clock.

const START = '2026-03-01T00:00:00.000Z';
const RENEWAL = '2026-04-01T00:00:00.000Z';

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let f: BillingFixture;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '5000' });
  worker = await startWorker(stack);
  f = await billingFixture(stack);
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

async function declineWith(code: string | null) {
  const res = await stack.http.put(`/v1/payment-provider-configs/${f.config.id}`).set(bearer(f.merchant.token))
    .send({ credentials: { api_key: 'sim_billing_key_0001', simulate: code ? { decline_code: code } : {} } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function subscribe(extra: Record<string, unknown> = {}) {
  const price = await monthlyPrice(stack, f.merchant, 2500);
  const { customerId, paymentMethodId } = await customerWithCard(stack, f.merchant);
  return api(stack, f.merchant).post('/v1/subscriptions', {
    customer_id: customerId, items: [{ price_id: price.id, quantity: 2 }], default_payment_method_id: paymentMethodId, ...extra,
  }, 201);
}

describe('subscriptions:show', () => {
  it('gives the row, its invoices and the workflow\'s live state with its Temporal UI link', async () => {
    const sub = await subscribe();
    const res = await ops('subscriptions:show', sub.id, '--json');
    expect(res.code, res.err).toBe(0);
    const shown = res.json();
    expect(shown.subscription).toMatchObject({
      id: sub.id, account_id: f.merchant.account.id, environment: 'sandbox', status: 'ACTIVE', customer_id: sub.customer_id,
      items: [{ price_id: sub.items[0].price_id, quantity: 2 }], latest_invoice_id: sub.latest_invoice_id,
    });
    expect(shown.invoices).toHaveLength(1);
    expect(shown.invoices[0]).toMatchObject({ id: sub.latest_invoice_id, status: 'PAID', amount_due: 5000, attempt_count: 1 });
    expect(shown.invoices[0].payment_id).toMatch(/^pay_/);
    expect(shown.workflow).toMatchObject({ workflow_id: `subscription/${sub.id}`, state: { subscriptionId: sub.id, clock: { status: 'ACTIVE' } } });
    expect(shown.workflow.temporal_ui_url).toContain(encodeURIComponent(`subscription/${sub.id}`));

    const text = await ops('subscriptions:show', sub.id);
    expect(text.code).toBe(0);
    expect(text.out).toContain(`Subscription ${sub.id}`);
    expect(text.out).toMatch(/INVOICE\s+STATUS\s+AMOUNT DUE\s+PERIOD/);
    expect(text.out).toMatch(new RegExp(`${sub.latest_invoice_id}\\s+PAID\\s+50\\.00 USD`));
    expect(text.out).toMatch(/state\s+ACTIVE/);
    expect(text.out).toContain(shown.workflow.temporal_ui_url);
  });

  it('answers 2 for what is not a subscription id and 3 for one that does not exist', async () => {
    expect((await ops('subscriptions:show', 'pay_123')).code).toBe(2);
    expect((await ops('subscriptions:show')).code).toBe(2);
    const missing = await ops('subscriptions:show', 'sub_01J00000000000000000000000');
    expect(missing.code).toBe(3);
    expect(missing.err).toContain('No subscription sub_01J00000000000000000000000');
  });
});

describe('invoices:retry', () => {
  it('retries an open invoice: declined again exits 1, approved pays it and the subscription is ACTIVE again', async () => {
    const clock = await newClock(stack, f.merchant, START);
    const sub = await subscribe({ test_clock_id: clock.id });
    await declineWith('insufficient_funds');
    await advanceClock(stack, f.merchant, clock.id, RENEWAL);
    const [open] = await api(stack, f.merchant).get(`/v1/invoices?subscription_id=${sub.id}&status=OPEN`);
    expect(open).toMatchObject({ attempt_count: 1 });

    const declined = await ops('invoices:retry', open.id, '--json');
    expect(declined.code, declined.err).toBe(1);
    expect(declined.json()).toMatchObject({ invoice_id: open.id, status: 'OPEN', attempt_count: 2, decline_code: 'insufficient_funds' });

    await declineWith(null);
    const paid = await ops('invoices:retry', open.id);
    expect(paid.code, paid.err).toBe(0);
    expect(paid.out).toContain(`Invoice ${open.id} is PAID`);
    const after = await api(stack, f.merchant).get(`/v1/invoices/${open.id}`);
    expect(after).toMatchObject({ status: 'PAID', attempt_count: 3 });
    expect((await api(stack, f.merchant).get(`/v1/subscriptions/${sub.id}`)).status).toBe('ACTIVE');

    // A paid invoice is refused by the workflow (exit 1), naming why.
    const again = await ops('invoices:retry', open.id);
    expect(again.code).toBe(1);
    expect(again.err).toContain('PAID');
  });

  it('answers 2 for what is not an invoice id and 3 for one that does not exist', async () => {
    expect((await ops('invoices:retry', 'sub_123')).code).toBe(2);
    expect((await ops('invoices:retry', 'in_01J00000000000000000000000')).code).toBe(3);
  });

  it('is in the help text', async () => {
    const help = await ops('--help');
    expect(help.code).toBe(0);
    expect(help.out).toContain('subscriptions:show <sub_id>');
    expect(help.out).toContain('invoices:retry <in_id>');
  });
});
