import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalTemporal, startLocalTemporal } from '../../scripts/local-temporal';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { card, CARDS, createPayment, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually, spawnWorker } from '../support/worker-process';
import { sleep, spawnApi } from './support';

const LATENCY_MS = 3000;

/** SIGTERM to real API and worker processes while they are in the middle of something slow. */
describe('graceful shutdown', () => {
  let temporal: LocalTemporal;
  let sim: TestSimulator;
  let stack: TestStack;
  let worker: RunningWorker | undefined;
  let fx: PaymentsFixture;

  beforeAll(async () => {
    temporal = await startLocalTemporal({});
    sim = await startSimulator();
    stack = await startStack({ TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: 'default', SIMULATOR_URL: sim.url, RATE_LIMIT_RPS: '0' });
    fx = await paymentsFixture(stack, { primary: { latency_ms: LATENCY_MS } });
  });

  afterAll(async () => {
    await worker?.stop();
    await stack?.close();
    await temporal?.stop();
    await sim?.close();
  });

  it('the API finishes the slow request in flight, refuses new ones, and exits 0', async () => {
    worker = await startWorker(stack);
    const api = await spawnApi(stack);
    const http = supertest(api.url);
    const created = await http.post('/v1/payments').set(bearer(fx.merchant.secretKey)).send({ amount: 1000, currency: 'USD' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);

    const started = Date.now();
    const slow = http.post(`/v1/payments/${created.body.data.id}/confirm`).set(bearer(fx.merchant.secretKey)).send({ payment_method: card(CARDS.visa) }).then((r) => r);
    await sleep(500);
    api.proc.kill('SIGTERM');
    await sleep(200);
    const refused = await fetch(`${api.url}/healthz`).then((r) => r.status, (err: Error) => err.name);
    expect(refused).not.toBe(200);

    const res = await slow;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.status).toBe('SUCCEEDED');
    expect(Date.now() - started).toBeGreaterThanOrEqual(LATENCY_MS);
    expect(await api.exited).toBe(0);
    expect(api.output()).toContain('api stopping');
    await worker.stop();
    worker = undefined;
  });

  it('the worker finishes the activity in flight before it exits: the processor is called once', async () => {
    const child = await spawnWorker(stack);
    const created = await createPayment(stack, fx.merchant);
    const id = created.body.data.id as string;
    const confirm = stack.http.post(`/v1/payments/${id}/confirm`).set(bearer(fx.merchant.secretKey)).send({ payment_method: card(CARDS.visa) }).then((r) => r);
    const charge = await eventually(async () => {
      const row = await stack.db('live.charges').where({ payment_id: id }).first();
      return row && (await sim.key(row.id)).calls > 0 ? row : undefined;
    }, 15_000, 50);

    const stoppingAt = Date.now();
    child.proc.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => {
      if (child.proc.exitCode !== null) resolve(child.proc.exitCode);
      else child.proc.once('exit', (c) => resolve(c));
    });
    const drainedMs = Date.now() - stoppingAt;
    expect(code).toBe(0);
    // The authorization was answered and reported before the process left.
    expect(drainedMs).toBeGreaterThan(LATENCY_MS / 2);

    worker = await startWorker(stack);
    await confirm;
    await eventually(async () => (await stack.db('live.payments').where({ id }).first()).status === 'SUCCEEDED', 30_000, 100);
    const key = await sim.key(charge.id);
    expect(key.calls).toBe(1);
    expect(await stack.db('live.charges').where({ payment_id: id })).toHaveLength(1);
    console.log(`graceful shutdown: worker drained its activity in ${drainedMs} ms`);
  });
});
