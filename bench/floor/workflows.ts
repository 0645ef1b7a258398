import { condition, defineUpdate, proxyActivities, proxyLocalActivities, setHandler } from '@temporalio/workflow';

interface FloorActivities { processorCall(): Promise<void>; deliver(url: string, n: number): Promise<void> }

const { processorCall, deliver } = proxyActivities<FloorActivities>({ startToCloseTimeout: '10s' });
// As the engine makes its processor call (workflows/payments/proxies.ts, `attempts`): a local activity,
// run inside the workflow task that accepted the update, with no round trip through the server.
const local = proxyLocalActivities<FloorActivities>({ startToCloseTimeout: '10s' });

export const floorConfirm = defineUpdate<string>('confirm');

/**
 * The floor: the least a durable payment on Temporal must cost — a workflow start, one update, and
 * one no-op call standing for the processor call. The engine makes that call as a local activity
 * (floorLocalPaymentWorkflow); this older floor makes it as an ordinary activity, kept for comparison.
 */
export async function floorPaymentWorkflow(): Promise<void> {
  await confirmedBy(processorCall);
}

/** The floor with every technique the engine uses: the processor call as a local activity. */
export async function floorLocalPaymentWorkflow(): Promise<void> {
  await confirmedBy(local.processorCall);
}

/** Answers the confirm update after one `call`, then ends. */
async function confirmedBy(call: () => Promise<void>): Promise<void> {
  let done = false;
  setHandler(floorConfirm, async () => {
    await call();
    done = true;
    return 'SUCCEEDED';
  });
  await condition(() => done);
}

/** The delivery floor: one workflow and one activity that POSTs one event to the receiver. */
export async function floorDeliveryWorkflow(url: string, n: number): Promise<void> {
  await deliver(url, n);
}

export { floorDisputeWorkflow } from './disputes';
