import { ApplicationFailure } from '@temporalio/common';
import type { Knex } from 'knex';
import { webhookDeliveryAttempts } from '../metrics';
import { findDelivery, parkDelivery, recordDeliveryAttempt, type WebhookDeliveryRow } from '../../db/webhook-deliveries';
import {
  disableEndpoint, findEndpoint, markEndpointFailing, markEndpointHealthy, type WebhookEndpointRow,
} from '../../db/webhooks';
import { insertNotifications } from '../../db/notifications';
import { logger } from '../../lib/logger';
import { iso } from '../../lib/timestamps';
import { classifyResponse, ENDPOINT_FAILING_DISABLE_MS, retryDelay, type ResponseClass } from '../../lib/webhook-retry';
import { signedHeaders } from '../../lib/webhook-signature';
import type { AttemptDeliveryArgs, AttemptOutcome, DeliveryStatus, WebhookActivities } from '../../contracts/webhooks';
import { liveSecrets, type DeliveryAttempts, type WebhookActivityContext } from './context';
import { AccountSlots } from './account-slots';
import { FAILING_ENDPOINT_TIMEOUT_MS, postWebhook, WEBHOOK_TIMEOUT_MS } from './http';

/** How long an attempt that found its account's slots taken waits before asking again: 0.5–1.5 s. */
function slotWaitMs(): number {
  return 500 + Math.round(Math.random() * 1000);
}

export function deliveryActivities(context: WebhookActivityContext): Pick<WebhookActivities, 'attemptWebhookDelivery'> {
  const { attemptDelivery } = context.attempts;
  return {
    /**
     * One attempt of one delivery: one signed POST of the stored payload, recorded as an attempt row,
     * and the delivery's new state. `scheduledDelayMs` is the workflow's jittered wait before the next
     * attempt, or null when this is the last one the schedule allows. When the account already has its
     * share of attempts in flight on this worker, nothing is sent or recorded: the answer is `wait`.
     */
    async attemptWebhookDelivery(input: AttemptDeliveryArgs): Promise<AttemptOutcome> {
      const delivery = await findDelivery(context.db, input.environment, input.deliveryId);
      if (!delivery) throw ApplicationFailure.nonRetryable(`no webhook delivery ${input.deliveryId}`, 'not_found');
      return attemptDelivery(input, delivery);
    },
  };
}

/** The attempts of one worker, which share its per-account slots. */
export function deliveryAttempts({ db, config, vault, agent, allowPrivate }: Omit<WebhookActivityContext, 'attempts'>): DeliveryAttempts {
  const slots = new AccountSlots(config.webhookAccountConcurrency);
  return {
    async attemptDelivery(input, delivery, known) {
      const env = input.environment;
      // Settled already (the fan-out's first attempt, racing a late start of this delivery's workflow):
      // nothing is sent again. A replay claims the row back to pending before it starts.
      if (delivery.status === 'succeeded' || delivery.status === 'dead_lettered') {
        return { next: 'done', status: delivery.status, attemptNo: null, statusCode: null, delayMs: null };
      }
      const endpoint = known ?? await findEndpoint(db, env, delivery.endpoint_id);
      if (!endpoint || endpoint.deleted || endpoint.status !== 'enabled') {
        // The endpoint stopped taking events while this delivery waited: park it; recover re-sends it.
        await parkDelivery(db, env, delivery.id, !endpoint || endpoint.deleted ? 'the endpoint was deleted' : `the endpoint is ${endpoint.status}`);
        return { next: 'done', status: 'dead_lettered', attemptNo: null, statusCode: null, delayMs: null };
      }
      const release = slots.take(delivery.account_id);
      if (!release) return { next: 'wait', status: delivery.status, attemptNo: null, statusCode: null, delayMs: slotWaitMs() };
      try {
        return await attempt(input, delivery, endpoint);
      } finally {
        release();
      }
    },
  };

  /** The POST and its bookkeeping, holding one of the account's slots. */
  async function attempt(input: AttemptDeliveryArgs, delivery: WebhookDeliveryRow, endpoint: WebhookEndpointRow): Promise<AttemptOutcome> {
    const env = input.environment;
    const now = new Date();
    const timestamp = Math.floor(now.getTime() / 1000);
    const headers = signedHeaders({
      id: delivery.event_id, timestamp, body: delivery.payload, secrets: liveSecrets(vault, endpoint, now), eventType: delivery.event_type,
    });
    const timeoutMs = endpoint.failing_since ? FAILING_ENDPOINT_TIMEOUT_MS : WEBHOOK_TIMEOUT_MS;
    const http = await postWebhook(agent, allowPrivate, endpoint.url, delivery.payload, headers, timeoutMs);
    const outcome: ResponseClass = classifyResponse(http.statusCode);

    let status: DeliveryStatus;
    let delayMs: number | null = null;
    if (outcome === 'succeeded') status = 'succeeded';
    else if (outcome === 'transient' && input.scheduledDelayMs !== null) {
      status = 'failed';
      delayMs = retryDelay(input.scheduledDelayMs, http.retryAfterMs);
    } else status = 'dead_lettered';
    const lastError = outcome === 'succeeded' ? null
      : http.error ?? `HTTP ${http.statusCode}${outcome === 'transient' ? '' : outcome === 'gone' ? ' (gone)' : ' (not retried)'}`;

    const record = (q: Knex) => recordDeliveryAttempt(q, env, delivery.id, {
      status, at: now, statusCode: http.statusCode, lastError, nextAttemptAt: delayMs === null ? null : new Date(Date.now() + delayMs),
    }, {
      account_id: delivery.account_id, endpoint_id: endpoint.id, trigger: input.trigger,
      url: endpoint.url, webhook_timestamp: timestamp, status_code: http.statusCode, outcome, duration_ms: http.durationMs,
      response_body: http.responseBody, response_body_truncated: http.truncated, error: http.error,
    });
    // A success at an endpoint healthy as read above writes nothing else: its one statement alone (no
    // transaction). A failure recorded since that read stays, as it would had it come after this success.
    const alone = outcome === 'succeeded' && !endpoint.failing_since;
    const attemptNo = alone ? await record(db) : await db.transaction(async (trx) => {
      const attemptCount = await record(trx);
      const base = { endpoint_id: endpoint.id, url: endpoint.url };
      if (outcome === 'succeeded') {
        await markEndpointHealthy(trx, env, endpoint.id);
      } else {
        const failingSince = await markEndpointFailing(trx, env, endpoint.id, now);
        const failingFor = now.getTime() - failingSince.getTime();
        const disable = outcome === 'gone' ? 'gone' : failingFor >= ENDPOINT_FAILING_DISABLE_MS ? 'failing' : null;
        if (disable && await disableEndpoint(trx, env, endpoint.id, disable)) {
          await insertNotifications(trx, [{ accountId: delivery.account_id, type: 'webhook_endpoint.disabled', details: {
            ...base, reason: disable, failing_since: iso(failingSince), last_status_code: http.statusCode, last_error: lastError,
          } }]);
        }
      }
      if (status === 'dead_lettered') {
        await insertNotifications(trx, [{ accountId: delivery.account_id, type: 'webhook.dead_lettered', details: {
          ...base, delivery_id: delivery.id, event_id: delivery.event_id, event_type: delivery.event_type,
          reason: outcome === 'transient' ? 'retries_exhausted' : outcome === 'gone' ? 'endpoint_gone' : 'rejected',
          attempts: attemptCount, last_status_code: http.statusCode, last_error: lastError,
        } }]);
      }
      return attemptCount;
    });
    webhookDeliveryAttempts.inc({ outcome });
    logger.info({ delivery_id: delivery.id, attempt_no: attemptNo, status_code: http.statusCode, outcome, status, duration_ms: http.durationMs }, 'webhook attempt');
    return { next: status === 'failed' ? 'retry' : 'done', status, attemptNo, statusCode: http.statusCode, delayMs };
  }
}
