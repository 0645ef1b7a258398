import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startStack, TestStack } from '../support/stack';
import { startSimulator, TestSimulator } from '../support/payments';
import { eventually, spawnWorker, WorkerProcess } from '../support/worker-process';
import { api, billingFixture, customerWithCard, invoicesOf, monthlyPrice, newClock } from './support';

// Only child-process workers run in this file: an in-process worker would pick the tasks up instead.
let sim: TestSimulator;
let stack: TestStack;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '10000' });
});
afterAll(async () => {
  for (const w of workers) await w.stop().catch(() => {});
  await stack?.close();
  await sim?.close();
});

describe('a worker killed in the middle of a renewal', () => {
  it('is replaced, and the period has one invoice paid by one payment the processor authorized once', async () => {
    workers.push(await spawnWorker(stack));
    const f = await billingFixture(stack);
    const clock = await newClock(stack, f.merchant, '2026-03-01T00:00:00.000Z');
    const price = await monthlyPrice(stack, f.merchant, 4400);
    const { customerId, paymentMethodId } = await customerWithCard(stack, f.merchant);
    const sub = await api(stack, f.merchant).post('/v1/subscriptions', {
      customer_id: customerId, default_payment_method_id: paymentMethodId, test_clock_id: clock.id, items: [{ price_id: price.id }],
    }, 201);
    expect(sub.status).toBe('ACTIVE');

    // The processor now takes 3 s to answer: long enough to kill the worker while the renewal's authorization is in flight.
    const slow = await stack.http.put(`/v1/payment-provider-configs/${f.config.id}`).set(bearer(f.merchant.token))
      .send({ credentials: { api_key: 'sim_billing_key_0001', simulate: { latency_ms: 3000 } } });
    expect(slow.status, JSON.stringify(slow.body)).toBe(200);
    await api(stack, f.merchant).post(`/v1/test-clocks/${clock.id}/advance`, { frozen_time: '2026-04-01T00:00:00.000Z' });
    const renewal = await eventually(async () => (await invoicesOf(stack, sub.id))[1]?.payment_id ? (await invoicesOf(stack, sub.id))[1] : undefined, 60_000, 50);
    const charge = await eventually(async () => stack.db('sandbox.charges').where({ payment_id: renewal.payment_id }).first('id') as Promise<{ id: string } | undefined>, 60_000, 25);
    await eventually(async () => (await sim.key(charge.id)).calls >= 1, 30_000, 25);
    await workers[0].kill();

    workers.push(await spawnWorker(stack));
    await eventually(async () => {
      const c = await api(stack, f.merchant).get(`/v1/test-clocks/${clock.id}`);
      return c.status === 'READY' || undefined;
    }, 120_000, 250);
    const invoices = await invoicesOf(stack, sub.id);
    expect(invoices).toHaveLength(2);
    expect(invoices[1]).toMatchObject({ id: renewal.id, status: 'PAID', attempt_count: 1, payment_id: renewal.payment_id });
    const charges = await stack.db('sandbox.charges').where({ payment_id: renewal.payment_id });
    expect(charges).toHaveLength(1);
    expect((await sim.key(charge.id)).operation).toBe('authorize');
    const payments = await stack.db('sandbox.payments').where({ customer_id: customerId });
    expect(payments.map((p) => p.status).sort()).toEqual(['SUCCEEDED', 'SUCCEEDED']);
  }, 180_000);
});
