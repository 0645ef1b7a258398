import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envTable } from '../../db/environments';
import { createMerchant, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { emit, enabledEndpoint, environmentOf, getDelivery, Receiver, waitForDelivery } from './support';

// Two attempts per account in flight, four activity slots in all: one tenant's hanging endpoint can
// take half the slots, never the other half.
let stack: TestStack;
let worker: RunningWorker;
const receivers: Receiver[] = [];

beforeAll(async () => {
  stack = await startStack({ WEBHOOK_ACCOUNT_CONCURRENCY: '2', WEBHOOK_RETRY_SCHEDULE: '200ms' });
  worker = await startWorker(stack, { maxConcurrentActivityTaskExecutions: 4 });
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(): Promise<Receiver> {
  const r = await Receiver.start();
  receivers.push(r);
  return r;
}

describe('webhook fairness across accounts', () => {
  it('delivers one account\'s event at once while another account\'s slow endpoint has a queue, holding it to its share', async () => {
    const slowMerchant = await createMerchant(stack);
    const slow = await receiver();
    await enabledEndpoint(stack, slowMerchant, slow);
    let inFlight = 0;
    let mostInFlight = 0;
    slow.respond = (req) => {
      if (req.type === 'webhook_endpoint.verification') return undefined;
      inFlight += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      setTimeout(() => { inFlight -= 1; }, 2_000);
      return { status: 200, body: 'ok', delayMs: 2_000 };
    };
    const quickMerchant = await createMerchant(stack);
    const quick = await receiver();
    await enabledEndpoint(stack, quickMerchant, quick);

    const queued = await emit(stack, slowMerchant, Array.from({ length: 8 }, () => ({ event: 'payment_intent.succeeded' })));
    while (slow.events().length < 2) await new Promise((r) => setTimeout(r, 50));
    const started = Date.now();
    const { deliveryIds: [quickId] } = await emit(stack, quickMerchant, [{ event: 'payment_intent.succeeded' }]);
    await waitForDelivery(stack, quickMerchant, quickId, 'succeeded');
    // Without the per-account limit the four slots are the slow endpoint's for two seconds at least.
    expect(Date.now() - started).toBeLessThan(1_500);

    for (const id of queued.deliveryIds) {
      const delivery = await waitForDelivery(stack, slowMerchant, id, 'succeeded', 30_000);
      expect(delivery.attempt_count).toBe(1); // a turn given back for fairness is not an attempt
    }
    expect(mostInFlight).toBe(2);
  });

  it('gives an endpoint that is already failing 5 s, not 15, to answer', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    r.respond = (req) => (req.type === 'webhook_endpoint.verification' ? undefined : { status: 200, body: 'late', delayMs: 9_000 });
    await stack.db(envTable(environmentOf(m), 'webhook_endpoints')).where({ id: endpoint.id }).update({ failing_since: new Date() });

    const { deliveryIds: [id] } = await emit(stack, m, [{ event: 'payment_intent.succeeded' }]);
    const delivery = await waitForDelivery(stack, m, id, 'dead_lettered', 30_000);
    const attempts = (await getDelivery(stack, m, delivery.id)).attempts;
    expect(attempts.length).toBeGreaterThan(0);
    for (const attempt of attempts) {
      expect(attempt.error).toBe('timeout: no complete answer within 5 s');
      expect(attempt.duration_ms).toBeGreaterThanOrEqual(4_900);
      expect(attempt.duration_ms).toBeLessThan(7_000);
    }
  }, 40_000);
});
