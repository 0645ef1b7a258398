import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, card, confirm, createPayment, getPayment, pay, paymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually } from '../support/worker-process';
import { paymentQueries, paymentWorkflowId } from '../../contracts/payments';

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '1000' });
  worker = await startWorker(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

describe('provider faults', () => {
  it('cascades past a provider outage: two charges, the second succeeds, current_index 1', async () => {
    const f = await paymentsFixture(stack, { primary: { outage: true } });
    const res = await pay(stack, f.merchant, CARDS.visa);
    expect(res.body.data.status).toBe('SUCCEEDED');
    expect(res.body.data.charges.map((c: any) => [c.attempt_no, c.status, c.decline_code, c.payment_provider_config_id])).toEqual([
      [1, 'FAILED', 'provider_unavailable', f.primary.id],
      [2, 'CAPTURED', null, f.backup.id],
    ]);
    const read = await getPayment(stack, f.merchant, res.body.data.id);
    expect(read.routing_plans[0].current_index).toBe(1);
  });

  it('never cascades on an unknown outcome: it reconciles, stays PROCESSING meanwhile, then completes', async () => {
    // The processor takes the authorization but never answers it, and answers status queries too late.
    const f = await paymentsFixture(stack, { primary: { blackhole: true, latency_ms: 3000 } });
    const created = await createPayment(stack, f.merchant, { amount: 1234 });
    const paymentId = created.body.data.id;
    const confirming = confirm(stack, f.merchant, paymentId, { payment_method: card(CARDS.visa) });

    const stuck = await eventually(async () => {
      const p = await getPayment(stack, f.merchant, paymentId);
      return p.charges[0]?.status === 'UNKNOWN' ? p : undefined;
    });
    expect(stuck.status).toBe('PROCESSING');
    const client = await stack.deps.temporal();
    const handle = client.workflow.getHandle(paymentWorkflowId(paymentId));
    expect(await handle.query(paymentQueries.state)).toMatchObject({ status: 'PROCESSING', reconciling: true, currentIndex: 0 });
    const listed = client.workflow.list({ query: `PaymentStatus="PROCESSING" AND PaymentId="${paymentId}"` });
    await eventually(async () => {
      for await (const wf of listed) if (wf.workflowId === paymentWorkflowId(paymentId)) return true;
      return undefined;
    }, 15_000, 500).catch(() => { throw new Error('the stuck payment is not found by PaymentStatus="PROCESSING"'); });

    // The confirm call gives up waiting after 10 s and says PROCESSING.
    const answered = await confirming;
    expect(answered.body.data.status).toBe('PROCESSING');
    expect(answered.body.message).toBe('Payment is processing');
    // Still one charge: the backup provider was never called.
    const during = await getPayment(stack, f.merchant, paymentId);
    expect(during.charges).toHaveLength(1);

    // The processor recovers and answers the status query: the payment completes on the real outcome.
    const put = await stack.http.put(`/v1/payment-provider-configs/${f.primary.id}`).set(bearer(f.merchant.token))
      .send({ credentials: { api_key: 'sim_primary_key_0001' } });
    expect(put.status).toBe(200);
    const done = await eventually(async () => {
      const p = await getPayment(stack, f.merchant, paymentId);
      return p.status === 'SUCCEEDED' ? p : undefined;
    }, 60_000, 500);
    expect(done.charges).toHaveLength(1);
    expect(done.charges[0]).toMatchObject({ status: 'CAPTURED', payment_provider_config_id: f.primary.id });
    expect(done.charges[0].exchanges.map((e: any) => e.operation)).toContain('get_status');
    expect((await sim.stats()).charges.total).toBeGreaterThanOrEqual(1);
    expect((await sim.key(done.charges[0].id)).charge_id).toBeTruthy();
  }, 90_000);
});

describe('expiry timers', () => {
  let short: TestStack;
  beforeAll(async () => {
    // The same worker; payments created through this API carry short expiries in their workflow input.
    short = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '1000', AUTH_EXPIRY: '2s', PAYMENT_EXPIRY: '3s' });
  });
  afterAll(async () => { await short?.close(); });

  it('voids an authorization that is not captured in time', async () => {
    const f = await paymentsFixture(short);
    const res = await pay(short, f.merchant, CARDS.visa, { auto_capture: false });
    expect(res.body.data.status).toBe('AUTHORIZED');
    const canceled = await eventually(async () => {
      const p = await getPayment(short, f.merchant, res.body.data.id);
      return p.status === 'CANCELED' ? p : undefined;
    }, 20_000, 250);
    expect(canceled.cancellation_reason).toBe('authorization_expired');
    expect(canceled.charges[0].status).toBe('VOIDED');
  });

  it('cancels a payment that never succeeds in time, but not one that did', async () => {
    const f = await paymentsFixture(short);
    const idle = await createPayment(short, f.merchant);
    // Declined at its create: its expiry is armed only then, still counted from its creation.
    const declined = await createPayment(short, f.merchant, { confirm: true, payment_method: card(CARDS.declined) });
    expect(declined.body.data.status, JSON.stringify(declined.body)).toBe('FAILED');
    const paid = await pay(short, f.merchant, CARDS.visa);
    for (const id of [idle.body.data.id, declined.body.data.id]) {
      const canceled = await eventually(async () => {
        const p = await getPayment(short, f.merchant, id);
        return p.status === 'CANCELED' ? p : undefined;
      }, 20_000, 250);
      expect(canceled.cancellation_reason).toBe('expired');
    }
    expect((await getPayment(short, f.merchant, paid.body.data.id)).status).toBe('SUCCEEDED');
  });
});
