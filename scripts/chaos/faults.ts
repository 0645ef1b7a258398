import type { ChaosStack } from './stack';
import { sleep } from './processes';

/**
 * The faults the chaos suite injects, in the order it injects them. Each one ends with the stack whole
 * again (the killed processes started again, the processor's fault cleared), so that the next fault
 * falls on a working system; what it broke, the clients' retries and the workflows must mend.
 */
export const FAULTS = [
  'kill-worker-a', 'kill-worker-b', 'kill-temporal', 'kill-api', 'cut-postgres', 'kill-both-workers', 'processor-hangs', 'processor-500-after-work',
] as const;

export type Fault = (typeof FAULTS)[number];

/** How long the processor stays faulty, and how long it holds each answer while it hangs. */
export const PROCESSOR_FAULT_MS = 6_000;
/** Beyond the provider call's timeout (PROVIDER_TIMEOUT_MS, 10 s by default): the call ends with no answer. */
export const HANG_MS = 15_000;

export function parseFaults(value: string | undefined, fallback: readonly Fault[]): Fault[] {
  if (!value) return [...fallback];
  const names = value.split(',').map((name) => name.trim()).filter(Boolean);
  const unknown = names.filter((name) => !(FAULTS as readonly string[]).includes(name));
  if (unknown.length) throw new Error(`CHAOS_FAULTS: unknown fault ${unknown.join(', ')} (known: ${FAULTS.join(', ')})`);
  return names as Fault[];
}

async function setProcessorFaults(stack: ChaosStack, knobs: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${stack.simulatorUrl}/_inspect/faults`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(knobs), signal: AbortSignal.timeout(5_000),
  });
  if (!res.ok) throw new Error(`the simulator refused its faults ${JSON.stringify(knobs)}: ${res.status} ${await res.text()}`);
}

async function processorFault(stack: ChaosStack, knobs: Record<string, unknown>): Promise<void> {
  await setProcessorFaults(stack, knobs);
  try {
    await sleep(PROCESSOR_FAULT_MS);
  } finally {
    await setProcessorFaults(stack, {});
  }
}

/** Injects one fault and brings the stack back; a line saying what happened. */
export async function inject(stack: ChaosStack, fault: Fault): Promise<string> {
  const [workerA, workerB] = stack.workers;
  switch (fault) {
    case 'kill-worker-a':
    case 'kill-worker-b': {
      const worker = fault === 'kill-worker-a' ? workerA : workerB;
      await worker.kill();
      await sleep(1_000);
      await worker.start();
      return `${worker.spec.name} SIGKILLed, started again`;
    }
    case 'kill-temporal':
      await stack.temporal.kill();
      await sleep(2_000);
      await stack.temporal.start();
      return 'Temporal server SIGKILLed, started again on its port and store';
    case 'kill-api':
      await stack.api.kill();
      await sleep(1_000);
      await stack.api.start();
      return 'API SIGKILLed, started again';
    case 'cut-postgres':
      return `${await stack.cutPostgres()} Postgres backends terminated`;
    case 'kill-both-workers':
      await Promise.all([workerA.kill(), workerB.kill()]);
      await sleep(2_000);
      await Promise.all([workerA.start(), workerB.start()]);
      return 'both workers SIGKILLed at once, started again';
    case 'processor-hangs':
      await processorFault(stack, { latency_ms: HANG_MS });
      return `processor held every answer ${HANG_MS / 1000} s for ${PROCESSOR_FAULT_MS / 1000} s`;
    case 'processor-500-after-work':
      await processorFault(stack, { error_after_work: true });
      return `processor answered 500 after doing the work for ${PROCESSOR_FAULT_MS / 1000} s`;
  }
}
