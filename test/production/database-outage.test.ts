import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { LocalTemporal, startLocalTemporal } from '../../scripts/local-temporal';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { card, CARDS, createPayment, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually } from '../support/worker-process';
import { sleep, TcpProxy } from './support';
import { createDb } from '../../db/knex';

const OUTAGE_MS = 4000;

/**
 * The stack (API and worker) reaches Postgres through a proxy this test cuts for a few seconds while
 * payments are in flight. Its own Temporal server, so no other test file's worker runs these workflows.
 */
describe('Postgres unavailable for a few seconds', () => {
  let temporal: LocalTemporal;
  let proxy: TcpProxy;
  let sim: TestSimulator;
  let stack: TestStack;
  let worker: RunningWorker;
  let fx: PaymentsFixture;

  beforeAll(async () => {
    temporal = await startLocalTemporal({});
    const pg = new URL(inject('databaseUrl'));
    proxy = await TcpProxy.start(pg.hostname, Number(pg.port || 5432));
    const proxied = new URL(pg);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    sim = await startSimulator();
    stack = await startStack({
      DATABASE_URL: proxied.toString(), TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: 'default', SIMULATOR_URL: sim.url, RATE_LIMIT_RPS: '0',
    });
    worker = await startWorker(stack);
    fx = await paymentsFixture(stack, { primary: { latency_ms: 1500 } });
  });

  afterAll(async () => {
    await worker?.stop();
    await stack?.close();
    await proxy?.close();
    await temporal?.stop();
    await sim?.close();
  });

  it('answers 503 database_unavailable meanwhile, and every payment completes once it is back', async () => {
    const key = fx.merchant.secretKey;
    const created = await Promise.all(Array.from({ length: 3 }, () => createPayment(stack, fx.merchant)));
    const ids = created.map((r) => r.body.data.id as string);
    const confirms = Promise.all(ids.map((id) => stack.http.post(`/v1/payments/${id}/confirm`).set(bearer(key)).send({ payment_method: card(CARDS.visa) })));
    await eventually(async () => (await stack.db('live.payments').whereIn('id', ids).where({ status: 'PROCESSING' })).length === ids.length, 15_000, 50);

    const cutAt = Date.now();
    proxy.cut();
    const read = await stack.http.get(`/v1/payments/${ids[0]}`).set(bearer(key));
    const list = await stack.http.get('/v1/customers').set(bearer(key));
    const write = await stack.http.post('/v1/customers').set(bearer(key)).send({ name: 'Written during the outage', email: 'outage@example.com' });
    // A create is a workflow command; it checks Postgres before starting anything (credentials and the
    // account may come from the API's short cache), so it too is refused at once.
    const command = await stack.http.post('/v1/payments').set(bearer(key)).send({ amount: 500, currency: 'USD' });
    // With confirm the card is vaulted before the start, and that write is what refuses it.
    const createAndConfirm = await stack.http.post('/v1/payments').set(bearer(key)).send({ amount: 500, currency: 'USD', confirm: true, payment_method: card(CARDS.visa) });
    for (const res of [read, list, write, command, createAndConfirm]) {
      expect(res.status, JSON.stringify(res.body)).toBe(503);
      expect(res.body.error.details.reason).toBe('database_unavailable');
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(JSON.stringify(res.body)).not.toMatch(/select|insert|ECONN|at .*\.ts/i);
    }
    const ready = await stack.http.get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body.error.details.database).toBe(false);
    await sleep(Math.max(0, OUTAGE_MS - (Date.now() - cutAt)));
    proxy.restore();
    const restoredAt = Date.now();

    // The confirm calls in flight answered with the payment or with 503, never a 500.
    for (const res of await confirms) expect([200, 503], JSON.stringify(res.body)).toContain(res.status);

    const rows = await eventually(async () => {
      const payments = await stack.db('live.payments').whereIn('id', ids);
      return payments.every((p) => p.status === 'SUCCEEDED') ? payments : undefined;
    }, 60_000, 250);
    const recoveredMs = Date.now() - restoredAt;

    // Nothing half-written: one captured charge per payment for its amount, one succeeded event each, one
    // processor charge each; and the writes refused during the outage left nothing behind.
    const charges = await stack.db('live.charges').whereIn('payment_id', ids);
    expect(charges.filter((c) => c.status !== 'FAILED').map((c) => c.payment_id).sort()).toEqual([...ids].sort());
    for (const payment of rows) {
      const charge = charges.find((c) => c.payment_id === payment.id && c.status !== 'FAILED');
      expect(Number(charge.captured_amount)).toBe(Number(payment.amount));
      expect((await sim.key(charge.id)).charge_id).toBeTruthy();
      const succeeded = await stack.db('live.events').where({ payment_id: payment.id, event: 'payment_intent.succeeded' });
      expect(succeeded).toHaveLength(1);
    }
    expect((await sim.stats()).charges.total).toBe(ids.length);
    expect(await stack.db('live.customers').where({ account_id: fx.merchant.account.id, name: 'Written during the outage' })).toHaveLength(0);
    expect(await stack.db('live.payments').where({ account_id: fx.merchant.account.id, amount: 500 })).toHaveLength(0);

    const after = await stack.http.get(`/v1/payments/${ids[0]}`).set(bearer(key));
    expect(after.status).toBe(200);
    expect(after.body.data.status).toBe('SUCCEEDED');
    console.log(`postgres outage: ${OUTAGE_MS} ms; payments all SUCCEEDED ${recoveredMs} ms after it returned; the create sent meanwhile answered ${command.status}`);
  }, 120_000);
});

/**
 * Postgres up but refusing new connections (`too many clients`, SQLSTATE 53300: every connection slot
 * taken by other processes) is the database being unavailable, not a fault of ours: 503, never a 500.
 * The API here connects as a role whose connection limit is 0, which Postgres refuses the same way.
 */
describe('Postgres refusing connections (too many clients)', () => {
  const role = `sb_full_${process.pid}_${Date.now()}`;
  let stack: TestStack;
  let admin: TestStack['db'];

  beforeAll(async () => {
    const url = new URL(inject('databaseUrl'));
    admin = createDb(url.toString(), { max: 1 });
    // With a password, so that servers which authenticate (the embedded one) get as far as the limit.
    await admin.raw(`CREATE ROLE "${role}" LOGIN PASSWORD 'full' CONNECTION LIMIT 0`);
    url.username = role;
    url.password = 'full';
    stack = await startStack({ DATABASE_URL: url.toString() });
  });

  afterAll(async () => {
    await stack?.close();
    await admin?.raw(`DROP ROLE IF EXISTS "${role}"`);
    await admin?.destroy();
  });

  it('answers 503 database_unavailable with Retry-After', async () => {
    const read = await stack.http.get('/v1/payments/pay_01M88D78TNTW8T3ECFB0HSBAQ1').set(bearer('sk_test_00000000000000000000000000000000'));
    expect(read.status, JSON.stringify(read.body)).toBe(503);
    expect(read.body.error.details.reason).toBe('database_unavailable');
    expect(Number(read.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(read.body)).not.toMatch(/too many|role|53300/i);
  });
});
