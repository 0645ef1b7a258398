import { condition, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import { jittered } from '../../lib/webhook-retry';
import {
  retryNowSignal, type AttemptOutcome, type WebhookActivities, type WebhookDeliveryInput, type WebhookDeliveryResult,
} from '../../contracts/webhooks';

// One activity = one signed HTTP POST (15 s timeout inside) plus its bookkeeping. Temporal retries it
// only when the activity itself fails (database, worker lost); an HTTP failure is a returned outcome
// and is retried on the webhook schedule below, with durable timers.
const { attemptWebhookDelivery } = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '45s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m', maximumAttempts: 8, nonRetryableErrorTypes: ['not_found'] },
});

const MAX_FAIRNESS_WAIT_MS = 30_000;

/**
 * Delivers one event to one endpoint: `webhook-delivery/<whd_id>` (and `…/replay-<n>` for a manual
 * sequence). Attempt at once (or, `resume`d after the fan-out's own first attempt failed, wait first);
 * after a transient failure wait the scheduled delay with ±20 % jitter (Math.random is deterministic
 * here), stretched by the receiver's Retry-After up to twice that; stop on success, on a permanent
 * failure, or when the schedule is exhausted (the activity dead-letters). The `retryNow` signal cuts the
 * current wait short. An attempt refused for its account's fairness (`wait`) is asked again shortly,
 * outside the schedule.
 */
export async function webhookDeliveryWorkflow(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  let retryNow = false;
  setHandler(retryNowSignal, () => { retryNow = true; });
  let attempts = input.resume?.attempts ?? 0;
  let turn = attempts; // the schedule's entries used: a `wait` uses none
  let waits = 0; // in a row: each doubles the next wait, up to 30 s, so a long queue polls slowly
  if (input.resume && input.resume.delayMs > 0) await condition(() => retryNow, input.resume.delayMs);
  for (;;) {
    const scheduledDelayMs = turn < input.retrySchedule.length ? jittered(input.retrySchedule[turn], Math.random()) : null;
    const outcome: AttemptOutcome = await attemptWebhookDelivery({
      environment: input.environment, deliveryId: input.deliveryId, trigger: input.trigger, scheduledDelayMs,
    });
    if (outcome.next === 'wait') {
      await sleep(Math.min(MAX_FAIRNESS_WAIT_MS, (outcome.delayMs ?? 1000) * 2 ** Math.min(waits, 6)));
      waits += 1;
      continue;
    }
    waits = 0;
    turn += 1;
    if (outcome.attemptNo !== null) attempts += 1;
    if (outcome.next === 'done') return { deliveryId: input.deliveryId, status: outcome.status, attempts };
    retryNow = false;
    if (outcome.delayMs && outcome.delayMs > 0) await condition(() => retryNow, outcome.delayMs);
  }
}
