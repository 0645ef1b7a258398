import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startStack, TestStack } from '../support/stack';
import { startSimulator, TestSimulator } from '../support/payments';
import { spawnWorker, WorkerProcess } from '../support/worker-process';
import { DISPUTE_CARDS, disputeFixture, disputeOf, paidWith } from './support';

// Only child-process workers run in this file: an in-process worker would pick the tasks up instead.
let sim: TestSimulator;
let stack: TestStack;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '5000' });
});
afterAll(async () => {
  for (const w of workers) await w.stop().catch(() => {});
  await stack?.close();
  await sim?.close();
});

describe('a worker killed while a dispute waits for its evidence', () => {
  it('is replaced; the dispute\'s deadline timer and its answer carry on in the new worker', async () => {
    workers.push(await spawnWorker(stack));
    const f = await disputeFixture(stack);
    const paymentId = await paidWith(stack, f.merchant, DISPUTE_CARDS.fraudulent);
    const dispute = await disputeOf(stack, f.merchant, paymentId, (d) => d.balance_transactions.length > 0);
    await workers[0].kill();

    workers.push(await spawnWorker(stack));
    const res = await stack.http.post(`/v1/disputes/${dispute.id}/evidence`).set(bearer(f.merchant.secretKey))
      .send({ uncategorized_text: 'Signed for on delivery. winning_evidence', submit: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // WON and its funds' return are two notices: wait for both.
    const won = await disputeOf(stack, f.merchant, paymentId, (d) => d.status === 'WON' && d.balance_transactions.length === 2, 60_000);
    expect(won.balance_transactions.map((b: any) => b.kind)).toEqual(['withdrawn', 'reinstated']);
    expect(won.evidence_details.submission_count).toBe(1);
  }, 120_000);
});
