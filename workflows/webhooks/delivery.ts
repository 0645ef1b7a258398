import { condition, proxyActivities, setHandler } from '@temporalio/workflow';
import { jittered } from '../../lib/webhook-retry';
import {
  retryNowSignal, type AttemptOutcome, type WebhookActivities, type WebhookDeliveryInput, type WebhookDeliveryResult,
} from './contract';

// One activity = one signed HTTP POST (15 s timeout inside) plus its bookkeeping. Temporal retries it
// only when the activity itself fails (database, worker lost); an HTTP failure is a returned outcome
// and is retried on the webhook schedule below, with durable timers.
const { attemptWebhookDelivery } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '45s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 8, nonRetryableErrorTypes: ['not_found'] },
});

/**
 * Delivers one event to one endpoint: `webhook-delivery/<whd_id>` (and `…/replay-<n>` for a manual
 * sequence). Attempt at once; after a transient failure wait the scheduled delay with ±20 % jitter
 * (Math.random is deterministic here), stretched by the receiver's Retry-After up to twice that; stop
 * on success, on a permanent failure, or when the schedule is exhausted (the activity dead-letters).
 * The `retryNow` signal cuts the current wait short.
 */
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  let retryNow = false;
  setHandler(retryNowSignal, () => { retryNow = true; });
  let attempts = 0;
  for (let i = 0; ; i += 1) {
    const scheduledDelayMs = i < input.retrySchedule.length ? jittered(input.retrySchedule[i], Math.random()) : null;
    const outcome: AttemptOutcome = await attemptWebhookDelivery({
      environment: input.environment, deliveryId: input.deliveryId, trigger: input.trigger, scheduledDelayMs,
    });
    if (outcome.attemptNo !== null) attempts += 1;
    if (outcome.next === 'done') return { deliveryId: input.deliveryId, status: outcome.status, attempts };
    retryNow = false;
    if (outcome.delayMs && outcome.delayMs > 0) await condition(() => retryNow, outcome.delayMs);
  }
}
