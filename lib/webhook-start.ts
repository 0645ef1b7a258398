import type { Client } from '@temporalio/client';
import { WorkflowIdReusePolicy } from '@temporalio/common';
import { TASK_QUEUES } from '../workflows/shared';
import type { DeliveryTrigger, WebhookDeliveryInput, WebhookDeliveryResult, WebhookEnvironment } from '../workflows/webhook-shared';
import { isAlreadyStarted } from '../workflows/client';

/** Moved to workflows/client.ts; re-exported until the webhooks client takes over these starts. */
export { isAlreadyStarted };

/**
 * Starts one delivery workflow. REJECT_DUPLICATE: a workflow id that already ran — even to completion —
 * is never run again, so a retried fan-out cannot deliver twice. Returns false when it already existed.
 */
export async function startDeliveryWorkflow(client: Client, args: {
  workflowId: string;
  environment: WebhookEnvironment;
  deliveryId: string;
  retrySchedule: number[];
  trigger: DeliveryTrigger;
}): Promise<boolean> {
  const input: WebhookDeliveryInput = {
    environment: args.environment, deliveryId: args.deliveryId, retrySchedule: args.retrySchedule, trigger: args.trigger,
  };
  try {
    await client.workflow.start<(i: WebhookDeliveryInput) => Promise<WebhookDeliveryResult>>('webhookDeliveryWorkflow', {
      workflowId: args.workflowId,
      taskQueue: TASK_QUEUES.webhooks,
      args: [input],
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    });
    return true;
  } catch (err) {
    if (isAlreadyStarted(err)) return false;
    throw err;
  }
}
