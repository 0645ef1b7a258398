import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalTemporal, startLocalTemporal } from '../../scripts/local-temporal';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { card, CARDS, createPayment, pay, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually } from '../support/worker-process';
import { enabledEndpoint, Receiver } from '../webhooks/support';
import { freePort, sleep } from './support';

const LATENCY_MS = 2500;

/**
 * Its own Temporal dev server on a fixed port with a SQLite file, restarted in the middle of payments,
 * refunds and webhook deliveries. Everything completes once it is back, and nothing happens twice.
 */
describe('Temporal server restarted mid-flight', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-temporal-restart-'));
  const dbFile = join(dir, 'temporal.db');
  let port: number;
  let temporal: LocalTemporal | undefined;
  let sim: TestSimulator;
  let stack: TestStack;
  let worker: RunningWorker;
  let fx: PaymentsFixture;
  let receiver: Receiver;

  beforeAll(async () => {
    port = await freePort();
    temporal = await startLocalTemporal({ dbFile, port });
    sim = await startSimulator();
    stack = await startStack({ TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: 'default', SIMULATOR_URL: sim.url, RATE_LIMIT_RPS: '0' });
    worker = await startWorker(stack);
    fx = await paymentsFixture(stack, { primary: { latency_ms: LATENCY_MS } });
    receiver = await Receiver.start();
  });

  afterAll(async () => {
    await worker?.stop();
    await stack?.close();
    await temporal?.stop();
    await sim?.close();
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps its store in write-ahead mode (each commit synced, no rollback journal per transaction)', () => {
    expect(existsSync(`${dbFile}-wal`)).toBe(true);
  });

  it('completes every payment, refund and delivery exactly once', async () => {
    const endpoint = await enabledEndpoint(stack, fx.merchant, receiver, { events: ['*'] });
    // Deliveries take a while to be answered, so some are in flight when the server goes down.
    receiver.respond = (req) => (req.type === 'webhook_endpoint.verification' ? undefined : { status: 200, body: 'ok', delayMs: 1500 });

    const [first, second] = await Promise.all([pay(stack, fx.merchant, CARDS.visa), pay(stack, fx.merchant, CARDS.mastercard)]);
    expect([first.status, second.status]).toEqual([200, 200]);
    const toRefund = [first.body.data, second.body.data];

    const created = await Promise.all(Array.from({ length: 4 }, () => createPayment(stack, fx.merchant)));
    const newPayments = created.map((r) => { expect(r.status, JSON.stringify(r.body)).toBe(201); return r.body.data.id as string; });
    const inFlight = Promise.allSettled([
      ...newPayments.map((id) => stack.http.post(`/v1/payments/${id}/confirm`).set(bearer(fx.merchant.secretKey)).send({ payment_method: card(CARDS.visa) })),
      ...toRefund.map((p) => stack.http.post('/v1/refunds').set(bearer(fx.merchant.secretKey)).send({ payment_id: p.id, amount: 400 })),
    ]);

    // Once every command is accepted (payments PROCESSING, refunds PENDING), the provider calls are in flight.
    await eventually(async () => {
      const processing = await stack.db('live.payments').whereIn('id', newPayments).where({ status: 'PROCESSING' }).count<{ count: number }[]>('* as count');
      const refunds = await stack.db('live.refunds').whereIn('payment_id', toRefund.map((p) => p.id)).count<{ count: number }[]>('* as count');
      return Number(processing[0].count) === newPayments.length && Number(refunds[0].count) === toRefund.length;
    }, 15_000, 50);
    const restartedAt = Date.now();
    await temporal!.stop();
    temporal = undefined;
    await sleep(2000);
    temporal = await startLocalTemporal({ dbFile, port });
    const downMs = Date.now() - restartedAt;

    // The API answered every command either with its result or with 503 temporal_unavailable, never a 500.
    for (const result of await inFlight) {
      expect(result.status).toBe('fulfilled');
      const res = (result as PromiseFulfilledResult<{ status: number; body: any }>).value;
      expect([200, 201, 503], JSON.stringify(res.body)).toContain(res.status);
      if (res.status === 503) expect(res.body.error.details.reason).toBe('temporal_unavailable');
    }

    const allPayments = [...toRefund.map((p) => p.id), ...newPayments];
    await eventually(async () => {
      const rows = await stack.db('live.payments').whereIn('id', allPayments).select('id', 'status');
      const refunds = await stack.db('live.refunds').whereIn('payment_id', toRefund.map((p) => p.id)).select('status');
      return rows.every((r) => ['SUCCEEDED', 'PARTIALLY_REFUNDED'].includes(r.status)) && refunds.length === 2 && refunds.every((r) => r.status === 'SUCCEEDED');
    }, 60_000, 250);

    // The processor saw one charge per payment (each under its own idempotency key) and one refund per refund.
    const stats = await sim.stats();
    expect(stats.charges.total).toBe(allPayments.length);
    expect(stats.refunds).toBe(2);
    const charges = await stack.db('live.charges').whereIn('payment_id', allPayments).whereNot({ status: 'FAILED' });
    expect(charges.map((c) => c.payment_id).sort()).toEqual([...allPayments].sort());
    for (const charge of charges) expect((await sim.key(charge.id)).charge_id).toBeTruthy();

    // Every event's delivery succeeded, with one successful attempt, and reached the receiver once.
    const deliveries = await eventually(async () => {
      const rows = await stack.db('live.webhook_deliveries').where({ endpoint_id: endpoint.id });
      return rows.length > 0 && rows.every((d) => d.status === 'succeeded') ? rows : undefined;
    }, 60_000, 250);
    expect(deliveries.length).toBeGreaterThanOrEqual(allPayments.length * 2);
    const attempts = await stack.db('live.webhook_attempts').whereIn('delivery_id', deliveries.map((d) => d.id)).where('status_code', '>=', 200).where('status_code', '<', 300);
    const successes = new Map<string, number>();
    for (const a of attempts) successes.set(a.delivery_id, (successes.get(a.delivery_id) ?? 0) + 1);
    expect([...successes.values()].every((n) => n === 1)).toBe(true);
    expect(successes.size).toBe(deliveries.length);
    const received = receiver.events().map((r) => r.eventId);
    expect(received.length).toBe(new Set(received).size);
    expect(new Set(received).size).toBe(deliveries.length);
    console.log(`temporal restart: down ${downMs} ms; ${allPayments.length} payments, 2 refunds, ${deliveries.length} deliveries completed once`);
  }, 150_000);
});
