/**
 * The watchdog's command client: the only code that starts the stuck-payment watchdog from the client
 * side (every worker at boot; docs/architecture.md), by the workflow function.
 */
import type { Client } from '@temporalio/client';
import { TASK_QUEUES } from '../../contracts/temporal';
import { STUCK_PAYMENT_WATCHDOG_ID, type StuckPaymentWatchdogInput } from '../../contracts/watchdog';
import { stuckPaymentWatchdogWorkflow } from './workflow';

/**
 * Starts the stuck-payment watchdog unless it already runs (every worker calls this at boot; the
 * first one starts it, the others find it). Answers the run id.
 */
export async function ensureStuckPaymentWatchdog(client: Client, input: StuckPaymentWatchdogInput, workflowId = STUCK_PAYMENT_WATCHDOG_ID): Promise<string> {
  const handle = await client.workflow.start(stuckPaymentWatchdogWorkflow, {
    workflowId,
    taskQueue: TASK_QUEUES.payments,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    staticSummary: 'Stuck-payment watchdog',
    staticDetails: 'Creates one payment.stuck notification per payment left in PROCESSING longer than STUCK_PAYMENT_THRESHOLD.',
  });
  return handle.firstExecutionRunId;
}
