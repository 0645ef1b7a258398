import { condition, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';

const { processorCall, deliver } = proxyActivities<{ processorCall(): Promise<void>; deliver(url: string, n: number): Promise<void> }>({ startToCloseTimeout: '10s' });

export const floorConfirm = defineUpdate<string>('confirm');

/**
 * The floor: the least a durable payment on Temporal must cost — a workflow start, one update, and
 * one no-op activity standing for the processor call.
 */
export async function floorPaymentWorkflow(): Promise<void> {
  let done = false;
  setHandler(floorConfirm, async () => {
    await processorCall();
    done = true;
    return 'SUCCEEDED';
  });
  await condition(() => done);
}

/** The delivery floor: one workflow and one activity that POSTs one event to the receiver. */
export async function floorDeliveryWorkflow(url: string, n: number): Promise<void> {
  await deliver(url, n);
}
