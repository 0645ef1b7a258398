import { proxyActivities } from '@temporalio/workflow';
import type { FanOutEventsInput, FanOutEventsResult, WebhookActivities } from '../../contracts/webhooks';

const { fanOutEvents } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '1m',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 10 },
});

/**
 * Fans events out to webhook deliveries, for callers that are not workflows themselves (ops tools,
 * events appended outside a workflow). Workflows call the `fanOutEvents` activity directly.
 */
export async function webhookFanOutWorkflow(input: FanOutEventsInput): Promise<FanOutEventsResult> {
  return fanOutEvents(input);
}
