import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, card, createPayment, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually } from '../support/worker-process';

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let f: PaymentsFixture;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url });
  f = await paymentsFixture(stack);
  worker = await startWorker(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

async function authorized(amount: number): Promise<string> {
  const created = await createPayment(stack, f.merchant, { amount, auto_capture: false, confirm: true, payment_method: card(CARDS.visa) });
  expect(created.body.data?.status, JSON.stringify(created.body)).toBe('AUTHORIZED');
  return created.body.data.id;
}

const command = (paymentId: string, verb: 'capture' | 'cancel', key: string, body: object = {}) =>
  stack.http.post(`/v1/payments/${paymentId}/${verb}`).set(bearer(f.merchant.secretKey)).set('Idempotency-Key', key).send(body);

/** What a retry meets when the API died after the workflow took the command: no answer stored under the key. */
const loseTheAnswer = (key: string) => stack.db('core.idempotency_keys').where({ key }).del();

describe('a command retried with its Idempotency-Key after its answer was lost', () => {
  it('a capture that went through is answered as captured, not refused by the state it led to', async () => {
    const paymentId = await authorized(2100);
    const key = `capture-${paymentId}`;
    const first = await command(paymentId, 'capture', key);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    await loseTheAnswer(key);

    const retry = await command(paymentId, 'capture', key);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body.data).toMatchObject({ id: paymentId, status: 'SUCCEEDED', amount_received: 2100 });
    expect((await sim.stats()).charges.captured).toBeGreaterThanOrEqual(1);
    const charges = await stack.db('live.charges').where({ payment_id: paymentId });
    expect(charges.map((c) => [c.status, Number(c.captured_amount)])).toEqual([['CAPTURED', 2100]]);
  });

  it('a cancel likewise; another key is still refused by the state', async () => {
    const paymentId = await authorized(2200);
    const key = `cancel-${paymentId}`;
    expect((await command(paymentId, 'cancel', key)).status).toBe(200);
    await loseTheAnswer(key);
    const retry = await command(paymentId, 'cancel', key);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body.data.status).toBe('CANCELED');

    const other = await command(paymentId, 'cancel', `another-${paymentId}`);
    expect(other.status).toBe(409);
    expect(other.body.error.details.reason).toBe('invalid_state');
  });
});

describe('a capture sent the moment the payment reads AUTHORIZED', () => {
  it('is taken: the walk has left the lock by the time the row says AUTHORIZED', async () => {
    // A subscribed endpoint: the walk still holds the lock while it plans the events' deliveries.
    const receiver = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
      const endpoint = await stack.http.post('/v1/webhook-endpoints').set(bearer(f.merchant.secretKey)).send({ url });
      expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
      const results = await Promise.all([2301, 2302, 2303].map(captureOnceAuthorized));
      expect(results.map((r) => [r.status, r.body.data?.status])).toEqual([[200, 'SUCCEEDED'], [200, 'SUCCEEDED'], [200, 'SUCCEEDED']]);
    } finally {
      receiver.close();
    }
  });
});

async function captureOnceAuthorized(amount: number) {
  const created = await createPayment(stack, f.merchant, { amount, auto_capture: false });
  const paymentId = created.body.data.id as string;
  const confirming = stack.http.post(`/v1/payments/${paymentId}/confirm`).set(bearer(f.merchant.secretKey)).send({ payment_method: card(CARDS.visa) }).then((r) => r);
  await eventually(async () => (await stack.db('live.payments').where({ id: paymentId }).first('status'))?.status === 'AUTHORIZED', 15_000, 2);
  const captured = await stack.http.post(`/v1/payments/${paymentId}/capture`).set(bearer(f.merchant.secretKey)).send({});
  await confirming;
  return captured;
}
