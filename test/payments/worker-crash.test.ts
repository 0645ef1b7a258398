import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startStack, TestStack } from '../support/stack';
import { CARDS, card, confirm, createPayment, getPayment, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually, spawnWorker, WorkerProcess } from '../support/worker-process';
import { paymentWorkflowId } from '../../contracts/payments';

// Only child-process workers run in this file: an in-process worker would pick the task up instead.
let sim: TestSimulator;
let stack: TestStack;
let f: PaymentsFixture;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '10000' });
  // The processor takes 3 s to answer: long enough to kill the worker while the authorization is in flight.
  f = await paymentsFixture(stack, { primary: { latency_ms: 3000 } });
});
afterAll(async () => {
  for (const w of workers) await w.stop().catch(() => {});
  await stack?.close();
  await sim?.close();
});

describe('a worker killed in the middle of a confirm', () => {
  it('is replaced, the payment completes, and the processor saw exactly one authorization', async () => {
    const first = await spawnWorker(stack);
    workers.push(first);
    const created = await createPayment(stack, f.merchant, { amount: 4200 });
    const paymentId = created.body.data.id;
    const confirming = confirm(stack, f.merchant, paymentId, { payment_method: card(CARDS.visa) });

    // The charge row exists and the authorize call is in flight at the processor: kill the worker now.
    const chargeId = await eventually(async () => (await stack.db('live.charges').where({ payment_id: paymentId }).first('id'))?.id as string | undefined);
    await eventually(async () => (await sim.key(chargeId)).calls >= 1);
    await first.kill();

    const second = await spawnWorker(stack);
    workers.push(second);
    const response = await confirming;
    expect(response.status).toBe(200);
    expect(['PROCESSING', 'SUCCEEDED']).toContain(response.body.data.status);

    const payment = await eventually(async () => {
      const p = await getPayment(stack, f.merchant, paymentId);
      return p.status === 'SUCCEEDED' ? p : undefined;
    }, 60_000, 250);
    expect(payment.charges).toHaveLength(1);
    expect(payment.charges[0]).toMatchObject({ id: chargeId, status: 'CAPTURED', captured_amount: 4200, payment_provider_config_id: f.primary.id });
    // The retried activity asked again with the same key and got the first answer back.
    const stats = await sim.stats();
    expect(stats.charges.total).toBe(1);
    expect(stats.charges.captured).toBe(1);
    const key = await sim.key(chargeId);
    expect(key.operation).toBe('authorize');
    expect(key.charge_id).toBeTruthy();
  }, 90_000);

  it('with the create (the first attempt made with the row): the same charge id, one authorization', async () => {
    // The earlier test's worker would take the task: only this test's workers run.
    for (const w of workers.splice(0)) await w.stop();
    const before = (await sim.stats()).charges.total;
    const first = await spawnWorker(stack);
    workers.push(first);
    const creating = createPayment(stack, f.merchant, { amount: 4300, confirm: true, payment_method: card(CARDS.visa) });

    // The row, its plan and the charge row are written and the authorize call is in flight: kill the worker.
    const charge = await eventually(async () => stack.db('live.charges').where({ amount: 4300 }).first('id', 'payment_id') as Promise<{ id: string; payment_id: string } | undefined>);
    await eventually(async () => (await sim.key(charge.id)).calls >= 1);
    await first.kill();

    const second = await spawnWorker(stack);
    workers.push(second);
    const response = await creating;
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    expect(['PROCESSING', 'SUCCEEDED']).toContain(response.body.data.status);

    const payment = await eventually(async () => {
      const p = await getPayment(stack, f.merchant, charge.payment_id);
      return p.status === 'SUCCEEDED' ? p : undefined;
    }, 60_000, 250);
    // The retried workflow task minted the same charge id (the processor's idempotency key) and got the
    // first answer back: one charge, one authorization at the processor.
    expect(payment.charges).toHaveLength(1);
    expect(payment.charges[0]).toMatchObject({ id: charge.id, status: 'CAPTURED', captured_amount: 4300 });
    expect((await sim.stats()).charges.total).toBe(before + 1);
    const history = await (await stack.deps.temporal()).workflow.getHandle(paymentWorkflowId(charge.payment_id)).fetchHistory();
    // The killed worker held the workflow task: it timed out, and the second worker ran it again.
    expect(history.events?.filter((e) => e.workflowTaskTimedOutEventAttributes)).toHaveLength(1);
  }, 90_000);
});

describe('a capture sent while the worker that ran the confirm is dead', () => {
  it('waits for the walk the next worker runs again, then captures: no 409 for a PROCESSING it never meant', async () => {
    for (const w of workers.splice(0)) await w.stop();
    const first = await spawnWorker(stack);
    workers.push(first);
    const created = await createPayment(stack, f.merchant, { amount: 4400, auto_capture: false });
    const paymentId = created.body.data.id;
    const confirming = confirm(stack, f.merchant, paymentId, { payment_method: card(CARDS.visa) });
    const chargeId = await eventually(async () => (await stack.db('live.charges').where({ payment_id: paymentId }).first('id'))?.id as string | undefined);
    await eventually(async () => (await sim.key(chargeId)).calls >= 1);
    await first.kill();

    // Sent before any worker runs: the next workflow task holds the confirm and this capture together.
    const capturing = stack.http.post(`/v1/payments/${paymentId}/capture`).set(bearer(f.merchant.secretKey)).send({}).then((r) => r);
    workers.push(await spawnWorker(stack));
    const captured = await capturing;
    expect(captured.status, JSON.stringify(captured.body)).toBe(200);
    expect(captured.body.data).toMatchObject({ status: 'SUCCEEDED', amount_received: 4400 });
    expect((await confirming).status).toBe(200);
    const charges = await stack.db('live.charges').where({ payment_id: paymentId });
    expect(charges.map((c) => [c.id, c.status])).toEqual([[chargeId, 'CAPTURED']]);
  }, 90_000);
});
