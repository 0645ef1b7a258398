import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startStack, TestStack } from '../support/stack';
import { CARDS, card, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually, spawnWorker, WorkerProcess } from '../support/worker-process';
import { ChildProcessHandle, spawnApi } from './support';
import { paymentWorkflowId } from '../../contracts/payments';

// The processor takes 3 s to answer: long enough to kill the API while its create is in flight.
const LATENCY_MS = 3000;

let sim: TestSimulator;
let stack: TestStack;
let f: PaymentsFixture;
let worker: WorkerProcess;
const apis: ChildProcessHandle[] = [];

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '10000' });
  f = await paymentsFixture(stack, { primary: { latency_ms: LATENCY_MS } });
  worker = await spawnWorker(stack);
});
afterAll(async () => {
  for (const api of apis) if (api.proc.exitCode === null) api.proc.kill('SIGKILL');
  await worker?.stop().catch(() => {});
  await stack?.close();
  await sim?.close();
});

async function api(): Promise<supertest.Agent> {
  const started = await spawnApi(stack);
  apis.push(started);
  return supertest.agent(started.url);
}

function create(http: supertest.Agent, key: string, amount: number) {
  return http.post('/v1/payments').set(bearer(f.merchant.secretKey)).set('Idempotency-Key', key)
    .send({ amount, currency: 'USD', confirm: true, payment_method: card(CARDS.visa) });
}

const claimOf = (key: string) => stack.db('core.idempotency_keys').where({ key }).first();

/**
 * The resource id the claim reserved. The claim's row is written before its id is reserved, so a read
 * between the two finds null: wait past it (a null had been taken for the id, and the test looked for payment/null).
 */
const reservedId = (key: string): Promise<string> => eventually(async () => ((await claimOf(key))?.resource_id as string | null) ?? undefined);

/** The charge reached the processor: its row is written and the simulator was called with its key. */
async function charged(paymentId: string): Promise<boolean> {
  const charge = await stack.db('live.charges').where({ payment_id: paymentId }).first('id');
  return Boolean(charge) && (await sim.key(charge.id)).calls >= 1;
}

/** Where the payment's workflow stands, and what the worker printed: a failed precondition says why. */
async function whyNotCharged(paymentId: string): Promise<string> {
  const client = await stack.deps.temporal();
  const open = await client.workflow.count('ExecutionStatus="Running"').catch((err: Error) => err.message);
  const handle = client.workflow.getHandle(paymentWorkflowId(paymentId));
  // A workflow that was never started is an answer too: its lookup's error stands in for its state.
  const workflow = await Promise.all([handle.describe(), handle.fetchHistory()]).then(([{ raw }, history]) => [
    // Which worker took its tasks (an SDK worker's identity is pid@host): another file's worker left behind would show here.
    `workflow tasks taken by ${JSON.stringify(history.events?.map((e) => e.workflowTaskStartedEventAttributes?.identity).filter(Boolean))}`,
    `pending workflow task: ${JSON.stringify(raw.pendingWorkflowTask)}`,
    `pending activities: ${JSON.stringify(raw.pendingActivities)}`,
    `history length: ${String(raw.workflowExecutionInfo?.historyLength)}`,
  ], (err: Error) => [`the payment's workflow could not be read: ${err.message}`]);
  return [
    `this file's worker: pid ${String(worker.proc.pid)}`,
    ...workflow,
    `open workflows in the namespace: ${JSON.stringify(open)}`,
    `the worker's last output:\n${worker.recentOutput().slice(-6000)}`,
  ].join('\n');
}

describe('an Idempotency-Key claimed by a request whose API process dies', () => {
  it('is taken over by the next retry at once: one payment, one charge, the retry answered with it', async () => {
    const key = `crash-${Date.now()}`;
    const first = await api();
    const inFlight = create(first, key, 4300).then((r) => r, (err: Error) => err);
    // The claim is written and the authorization is at the processor: kill the API now.
    const paymentId = await reservedId(key);
    // A precondition, not a measure: on a loaded CI machine the fresh worker's first task can take a while.
    await eventually(() => charged(paymentId), 60_000)
      .catch(async () => { throw new Error(`the charge did not reach the processor in 60 s\n${await whyNotCharged(paymentId)}`); });
    apis[apis.length - 1].proc.kill('SIGKILL');
    expect(await inFlight).toBeInstanceOf(Error);

    const second = await api();
    const retriedAt = Date.now();
    const retry = await create(second, key, 4300);
    expect(retry.status, JSON.stringify(retry.body)).toBe(201);
    expect(retry.body.data.id).toBe(paymentId);
    expect(Date.now() - retriedAt).toBeLessThan(LATENCY_MS + 10_000);

    const charges = await stack.db('live.charges').where({ payment_id: paymentId });
    expect(charges).toHaveLength(1);
    expect((await sim.key(charges[0].id)).calls).toBeGreaterThanOrEqual(1);
    const payments = await stack.db('live.payments').where({ account_id: f.merchant.account.id, amount: 4300 });
    expect(payments.map((p) => p.id)).toEqual([paymentId]);
    const settled = await eventually(async () => {
      const res = await second.get(`/v1/payments/${paymentId}`).set(bearer(f.merchant.secretKey));
      return res.body.data.status === 'SUCCEEDED' ? res.body.data : undefined;
    });
    expect(settled.amount_received).toBe(4300);
  }, 120_000);

  it('still answers 409 to a retry while the claiming process is alive, then replays its answer', async () => {
    const key = `alive-${Date.now()}`;
    const [http, other] = [await api(), await api()];
    const inFlight = create(http, key, 4400).then((r) => r);
    await reservedId(key);

    const early = await create(other, key, 4400);
    expect(early.status, JSON.stringify(early.body)).toBe(409);
    expect(early.body.error.details.reason).toBe('idempotency_key_in_use');

    const answered = await inFlight;
    expect(answered.status).toBe(201);
    const replay = await create(http, key, 4400);
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data.id).toBe(answered.body.data.id);
  }, 90_000);
});
