import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { temporal } from '@temporalio/proto';
import { paymentWorkflowId } from '../../contracts/payments';
import { startStack, TestStack } from '../support/stack';
import { card, CARDS, createPayment, paymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { spawnWorker, type WorkerProcess } from '../support/worker-process';
import { enabledEndpoint, Receiver, waitFor } from './support';

let sim: TestSimulator;
let stack: TestStack;
let receiver: Receiver;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  sim = await startSimulator();
  receiver = await Receiver.start();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '5000' });
  workers.push(await spawnWorker(stack));
}, 120_000);
afterAll(async () => {
  for (const worker of workers) await worker.stop();
  await stack?.close();
  await receiver?.close();
  await sim?.close();
});

/** The event types of a workflow's history, in order, each activity scheduled with its activity's name. */
async function historyOf(paymentId: string): Promise<string[]> {
  const client = await stack.deps.temporal();
  const history = await client.workflow.getHandle(paymentWorkflowId(paymentId)).fetchHistory();
  return (history.events ?? []).map((e) => {
    const type = temporal.api.enums.v1.EventType[e.eventType ?? 0];
    return e.activityTaskScheduledEventAttributes ? `${type}:${e.activityTaskScheduledEventAttributes.activityType?.name}` : type;
  });
}

describe('a payment\'s events go out through the outbox, beside its answer', () => {
  it('answers in its one workflow task, and a worker killed right after the answer still delivers the event once', async () => {
    const f = await paymentsFixture(stack);
    await enabledEndpoint(stack, f.merchant, receiver, { events: ['payment_intent.succeeded'] });
    const res = await createPayment(stack, f.merchant, { amount: 4300, confirm: true, payment_method: card(CARDS.visa) });
    expect(res.body.data.status, JSON.stringify(res.body)).toBe('SUCCEEDED');
    // Killed as the answer arrives: the event is due in the outbox, or held by the dead worker's dispatcher until its lease ends.
    await workers[0].kill();
    workers.push(await spawnWorker(stack));
    const paymentId = res.body.data.id as string;
    const delivered = () => receiver.events().filter((r) => JSON.parse(r.body).data?.object?.id === paymentId);
    await waitFor(async () => delivered().length > 0, 'the payment_intent.succeeded delivery', 90_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(delivered().map((r) => r.type)).toEqual(['payment_intent.succeeded']);

    // The history has no fan-out in it: the update's answer and the workflow's end come in its one workflow task.
    let seen: string[] = [];
    const events = await waitFor(async () => {
      seen = await historyOf(paymentId);
      return seen.at(-1) === 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED' ? seen : undefined;
    }, 'the workflow to end', 60_000).catch((err) => { throw new Error(`${err.message}: ${seen.join(' ')}`); });
    expect(events.filter((e) => e.startsWith('EVENT_TYPE_ACTIVITY_TASK'))).toEqual([]);
    expect(events.filter((e) => e === 'EVENT_TYPE_WORKFLOW_TASK_COMPLETED')).toHaveLength(1);
    expect(events.indexOf('EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED')).toBeGreaterThan(events.indexOf('EVENT_TYPE_WORKFLOW_TASK_COMPLETED'));
  }, 180_000);
});
