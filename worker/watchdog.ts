import type { Client } from '@temporalio/client';
import { TASK_QUEUES } from '../workflows/contract';
import { STUCK_PAYMENT_WATCHDOG_ID, type StuckPaymentWatchdogInput } from '../workflows/watchdog-shared';

/** Looks at least every minute, and at least twice per threshold. */
export function watchdogInterval(thresholdMs: number): number {
  return Math.max(1000, Math.min(60_000, Math.floor(thresholdMs / 2)));
}

/**
 * Starts the stuck-payment watchdog unless it already runs (every worker calls this at boot; the
 * first one starts it, the others find it). Answers the run id.
 */
export async function ensureStuckPaymentWatchdog(client: Client, input: StuckPaymentWatchdogInput, workflowId = STUCK_PAYMENT_WATCHDOG_ID): Promise<string> {
  const handle = await client.workflow.start('stuckPaymentWatchdogWorkflow', {
    workflowId,
    taskQueue: TASK_QUEUES.payments,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    staticSummary: 'Stuck-payment watchdog',
    staticDetails: 'Creates one payment.stuck notification per payment left in PROCESSING longer than STUCK_PAYMENT_THRESHOLD.',
  });
  return handle.firstExecutionRunId;
}
