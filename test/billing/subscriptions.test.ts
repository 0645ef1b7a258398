import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { startSimulator, TestSimulator } from '../support/payments';
import { MockActivityEnvironment } from '@temporalio/testing';
import { BILLING_SEAL_PURPOSE, clockAdvanceWorkflowId, subscriptionChangeText, subscriptionWorkflowId, type SubscriptionChange } from '../../contracts/billing';
import { changeSubscription } from '../../workflows/billing/client';
import { billingActivities } from '../../activities/billing';
import { Vault } from '../../lib/vault';
import { eventually } from '../support/worker-process';
import { advanceClock, api, billingEvents, billingFixture, BillingFixture, customerWithCard, invoicesOf, monthlyPrice, newClock, recordSubscriptionHistory } from './support';

// Subscriptions against the real stack on test clocks: the workflow sleeps until its clock moves, then
// replays the months it missed, in order, each period billed once with an ordinary payment.

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let f: BillingFixture;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '5000' });
  worker = await startWorker(stack);
  f = await billingFixture(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

const START = '2026-01-31T12:00:00.000Z';

async function subscribe(body: Record<string, unknown>, at = START) {
  const clock = await newClock(stack, f.merchant, at);
  const { customerId, paymentMethodId } = await customerWithCard(stack, f.merchant);
  const sub = await api(stack, f.merchant).post('/v1/subscriptions', {
    customer_id: customerId, default_payment_method_id: paymentMethodId, test_clock_id: clock.id, ...body,
  }, 201);
  return { clock, sub, customerId, paymentMethodId };
}

describe('a monthly subscription on a test clock', () => {
  it('bills a year of renewals in order, each period once, when its clock moves a year', async () => {
    const price = await monthlyPrice(stack, f.merchant, 2000);
    const { clock, sub } = await subscribe({ items: [{ price_id: price.id }] });
    expect(sub).toMatchObject({ object: 'subscription', status: 'ACTIVE', current_period_start: START, current_period_end: '2026-02-28T12:00:00.000Z' });
    expect(sub.latest_invoice_id).toMatch(/^in_/);

    await advanceClock(stack, f.merchant, clock.id, '2027-01-31T12:00:00.000Z');
    const invoices = await invoicesOf(stack, sub.id);
    // The first invoice and twelve renewals, each paid once by its own payment; month ends clamp and come back (28th, 31st, 30th…).
    expect(invoices.map((i) => i.status)).toEqual(Array(13).fill('PAID'));
    expect(invoices.map((i) => new Date(i.period_start).toISOString().slice(0, 10))).toEqual([
      '2026-01-31', '2026-02-28', '2026-03-31', '2026-04-30', '2026-05-31', '2026-06-30', '2026-07-31', '2026-08-31', '2026-09-30',
      '2026-10-31', '2026-11-30', '2026-12-31', '2027-01-31',
    ]);
    const paymentIds = invoices.map((i) => i.payment_id);
    expect(new Set(paymentIds).size).toBe(13);
    const payments = await stack.db('sandbox.payments').whereIn('id', paymentIds);
    expect(payments.map((p) => [p.status, Number(p.amount)])).toEqual(Array(13).fill(['SUCCEEDED', 2000]));

    const events = await billingEvents(stack, sub.id);
    const paid = events.filter((e) => e.event === 'invoice.paid').map((e) => e.subject_id);
    expect(paid).toEqual(invoices.map((i) => i.id));
    expect(events.filter((e) => e.event === 'invoice.created')).toHaveLength(13);
    expect(events.filter((e) => e.event === 'invoice.upcoming')).toHaveLength(12);
    const after = await api(stack, f.merchant).get(`/v1/subscriptions/${sub.id}`);
    expect(after).toMatchObject({ status: 'ACTIVE', current_period_start: '2027-01-31T12:00:00.000Z', current_period_end: '2027-02-28T12:00:00.000Z' });

    // Advancing to the same time again changes nothing: no period is billed twice.
    await advanceClock(stack, f.merchant, clock.id, '2027-01-31T12:00:00.000Z');
    expect(await invoicesOf(stack, sub.id)).toHaveLength(13);
    await recordSubscriptionHistory(stack, 'year', sub.id);
  });

  it('refuses to move a clock back', async () => {
    const clock = await newClock(stack, f.merchant, START);
    const res = await stack.http.post(`/v1/test-clocks/${clock.id}/advance`).set('Authorization', `Bearer ${f.merchant.secretKey}`).send({ frozen_time: '2026-01-01T00:00:00.000Z' });
    expect(res.status).toBe(400);
  });
});

describe('advancing a clock', () => {
  const signalsTo = async (subscriptionIds: string[]) => {
    const client = await stack.deps.temporal();
    return Promise.all(subscriptionIds.map(async (id) => {
      const history = await client.workflow.getHandle(subscriptionWorkflowId(id)).fetchHistory();
      return history.events!.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'clockAdvanced').length;
    }));
  };

  it('answers at once and tells the subscriptions through a workflow of its own; a retry goes on after the last one told', async () => {
    const price = await monthlyPrice(stack, f.merchant, 1500);
    const clock = await newClock(stack, f.merchant, START);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { customerId, paymentMethodId } = await customerWithCard(stack, f.merchant);
      const sub = await api(stack, f.merchant).post('/v1/subscriptions', {
        customer_id: customerId, default_payment_method_id: paymentMethodId, test_clock_id: clock.id, items: [{ price_id: price.id }],
      }, 201);
      ids.push(sub.id);
    }
    ids.sort();
    // Mid-period: each subscription reads the time, finds nothing due and reports itself caught up.
    const to = '2026-02-10T12:00:00.000Z';
    const advance = { clockId: clock.id, accountId: f.merchant.account.id, environment: 'sandbox' as const, frozenTime: Date.parse(to) };
    const answered = await api(stack, f.merchant).post(`/v1/test-clocks/${clock.id}/advance`, { frozen_time: to });
    expect(answered).toMatchObject({ frozen_time: to, status: 'ADVANCING' });
    const client = await stack.deps.temporal();
    expect(await client.workflow.getHandle(clockAdvanceWorkflowId(advance)).result()).toEqual({ told: 3 });
    await eventually(async () => ((await api(stack, f.merchant).get(`/v1/test-clocks/${clock.id}`)).status === 'READY' ? true : undefined), 60_000, 200);
    expect(await signalsTo(ids)).toEqual([1, 1, 1]);

    // An attempt that died after telling the first: its retry, with that heartbeat, tells the other two only.
    const activities = billingActivities({ db: stack.db, config: stack.config, vault: new Vault(stack.config.vaultKeys), temporal: stack.deps.temporal });
    const retry = new MockActivityEnvironment({ heartbeatDetails: ids[0] });
    expect(await retry.run(activities.tellClockAdvanced, advance)).toEqual({ told: 2 });
    expect(await signalsTo(ids)).toEqual([1, 2, 2]);
  });
});

describe('a trial', () => {
  it('is free until it ends, warns three days before, then bills the first period', async () => {
    const price = await monthlyPrice(stack, f.merchant, 1500);
    const { clock, sub } = await subscribe({ items: [{ price_id: price.id, quantity: 2 }], trial_period_days: 14 });
    expect(sub).toMatchObject({ status: 'TRIALING', trial_end: '2026-02-14T12:00:00.000Z', current_period_end: '2026-02-14T12:00:00.000Z' });
    const [trialInvoice] = await invoicesOf(stack, sub.id);
    expect(trialInvoice).toMatchObject({ status: 'PAID', payment_id: null });
    expect(Number(trialInvoice.amount_due)).toBe(0);

    await advanceClock(stack, f.merchant, clock.id, '2026-02-12T12:00:00.000Z');
    expect((await billingEvents(stack, sub.id)).map((e) => e.event)).toContain('subscription.trial_will_end');
    expect(await invoicesOf(stack, sub.id)).toHaveLength(1);

    await advanceClock(stack, f.merchant, clock.id, '2026-02-14T13:00:00.000Z');
    const invoices = await invoicesOf(stack, sub.id);
    expect(invoices).toHaveLength(2);
    expect(invoices[1]).toMatchObject({ status: 'PAID', billing_reason: 'subscription_cycle' });
    expect(Number(invoices[1].amount_paid)).toBe(3000);
    expect((await api(stack, f.merchant).get(`/v1/subscriptions/${sub.id}`)).status).toBe('ACTIVE');
    await recordSubscriptionHistory(stack, 'trial', sub.id);
  });
});

describe('changing the items mid-period', () => {
  it('credits the unused time of the old plan and charges the new one, on the next invoice (upgrade, then downgrade)', async () => {
    const basic = await monthlyPrice(stack, f.merchant, 1000, 'Basic');
    const pro = await monthlyPrice(stack, f.merchant, 3000, 'Pro');
    // A 30-day period (April) makes the shares exact: half of it is left on the 16th.
    const { clock, sub } = await subscribe({ items: [{ price_id: basic.id }] }, '2026-04-01T00:00:00.000Z');
    await advanceClock(stack, f.merchant, clock.id, '2026-04-16T00:00:00.000Z');
    const item = sub.items[0];
    await api(stack, f.merchant).patch(`/v1/subscriptions/${sub.id}`, { items: [{ id: item.id, price_id: pro.id }] });
    await advanceClock(stack, f.merchant, clock.id, '2026-05-01T00:00:00.000Z');
    const [, renewal] = await invoicesOf(stack, sub.id);
    expect(renewal.lines.map((l: any) => [l.amount, l.proration])).toEqual([[-500, true], [1500, true], [3000, false]]);
    expect(Number(renewal.amount_paid)).toBe(4000);

    // Downgrade on May 16th (31-day May: 16 of 31 days left), billed on June 1st.
    await advanceClock(stack, f.merchant, clock.id, '2026-05-16T00:00:00.000Z');
    await api(stack, f.merchant).patch(`/v1/subscriptions/${sub.id}`, { items: [{ id: item.id, price_id: basic.id }] });
    await advanceClock(stack, f.merchant, clock.id, '2026-06-01T00:00:00.000Z');
    const june = (await invoicesOf(stack, sub.id))[2];
    expect(june.lines.map((l: any) => l.amount)).toEqual([-Math.round(3000 * 16 / 31), Math.round(1000 * 16 / 31), 1000]);
    await recordSubscriptionHistory(stack, 'proration', sub.id);
  });
  it('applies a change sent twice with one Idempotency-Key once, and replays its answer', async () => {
    const basic = await monthlyPrice(stack, f.merchant, 1000, 'Basic');
    const pro = await monthlyPrice(stack, f.merchant, 3000, 'Pro');
    const { sub } = await subscribe({ items: [{ price_id: basic.id }] }, '2026-04-01T00:00:00.000Z');
    const change = { items: [{ id: sub.items[0].id, price_id: pro.id }] };
    const send = (body: Record<string, unknown>) => stack.http.patch(`/v1/subscriptions/${sub.id}`)
      .set(bearer(f.merchant.secretKey)).set('Idempotency-Key', `change-${sub.id}`).send(body);
    const first = await send(change);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const updates = async () => (await billingEvents(stack, sub.id)).filter((e) => e.event === 'subscription.updated').length;
    const applied = await updates();
    expect(applied).toBeGreaterThan(0);
    const again = await send(change);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect(await updates()).toBe(applied);
    // Another change under the same key is refused, not applied.
    const other = await send({ items: [{ id: sub.items[0].id, price_id: basic.id }] });
    expect(other.status).toBe(422);
    expect(other.body.error.details.reason).toBe('idempotency_key_reused');
    expect(await updates()).toBe(applied);
  });
});

describe('canceling', () => {
  it('at period end: the period runs out, nothing more is billed', async () => {
    const price = await monthlyPrice(stack, f.merchant, 900);
    const { clock, sub } = await subscribe({ items: [{ price_id: price.id }] });
    const patched = await api(stack, f.merchant).patch(`/v1/subscriptions/${sub.id}`, { cancel_at_period_end: true });
    expect(patched).toMatchObject({ status: 'ACTIVE', cancel_at_period_end: true });
    await advanceClock(stack, f.merchant, clock.id, '2026-04-30T12:00:00.000Z');
    const ended = await api(stack, f.merchant).get(`/v1/subscriptions/${sub.id}`);
    expect(ended).toMatchObject({ status: 'CANCELED', ended_at: '2026-02-28T12:00:00.000Z' });
    expect(await invoicesOf(stack, sub.id)).toHaveLength(1);
    expect((await billingEvents(stack, sub.id)).filter((e) => e.event === 'subscription.canceled')).toHaveLength(1);
  });

  it('now, with the unused time credited on a final invoice; a canceled subscription takes no more changes', async () => {
    const price = await monthlyPrice(stack, f.merchant, 3000);
    const { clock, sub } = await subscribe({ items: [{ price_id: price.id }] }, '2026-04-01T00:00:00.000Z');
    await advanceClock(stack, f.merchant, clock.id, '2026-04-21T00:00:00.000Z');
    const canceled = await api(stack, f.merchant).post(`/v1/subscriptions/${sub.id}/cancel`, { invoice_now: true, prorate: true });
    expect(canceled).toMatchObject({ status: 'CANCELED', canceled_at: '2026-04-21T00:00:00.000Z' });
    const [, final] = await invoicesOf(stack, sub.id);
    expect(final).toMatchObject({ billing_reason: 'subscription_cancel', status: 'PAID' });
    expect(final.lines.map((l: any) => l.amount)).toEqual([-1000]);
    const res = await stack.http.patch(`/v1/subscriptions/${sub.id}`).set('Authorization', `Bearer ${f.merchant.secretKey}`).send({ metadata: { a: 'b' } });
    expect(res.status).toBe(409);
    await recordSubscriptionHistory(stack, 'canceled-now', sub.id);
  });
});

describe('pausing collection', () => {
  it('voids the renewals while paused and bills again once resumed', async () => {
    const price = await monthlyPrice(stack, f.merchant, 1200);
    const { clock, sub } = await subscribe({ items: [{ price_id: price.id }] });
    await api(stack, f.merchant).patch(`/v1/subscriptions/${sub.id}`, { pause_collection: { behavior: 'void' } });
    await advanceClock(stack, f.merchant, clock.id, '2026-03-01T12:00:00.000Z');
    await api(stack, f.merchant).patch(`/v1/subscriptions/${sub.id}`, { pause_collection: null });
    await advanceClock(stack, f.merchant, clock.id, '2026-04-01T12:00:00.000Z');
    expect((await invoicesOf(stack, sub.id)).map((i) => i.status)).toEqual(['PAID', 'VOID', 'PAID']);
    await recordSubscriptionHistory(stack, 'paused', sub.id);
  });
});

describe('a change sent twice', () => {
  it('is applied once, also when the second comes after the workflow continued as new', async () => {
    const price = await monthlyPrice(stack, f.merchant, 500);
    const { clock, sub } = await subscribe({ items: [{ price_id: price.id }] });
    const change: SubscriptionChange = { kind: 'update', metadata: { plan: 'gold' } };
    const updateId = 'cmd_sent_twice';
    const sealed = {
      change, seal: stack.deps.vault.seal(BILLING_SEAL_PURPOSE, subscriptionChangeText(sub.id, updateId, change)), context: { actor: { type: 'user' as const, id: 'usr_test' } },
    };
    const client = await stack.deps.temporal();
    const send = () => changeSubscription(client, sub.id, sealed, updateId, async () => undefined);
    await Promise.all([send(), send()]);
    await advanceClock(stack, f.merchant, clock.id, '2026-03-01T12:00:00.000Z');
    // The renewal continued the workflow as new: the retry meets a new run, which carried the answer.
    await send();
    const updates = (await billingEvents(stack, sub.id)).filter((e) => e.event === 'subscription.updated' && e.data.object.metadata.plan === 'gold');
    expect(updates).toHaveLength(2);
    // One from the change itself, one from the renewal that followed it (the period moved on); none from the retries.
    expect(updates.map((e) => e.data.object.current_period_start)).toEqual([START, '2026-02-28T12:00:00.000Z']);
  });
});
