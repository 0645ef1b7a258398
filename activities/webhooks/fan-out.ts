import { findShownPayment } from '../../db/payments';
import type { Db } from '../../db/knex';
import type { EventRow } from '../../db/events';
import { insertDeliveriesOf, nameDeliveryWorkflow, type NewDelivery, type WebhookDeliveryRow } from '../../db/webhook-deliveries';
import { logger } from '../../lib/logger';
import { jittered, parseRetrySchedule } from '../../lib/webhook-retry';
import { enabledEndpointsOf, type WebhookEndpointRow } from '../../db/webhooks';
import { newId } from '../../lib/ids';
import { iso } from '../../lib/timestamps';
import { filterMatches } from '../../lib/webhook-events';
import { serializePayment } from '../../resources/payments';
import type { Client } from '@temporalio/client';
import { WEBHOOK_WORKFLOW_IDS, type DeliveryResume, type WebhookEnvironment } from '../../contracts/webhooks';
import { webhookClient } from '../../workflows/webhooks/client';
import type { WebhookActivityContext } from './context';

export const PAYLOAD_LIMIT = 256 * 1024;

/**
 * The webhook body of an event (docs/webhooks.md#payload): the resource is the payment when the event has one (as
 * GET /payments/{id} shows it when the event fans out), else the event's own data. Over 256 KB the
 * resource is cut down to its reference and `data.truncated` says so.
 */
export async function buildEventPayload(db: Db, env: WebhookEnvironment, event: EventRow): Promise<string> {
  const eventData = event.data ?? {};
  const payment = event.payment_id ? await findShownPayment(db, env, event.payment_id) : undefined;
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

/** At most this many deliveries of one fan-out get its own first attempt (a busy account's rest go to workflows). */
const FIRST_ATTEMPTS_MAX = 20;

/** A delivery the fan-out hands to a workflow of its own, with what was already tried. */
interface Handover { delivery: WebhookDeliveryRow; resume?: DeliveryResume }

/** The rows to insert for some events: one per event and enabled endpoint whose filter matches; and those endpoints, by id. */
async function newDeliveries(db: Db, env: WebhookEnvironment, events: EventRow[]) {
  const endpointsByAccount = new Map<string, WebhookEndpointRow[]>();
  const targets = new Map<string, WebhookEndpointRow>();
  const rows: NewDelivery[] = [];
  for (const event of events) {
    if (!endpointsByAccount.has(event.account_id)) endpointsByAccount.set(event.account_id, await enabledEndpointsOf(db, env, event.account_id));
    const endpoints = endpointsByAccount.get(event.account_id)!.filter((e) => filterMatches(e.events ?? ['*'], event.event));
    if (!endpoints.length) continue;
    const payload = await buildEventPayload(db, env, event);
    for (const endpoint of endpoints) {
      targets.set(endpoint.id, endpoint);
      rows.push({ id: newId('whd'), account_id: event.account_id, endpoint_id: endpoint.id, event_id: event.id, event_type: event.event, payload, workflow_id: null });
    }
  }
  return { rows, targets };
}

/**
 * What is left to do for deliveries a run of the fan-out found unsettled (none replayed yet): one never
 * attempted and never handed over gets its first attempt here; the others (an earlier run's, which
 * stopped before handing them over) go to their workflow, resuming after the attempts already made.
 */
function splitUnsettled(deliveries: WebhookDeliveryRow[], now: number): { fresh: WebhookDeliveryRow[]; handovers: Handover[] } {
  const unsettled = deliveries.filter((d) => d.replay_count === 0 && (d.status === 'pending' || d.status === 'failed'));
  const fresh = unsettled.filter((d) => d.status === 'pending' && d.attempt_count === 0 && d.workflow_id === null).slice(0, FIRST_ATTEMPTS_MAX);
  const first = new Set(fresh);
  const handovers = unsettled.filter((d) => !first.has(d)).map((delivery): Handover => (delivery.status === 'failed'
    ? { delivery, resume: { attempts: delivery.attempt_count, delayMs: Math.max(0, (delivery.next_attempt_at?.getTime() ?? now) - now) } }
    : { delivery }));
  return { fresh, handovers };
}

/** What a fan-out did with some events' deliveries. */
export interface FanOutResult {
  /** Every delivery of these events (new, or from an earlier fan-out of the same events). */
  deliveryIds: string[];
  /** Deliveries settled by their first attempt here (delivered, or refused for good): no workflow. */
  settled: number;
  /** Delivery workflows started, for retries or attempts not made here (0 when an earlier run started them). */
  started: number;
}

/** Fans out events as claimed (db/events.ts claimDueEvents), whole. */
export type EventFanOut = (env: WebhookEnvironment, events: EventRow[]) => Promise<FanOutResult>;

/**
 * The fan-out of events to webhook deliveries, as the event dispatcher runs it (outbox.ts); idempotent, so
 * run it again freely. For each event, every ENABLED endpoint of the event's account in the same
 * environment whose filter matches gets one delivery row (unique per event and endpoint). Most deliveries
 * end with the first attempt made here; one that must be retried, or could not be attempted here, gets a
 * workflow `webhook-delivery/<whd_id>` on the `webhooks` queue, started through `client`. A run cut short
 * can send a delivery twice, never lose it: webhooks are at least once.
 */
export function eventFanOut({ db, config, attempts }: WebhookActivityContext, client: () => Promise<Client>): EventFanOut {
  const schedule = parseRetrySchedule(config.webhookRetrySchedule);
  /** The schedule's wait after a first attempt, jittered as the workflow jitters its own; null when it allows no retry. */
  const firstRetryDelayMs = () => (schedule.length ? jittered(schedule[0], Math.random()) : null);

  /**
   * The first attempt of each fresh delivery, side by side. A delivery it settles (delivered, refused
   * for good, its endpoint gone) needs no workflow; one to retry, or not attempted (the account's slots
   * taken, the attempt failed), is handed over.
   */
  async function firstAttempts(env: WebhookEnvironment, fresh: WebhookDeliveryRow[], targets: Map<string, WebhookEndpointRow>) {
    const handovers: Handover[] = [];
    let settled = 0;
    await Promise.all(fresh.map(async (delivery) => {
      const input = { environment: env, deliveryId: delivery.id, trigger: 'automatic' as const, scheduledDelayMs: firstRetryDelayMs() };
      const outcome = await attempts.attemptDelivery(input, delivery, targets.get(delivery.endpoint_id)).catch((err: unknown) => {
        logger.warn({ err, delivery_id: delivery.id }, 'the fan-out\'s first webhook attempt failed; its workflow makes it');
        return undefined;
      });
      if (outcome?.next === 'done') settled += 1;
      else if (outcome?.next === 'retry') handovers.push({ delivery, resume: { attempts: 1, delayMs: outcome.delayMs ?? 0 } });
      else handovers.push({ delivery });
    }));
    return { settled, handovers };
  }

  /** Starts each handed-over delivery's workflow, named on its row first; answers how many were new. */
  async function handOver(env: WebhookEnvironment, handovers: Handover[], client: ReturnType<typeof webhookClient>): Promise<number> {
    let started = 0;
    for (let i = 0; i < handovers.length; i += 20) {
      const results = await Promise.all(handovers.slice(i, i + 20).map(async ({ delivery, resume }) => {
        const workflowId = delivery.workflow_id ?? WEBHOOK_WORKFLOW_IDS.delivery(delivery.id);
        await nameDeliveryWorkflow(db, env, delivery.id, workflowId);
        return client.startDelivery({ workflowId, environment: env, deliveryId: delivery.id, trigger: 'automatic', ...(resume ? { resume } : {}) });
      }));
      started += results.filter(Boolean).length;
    }
    return started;
  }

  return async (env, events) => {
    if (!events.length) return { deliveryIds: [], settled: 0, started: 0 };
    const { rows, targets } = await newDeliveries(db, env, events);
    const deliveries = await insertDeliveriesOf(db, env, events.map((e) => e.id), rows);
    const { fresh, handovers } = splitUnsettled(deliveries, Date.now());
    const first = await firstAttempts(env, fresh, targets);
    const toStart = [...handovers, ...first.handovers];
    const started = toStart.length ? await handOver(env, toStart, webhookClient(await client(), config)) : 0;
    return { deliveryIds: deliveries.map((d) => d.id), settled: first.settled, started };
  };
}
