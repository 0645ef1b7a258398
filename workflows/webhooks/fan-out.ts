import { proxyActivities } from '@temporalio/workflow';
import { TASK_QUEUES } from '../../contracts/temporal';
import type { EventFanOutActivities, FanOutEventsInput, FanOutEventsResult } from '../../contracts/webhooks';

/**
 * `fanOutEvents` as every workflow calls it to send its events out. It runs on the `webhooks` queue: it
 * makes the deliveries' first attempts, and a slow merchant endpoint must hold a webhook worker's slot,
 * never a payment worker's. Its timeout covers one round of attempts (15 s each, side by side) with
 * room to spare; it is retried until it lands, because the events it carries must not be lost.
 */
export const eventFanOut = proxyActivities<EventFanOutActivities>({
  taskQueue: TASK_QUEUES.webhooks,
  startToCloseTimeout: '1m',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * Fans events out to webhook deliveries, for callers that are not workflows themselves (ops tools,
 * events appended outside a workflow). Workflows call the `fanOutEvents` activity directly.
 */
export async function webhookFanOutWorkflow(input: FanOutEventsInput): Promise<FanOutEventsResult> {
  return eventFanOut.fanOutEvents(input);
}
