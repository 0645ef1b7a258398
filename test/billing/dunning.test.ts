import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { startSimulator, TestSimulator } from '../support/payments';
import { eventually } from '../support/worker-process';
import { advanceClock, api, billingEvents, billingFixture, BillingFixture, customerWithCard, invoicesOf, monthlyPrice, newClock, recordSubscriptionHistory } from './support';

// Dunning on renewals, driven by the sandbox's per-config `decline_code` knob on a test clock: each path
// (recovers on a retry, a decline no retry changes, retries run out) and a renewal the issuer wants
// authenticated.

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '5000' });
  worker = await startWorker(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

const START = '2026-03-01T00:00:00.000Z';
const RENEWAL = '2026-04-01T00:00:00.000Z';
const plusDays = (iso: string, days: number) => new Date(Date.parse(iso) + days * 86_400_000 + 60_000).toISOString();

/** Every new authorization of the fixture's config declines with `code` (none: approves again). */
async function declineWith(f: BillingFixture, code: string | null) {
  const res = await stack.http.put(`/v1/payment-provider-configs/${f.config.id}`).set(bearer(f.merchant.token))
    .send({ credentials: { api_key: 'sim_billing_key_0001', simulate: code ? { decline_code: code } : {} } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function activeSubscription(f: BillingFixture, card?: string, extra: Record<string, unknown> = {}) {
  const clock = await newClock(stack, f.merchant, START);
  const price = await monthlyPrice(stack, f.merchant, 2500);
  const { customerId, paymentMethodId } = await customerWithCard(stack, f.merchant, card);
  const sub = await api(stack, f.merchant).post('/v1/subscriptions', {
    customer_id: customerId, default_payment_method_id: paymentMethodId, test_clock_id: clock.id, items: [{ price_id: price.id }], ...extra,
  }, 201);
  return { clock, sub, customerId };
}

const subscription = (f: BillingFixture, id: string) => api(stack, f.merchant).get(`/v1/subscriptions/${id}`);

describe('a failed renewal', () => {
  it('goes PAST_DUE, retries on day 1 and recovers on retry 2 (day 3)', async () => {
    const f = await billingFixture(stack);
    const { clock, sub } = await activeSubscription(f);
    await declineWith(f, 'insufficient_funds');
    await advanceClock(stack, f.merchant, clock.id, RENEWAL);
    const [, renewal] = await invoicesOf(stack, sub.id);
    expect(renewal).toMatchObject({ status: 'OPEN', attempt_count: 1 });
    expect(renewal.attempts[0]).toMatchObject({ status: 'FAILED', decline_code: 'insufficient_funds' });
    expect(new Date(renewal.next_payment_attempt).toISOString()).toBe('2026-04-02T00:00:00.000Z');
    expect((await subscription(f, sub.id)).status).toBe('PAST_DUE');

    await advanceClock(stack, f.merchant, clock.id, plusDays(RENEWAL, 1));
    expect((await invoicesOf(stack, sub.id))[1]).toMatchObject({ status: 'OPEN', attempt_count: 2 });
    await declineWith(f, null);
    await advanceClock(stack, f.merchant, clock.id, plusDays(RENEWAL, 3));
    const recovered = (await invoicesOf(stack, sub.id))[1];
    expect(recovered).toMatchObject({ status: 'PAID', attempt_count: 3, next_payment_attempt: null });
    expect((await subscription(f, sub.id)).status).toBe('ACTIVE');
    const events = (await billingEvents(stack, sub.id)).map((e) => e.event);
    expect(events.filter((e) => e === 'invoice.payment_failed')).toHaveLength(2);
    await recordSubscriptionHistory(stack, 'dunning-recovered', sub.id);
  });

  it('stops at once on a decline no retry changes (stolen_card): UNPAID, no more attempts', async () => {
    const f = await billingFixture(stack);
    const { clock, sub } = await activeSubscription(f);
    await declineWith(f, 'stolen_card');
    await advanceClock(stack, f.merchant, clock.id, plusDays(RENEWAL, 10));
    const renewal = (await invoicesOf(stack, sub.id))[1];
    expect(renewal).toMatchObject({ status: 'OPEN', attempt_count: 1, next_payment_attempt: null });
    expect((await subscription(f, sub.id)).status).toBe('UNPAID');
  });

  it('runs out of retries (days 1, 3, 5, 7): UNPAID, kept but not billed; paying the invoice brings it back', async () => {
    const f = await billingFixture(stack);
    const { clock, sub } = await activeSubscription(f);
    await declineWith(f, 'insufficient_funds');
    await advanceClock(stack, f.merchant, clock.id, plusDays(RENEWAL, 40));
    const invoices = await invoicesOf(stack, sub.id);
    // No invoice for May: an UNPAID subscription is not billed.
    expect(invoices).toHaveLength(2);
    expect(invoices[1]).toMatchObject({ status: 'OPEN', attempt_count: 5, next_payment_attempt: null });
    expect((await subscription(f, sub.id))).toMatchObject({ status: 'UNPAID', current_period_start: '2026-05-01T00:00:00.000Z' });

    await declineWith(f, null);
    const paid = await api(stack, f.merchant).post(`/v1/invoices/${invoices[1].id}/pay`);
    expect(paid).toMatchObject({ status: 'PAID', attempt_count: 6 });
    expect((await subscription(f, sub.id)).status).toBe('ACTIVE');
  });

  it('cancels instead when the account says so', async () => {
    const f = await billingFixture(stack);
    const res = await stack.http.put(`/v1/accounts/${f.merchant.account.id}/settings/billing`).set(bearer(f.merchant.token))
      .send({ retry_days: [2], when_exhausted: 'CANCELED' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const { clock, sub } = await activeSubscription(f);
    await declineWith(f, 'do_not_honor');
    await advanceClock(stack, f.merchant, clock.id, plusDays(RENEWAL, 5));
    expect((await invoicesOf(stack, sub.id))[1]).toMatchObject({ status: 'UNCOLLECTIBLE', attempt_count: 2 });
    expect((await subscription(f, sub.id)).status).toBe('CANCELED');
  });
});

describe('a renewal the issuer wants authenticated', () => {
  it('waits with invoice.payment_action_required and a link; the customer authenticates and the invoice is paid', async () => {
    const f = await billingFixture(stack);
    // Always asks for 3-D Secure: the trial's end charges it off-session, and the issuer wants the customer.
    const { clock, sub } = await activeSubscription(f, '4000002760003184', { trial_period_days: 7 });
    await advanceClock(stack, f.merchant, clock.id, '2026-03-08T01:00:00.000Z');
    const renewal = await eventually(async () => {
      const row = (await invoicesOf(stack, sub.id))[1];
      return row?.hosted_payment_url ? row : undefined;
    });
    expect(renewal.status).toBe('OPEN');
    const required = (await billingEvents(stack, sub.id)).filter((e) => e.event === 'invoice.payment_action_required');
    expect(required).toHaveLength(1);
    expect(required[0].data.hosted_payment_url).toBe(renewal.hosted_payment_url);

    const answer = await fetch(renewal.hosted_payment_url, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'action=approve', redirect: 'manual',
    });
    const location = answer.headers.get('location');
    expect(location).toBeTruthy();
    await fetch(location!, { redirect: 'manual' });
    const paid = await eventually(async () => {
      const row = (await invoicesOf(stack, sub.id))[1];
      return row.status === 'PAID' ? row : undefined;
    }, 30_000, 200);
    expect(paid.attempt_count).toBe(1);
    expect((await subscription(f, sub.id)).status).toBe('ACTIVE');
    await recordSubscriptionHistory(stack, 'action-required', sub.id);
  });
});
