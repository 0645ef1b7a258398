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

describe('the fan-out of a payment\'s events, beside its answer', () => {
  it('answers before the fan-out runs, and a worker killed right after the answer still delivers the event once', async () => {
    const f = await paymentsFixture(stack);
    await enabledEndpoint(stack, f.merchant, receiver, { events: ['payment_intent.succeeded'] });
    const res = await createPayment(stack, f.merchant, { amount: 4300, confirm: true, payment_method: card(CARDS.visa) });
    expect(res.body.data.status, JSON.stringify(res.body)).toBe('SUCCEEDED');
    // Killed as the answer arrives: the fan-out, scheduled in the task that answered, is the next worker's.
    await workers[0].kill();
    workers.push(await spawnWorker(stack));
    const paymentId = res.body.data.id as string;
    const delivered = () => receiver.events().filter((r) => JSON.parse(r.body).data?.object?.id === paymentId);
    await waitFor(async () => delivered().length > 0, 'the payment_intent.succeeded delivery', 60_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(delivered().map((r) => r.type)).toEqual(['payment_intent.succeeded']);

    // In the history, the update completes in the workflow task that scheduled the one fan-out (an event
    // nobody listens to, payment_intent.created, schedules none), before that activity even starts.
    let seen: string[] = [];
    const events = await waitFor(async () => {
      seen = await historyOf(paymentId);
      return seen.at(-1) === 'EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED' ? seen : undefined;
    }, 'the workflow to end', 60_000).catch((err) => { throw new Error(`${err.message}: ${seen.join(' ')}`); });
    const fanOuts = events.filter((e) => e.endsWith(':fanOutEvents'));
    expect(fanOuts).toHaveLength(1);
    const answered = events.indexOf('EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED');
    expect(answered).toBeGreaterThan(events.indexOf(fanOuts[0]));
    expect(answered).toBeLessThan(events.indexOf('EVENT_TYPE_ACTIVITY_TASK_STARTED'));
  }, 180_000);
});
