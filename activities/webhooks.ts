import { randomBytes } from 'node:crypto';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Agent, request } from 'undici';
import type { Db } from '../db/knex';
import { envTable } from '../db/environments';
import { iso, serializePayment } from '../db/serialize';
import { newId } from '../lib/ids';
import { logger } from '../lib/logger';
import { Vault } from '../lib/vault';
import { filterMatches, VERIFICATION_EVENT_TYPE } from '../lib/webhook-events';
import {
  classifyResponse, ENDPOINT_FAILING_DISABLE_MS, parseRetryAfter, parseRetrySchedule, retryDelay, type ResponseClass,
} from '../lib/webhook-retry';
import { signedHeaders } from '../lib/webhook-signature';
import { startDeliveryWorkflow } from '../lib/webhook-start';
import { guardedLookup, refusesLiteralHost } from '../lib/webhook-url';
import {
  WEBHOOK_WORKFLOW_IDS, type AttemptOutcome, type DeliveryStatus, type DeliveryTrigger, type FanOutEventsInput,
  type FanOutEventsResult, type WebhookEnvironment, type WebhookSecretRotationInput, type WebhookVerificationInput,
  type WebhookVerificationResult,
} from '../workflows/webhook-shared';
import type { ActivityDeps } from './index';

/** Delivery limits (docs/webhooks.md#delivery-and-retries). */
export const WEBHOOK_TIMEOUT_MS = 15_000;
export const RESPONSE_BODY_LIMIT = 16 * 1024;
export const PAYLOAD_LIMIT = 256 * 1024;
const USER_AGENT = 'Switchboard-Webhooks/1.0 (+https://www.standardwebhooks.com)';

export interface WebhookActivityDeps extends ActivityDeps {
  /**
   * A Temporal client for the fan-out's workflow starts. Optional: inside a worker the activity uses the
   * worker's own client (activity context); tests and scripts calling the activity directly hand one in.
   */
  temporal?: () => Promise<Client>;
}

export interface HttpResult {
  /** 0 when no HTTP answer came back. */
  statusCode: number;
  durationMs: number;
  responseBody: string | null;
  truncated: boolean;
  error: string | null;
  retryAfterMs: number | null;
}

/** Reads at most `limit` bytes of a response body, then drops the rest of the stream. */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }, limit: number): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > limit) {
      truncated = true;
      body.destroy();
      break;
    }
  }
  // Postgres text cannot hold NUL; a cut multi-byte character becomes U+FFFD.
  const text = Buffer.concat(chunks).subarray(0, limit).toString('utf8').replace(/\0/g, '');
  return { text, truncated };
}

function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return `timeout: no complete answer within ${WEBHOOK_TIMEOUT_MS / 1000} s`;
  const code = (err as { code?: string }).code;
  const cause = (err as { cause?: unknown }).cause;
  const message = cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
  return (code ? `${code}: ${message}` : message).slice(0, 1000);
}

/**
 * One webhook POST: 15 s for the whole exchange, redirects not followed (undici's `request` never
 * follows them), connections only to allowed addresses. Never throws: every failure is a result.
 */
export async function postWebhook(agent: Agent, allowPrivate: boolean, url: string, body: string, headers: Record<string, string>): Promise<HttpResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const failed = (error: string): HttpResult => ({ statusCode: 0, durationMs: elapsed(), responseBody: null, truncated: false, error, retryAfterMs: null });
  // Literal addresses skip DNS, so the guarded lookup never sees them: check them here.
  if (refusesLiteralHost(new URL(url), allowPrivate)) return failed('refused: the URL points at a private or reserved address');
  const signal = AbortSignal.timeout(WEBHOOK_TIMEOUT_MS);
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(url, { method: 'POST', body, headers: { ...headers, 'user-agent': USER_AGENT }, dispatcher: agent, signal });
  } catch (err) {
    return failed(describeError(err));
  }
  const retryAfterMs = parseRetryAfter(res.headers['retry-after'], Date.now());
  try {
    const { text, truncated } = await readCapped(res.body, RESPONSE_BODY_LIMIT);
    return { statusCode: res.statusCode, durationMs: elapsed(), responseBody: text, truncated, error: null, retryAfterMs };
  } catch (err) {
    // The status line came back but the body did not finish in time: the status still counts.
    return { statusCode: res.statusCode, durationMs: elapsed(), responseBody: null, truncated: false, error: `reading the response: ${describeError(err)}`, retryAfterMs };
  }
}

/** The endpoint's signing secrets now: the current one, then the previous one while it has not expired. */
function liveSecrets(vault: Vault, endpoint: any, now: Date): string[] {
  const secrets = [vault.decrypt(endpoint.secret_encrypted)];
  if (endpoint.previous_secret_encrypted && endpoint.previous_secret_expires_at && new Date(endpoint.previous_secret_expires_at) > now) {
    secrets.push(vault.decrypt(endpoint.previous_secret_encrypted));
  }
  return secrets;
}

/**
 * The webhook body of an event (docs/webhooks.md#payload): the resource is the payment when the event has one (as
 * GET /payments/{id} shows it when the event fans out), else the event's own data. Over 256 KB the
 * resource is cut down to its reference and `data.truncated` says so.
 */
export async function buildEventPayload(db: Db, env: WebhookEnvironment, event: any): Promise<string> {
  const eventData = (event.data ?? {}) as Record<string, unknown>;
  const payment = event.payment_id ? await db(envTable(env, 'payments')).where({ id: event.payment_id }).first() : undefined;
  const data: Record<string, unknown> = payment
    ? { object: serializePayment(payment), ...(Object.keys(eventData).length ? { event_data: eventData } : {}) }
    : { object: eventData };
  const envelope = {
    id: event.id,
    object: 'event',
    type: event.event,
    api_version: 'v1',
    created_at: iso(event.created_at),
    account_id: event.account_id,
    livemode: env === 'production',
    data,
  };
  const body = JSON.stringify(envelope);
  if (Buffer.byteLength(body) <= PAYLOAD_LIMIT) return body;
  const reference = payment
    ? { object: 'payment', id: payment.id }
    : { object: event.subject_type ?? 'event', id: event.subject_id ?? event.id };
  return JSON.stringify({ ...envelope, data: { object: reference, truncated: true } });
}

async function notify(db: Db, accountId: string, type: string, details: Record<string, unknown>): Promise<void> {
  await db('core.notifications').insert({ id: newId('ntf'), account_id: accountId, type, details: JSON.stringify(details) });
}

function challengeEchoed(body: string | null, challenge: string): boolean {
  if (body === null) return false;
  if (body.trim() === challenge) return true;
  try {
    const parsed = JSON.parse(body) as unknown;
    return typeof parsed === 'object' && parsed !== null && (parsed as { challenge?: unknown }).challenge === challenge;
  } catch {
    return false;
  }
}

export function webhookActivities(deps: WebhookActivityDeps) {
  const { db, config } = deps;
  const vault = new Vault(config.vaultKey);
  const allowPrivate = config.webhookAllowPrivate;
  // One pool for every webhook URL; the guarded lookup makes the address checked the address used.
  const agent = new Agent({
    connect: { lookup: guardedLookup(allowPrivate), timeout: 10_000 },
    headersTimeout: WEBHOOK_TIMEOUT_MS,
    bodyTimeout: WEBHOOK_TIMEOUT_MS,
    keepAliveTimeout: 4_000,
  });
  const temporal = async (): Promise<Client> => (deps.temporal ? deps.temporal() : Context.current().client);

  return {
    /**
     * Creates the webhook deliveries of some events and starts their workflows; idempotent, so call it
     * again freely (activity retries, replays of the caller). For each event, every ENABLED endpoint of
     * the event's account in the same environment whose filter matches gets one delivery row (unique
     * per event and endpoint) and one workflow `webhook-delivery/<whd_id>` on the `webhooks` queue.
     */
    async fanOutEvents(input: FanOutEventsInput): Promise<FanOutEventsResult> {
      const env = input.environment;
      if (!input.eventIds.length) return { deliveryIds: [], started: 0 };
      const deliveriesTable = envTable(env, 'webhook_deliveries');
      const events = await db(envTable(env, 'events')).whereIn('id', input.eventIds).orderBy('created_at').orderBy('id');
      const endpointsByAccount = new Map<string, any[]>();
      const rows: Record<string, unknown>[] = [];
      for (const event of events) {
        if (!endpointsByAccount.has(event.account_id)) {
          endpointsByAccount.set(event.account_id, await db(envTable(env, 'webhook_endpoints'))
            .where({ account_id: event.account_id, status: 'enabled', deleted: false }).select('id', 'events'));
        }
        const endpoints = endpointsByAccount.get(event.account_id)!.filter((e) => filterMatches(e.events ?? ['*'], event.event));
        if (!endpoints.length) continue;
        const payload = await buildEventPayload(db, env, event);
        for (const endpoint of endpoints) {
          const id = newId('whd');
          rows.push({
            id, account_id: event.account_id, endpoint_id: endpoint.id, event_id: event.id, event_type: event.event, payload,
            status: 'pending', next_attempt_at: new Date(), workflow_id: WEBHOOK_WORKFLOW_IDS.delivery(id),
          });
        }
      }
      if (rows.length) await db(deliveriesTable).insert(rows).onConflict(['event_id', 'endpoint_id']).ignore();

      const deliveries = await db(deliveriesTable).whereIn('event_id', input.eventIds)
        .select('id', 'status', 'attempt_count', 'replay_count', 'workflow_id').orderBy('id');
      // A delivery that has not been attempted may still lack its workflow (a retry after a crash);
      // starting it again is harmless: the id is taken and the start reports so.
      const unstarted = deliveries.filter((d) => d.status === 'pending' && d.attempt_count === 0 && d.replay_count === 0);
      const retrySchedule = parseRetrySchedule(config.webhookRetrySchedule);
      let started = 0;
      if (unstarted.length) {
        const client = await temporal();
        for (let i = 0; i < unstarted.length; i += 20) {
          const results = await Promise.all(unstarted.slice(i, i + 20).map((d) => startDeliveryWorkflow(client, {
            workflowId: d.workflow_id, environment: env, deliveryId: d.id, retrySchedule, trigger: 'automatic',
          })));
          started += results.filter(Boolean).length;
        }
      }
      return { deliveryIds: deliveries.map((d) => d.id), started };
    },

    /**
     * One attempt of one delivery: one signed POST of the stored payload, recorded as an attempt row,
     * and the delivery's new state. `scheduledDelayMs` is the workflow's jittered wait before the next
     * attempt, or null when this is the last one the schedule allows.
     */
    async attemptWebhookDelivery(input: {
      environment: WebhookEnvironment;
      deliveryId: string;
      trigger: DeliveryTrigger;
      scheduledDelayMs: number | null;
    }): Promise<AttemptOutcome> {
      const env = input.environment;
      const deliveries = envTable(env, 'webhook_deliveries');
      const endpoints = envTable(env, 'webhook_endpoints');
      const delivery = await db(deliveries).where({ id: input.deliveryId }).first();
      if (!delivery) throw ApplicationFailure.nonRetryable(`no webhook delivery ${input.deliveryId}`, 'not_found');
      const endpoint = await db(endpoints).where({ id: delivery.endpoint_id }).first();

      if (!endpoint || endpoint.deleted || endpoint.status !== 'enabled') {
        // The endpoint stopped taking events while this delivery waited: park it; recover re-sends it.
        const why = !endpoint || endpoint.deleted ? 'the endpoint was deleted' : `the endpoint is ${endpoint.status}`;
        await db(deliveries).where({ id: delivery.id }).update({
          status: 'dead_lettered', next_attempt_at: null, dead_lettered_at: db.fn.now(), last_error: why, updated_at: db.fn.now(),
        });
        return { next: 'done', status: 'dead_lettered', attemptNo: null, statusCode: null, delayMs: null };
      }

      const now = new Date();
      const timestamp = Math.floor(now.getTime() / 1000);
      const headers = signedHeaders({
        id: delivery.event_id, timestamp, body: delivery.payload, secrets: liveSecrets(vault, endpoint, now), eventType: delivery.event_type,
      });
      const http = await postWebhook(agent, allowPrivate, endpoint.url, delivery.payload, headers);
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

      const attemptNo = await db.transaction(async (trx) => {
        const [updated] = await trx(deliveries).where({ id: delivery.id }).update({
          status,
          attempt_count: trx.raw('attempt_count + 1'),
          last_attempt_at: now,
          last_status_code: http.statusCode,
          last_error: lastError,
          next_attempt_at: delayMs === null ? null : new Date(Date.now() + delayMs),
          ...(status === 'succeeded' ? { succeeded_at: trx.fn.now() } : {}),
          ...(status === 'dead_lettered' ? { dead_lettered_at: trx.fn.now() } : {}),
          updated_at: trx.fn.now(),
        }).returning('attempt_count');
        await trx(envTable(env, 'webhook_attempts')).insert({
          id: newId('wha'), account_id: delivery.account_id, delivery_id: delivery.id, endpoint_id: endpoint.id,
          attempt_no: updated.attempt_count, trigger: input.trigger, url: endpoint.url, webhook_timestamp: timestamp,
          status_code: http.statusCode, outcome, duration_ms: http.durationMs, response_body: http.responseBody,
          response_body_truncated: http.truncated, error: http.error,
        });

        const base = { endpoint_id: endpoint.id, url: endpoint.url };
        if (outcome === 'succeeded') {
          await trx(endpoints).where({ id: endpoint.id }).whereNotNull('failing_since').update({ failing_since: null });
        } else {
          const [{ failing_since: failingSince }] = await trx(endpoints).where({ id: endpoint.id })
            .update({ failing_since: trx.raw('coalesce(failing_since, ?)', [now]) }).returning('failing_since');
          const failingFor = now.getTime() - new Date(failingSince).getTime();
          const disable = outcome === 'gone' ? 'gone' : failingFor >= ENDPOINT_FAILING_DISABLE_MS ? 'failing' : null;
          if (disable) {
            const changed = await trx(endpoints).where({ id: endpoint.id, status: 'enabled' })
              .update({ status: 'disabled', disabled_reason: disable, updated_at: trx.fn.now() });
            if (changed) {
              await notify(trx, delivery.account_id, 'webhook_endpoint.disabled', {
                ...base, reason: disable, failing_since: iso(failingSince), last_status_code: http.statusCode, last_error: lastError,
              });
            }
          }
        }
        if (status === 'dead_lettered') {
          await notify(trx, delivery.account_id, 'webhook.dead_lettered', {
            ...base, delivery_id: delivery.id, event_id: delivery.event_id, event_type: delivery.event_type,
            reason: outcome === 'transient' ? 'retries_exhausted' : outcome === 'gone' ? 'endpoint_gone' : 'rejected',
            attempts: updated.attempt_count, last_status_code: http.statusCode, last_error: lastError,
          });
        }
        return updated.attempt_count as number;
      });
      logger.info({ delivery_id: delivery.id, attempt_no: attemptNo, status_code: http.statusCode, outcome, status, duration_ms: http.durationMs }, 'webhook attempt');
      return { next: status === 'failed' ? 'retry' : 'done', status, attemptNo, statusCode: http.statusCode, delayMs };
    },

    /**
     * The handshake: POST a signed `webhook_endpoint.verification` event carrying a random challenge;
     * a 2xx answer with the challenge (raw, or JSON { challenge }) proves the URL. A pending endpoint
     * becomes enabled; the result is recorded either way. The URL and handshake number must still be
     * current when the answer lands, so a slow handshake never enables a URL changed meanwhile.
     */
    async verifyWebhookEndpoint(input: WebhookVerificationInput): Promise<WebhookVerificationResult> {
      const endpoints = envTable(input.environment, 'webhook_endpoints');
      const endpoint = await db(endpoints).where({ id: input.endpointId }).first();
      if (!endpoint) throw ApplicationFailure.nonRetryable(`no webhook endpoint ${input.endpointId}`, 'not_found');
      // Deleted before its handshake ran (create, then delete at once): nothing to prove any more.
      if (endpoint.deleted) return { ok: false, status_code: null, error: 'the endpoint was deleted' };
      const challenge = randomBytes(24).toString('base64url');
      const now = new Date();
      const id = newId('evt');
      const body = JSON.stringify({
        id, object: 'event', type: VERIFICATION_EVENT_TYPE, api_version: 'v1', created_at: now.toISOString(),
        account_id: endpoint.account_id, livemode: input.environment === 'production',
        data: { object: { object: 'webhook_endpoint', id: endpoint.id, url: endpoint.url }, challenge },
      });
      const headers = signedHeaders({ id, timestamp: Math.floor(now.getTime() / 1000), body, secrets: liveSecrets(vault, endpoint, now), eventType: VERIFICATION_EVENT_TYPE });
      const http = await postWebhook(agent, allowPrivate, endpoint.url, body, headers);
      const is2xx = http.statusCode >= 200 && http.statusCode < 300;
      const ok = is2xx && challengeEchoed(http.responseBody, challenge);
      const error = ok ? null
        : http.error ?? (is2xx ? 'the response did not echo the challenge' : `HTTP ${http.statusCode}`);
      const result: WebhookVerificationResult = { ok, status_code: http.statusCode || null, error };
      const summary = { ...result, duration_ms: http.durationMs, url: endpoint.url, at: now.toISOString() };
      const current = { id: endpoint.id, url: endpoint.url, verification_count: input.verification, deleted: false };
      if (ok) {
        await db(endpoints).where(current).update({
          verification: JSON.stringify(summary), verified_url: endpoint.url, verified_at: now,
          status: db.raw(`case when status = 'pending_verification' then 'enabled' else status end`),
          updated_at: db.fn.now(),
        });
      } else {
        await db(endpoints).where(current).update({ verification: JSON.stringify(summary), updated_at: db.fn.now() });
      }
      return result;
    },

    /** The end of a rotation's grace period: drop the previous secret, unless a newer rotation replaced it. */
    async dropPreviousWebhookSecret(input: Omit<WebhookSecretRotationInput, 'expirePreviousInSeconds'>): Promise<{ dropped: boolean }> {
      const changed = await db(envTable(input.environment, 'webhook_endpoints'))
        .where({ id: input.endpointId, secret_rotation: input.rotation })
        .whereNotNull('previous_secret_encrypted')
        .update({ previous_secret_encrypted: null, previous_secret_expires_at: null, updated_at: db.fn.now() });
      return { dropped: changed > 0 };
    },
  };
}
