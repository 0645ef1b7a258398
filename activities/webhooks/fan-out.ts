import { findPayment } from '../../db/payments';
import type { Db } from '../../db/knex';
import { eventsByIds, type EventRow } from '../../db/events';
import { deliveriesOfEvents, insertDeliveries, type NewDelivery } from '../../db/webhook-deliveries';
import { enabledEndpointsOf } from '../../db/webhooks';
import { newId } from '../../lib/ids';
import { iso } from '../../lib/timestamps';
import { filterMatches } from '../../lib/webhook-events';
import { serializePayment } from '../../resources/payments';
import {
  WEBHOOK_WORKFLOW_IDS, type FanOutEventsInput, type FanOutEventsResult, type WebhookActivities, type WebhookEnvironment,
} from '../../contracts/webhooks';
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
  const payment = event.payment_id ? await findPayment(db, env, event.payment_id) : undefined;
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

export function fanOutActivities({ db, config, temporal }: WebhookActivityContext): Pick<WebhookActivities, 'fanOutEvents'> {
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
      const endpointsByAccount = new Map<string, Awaited<ReturnType<typeof enabledEndpointsOf>>>();
      const rows: NewDelivery[] = [];
      for (const event of await eventsByIds(db, env, input.eventIds)) {
        if (!endpointsByAccount.has(event.account_id)) endpointsByAccount.set(event.account_id, await enabledEndpointsOf(db, env, event.account_id));
        const endpoints = endpointsByAccount.get(event.account_id)!.filter((e) => filterMatches(e.events ?? ['*'], event.event));
        if (!endpoints.length) continue;
        const payload = await buildEventPayload(db, env, event);
        for (const endpoint of endpoints) {
          const id = newId('whd');
          rows.push({
            id, account_id: event.account_id, endpoint_id: endpoint.id, event_id: event.id, event_type: event.event, payload,
            workflow_id: WEBHOOK_WORKFLOW_IDS.delivery(id),
          });
        }
      }
      await insertDeliveries(db, env, rows);

      const deliveries = await deliveriesOfEvents(db, env, input.eventIds);
      // A delivery that has not been attempted may still lack its workflow (a retry after a crash);
      // starting it again is harmless: the id is taken and the start reports so.
      const unstarted = deliveries.filter((d) => d.status === 'pending' && d.attempt_count === 0 && d.replay_count === 0);
      let started = 0;
      if (unstarted.length) {
        const client = webhookClient(await temporal(), config);
        for (let i = 0; i < unstarted.length; i += 20) {
          const results = await Promise.all(unstarted.slice(i, i + 20).map((d) => client.startDelivery({
            workflowId: d.workflow_id ?? WEBHOOK_WORKFLOW_IDS.delivery(d.id), environment: env, deliveryId: d.id, trigger: 'automatic',
          })));
          started += results.filter(Boolean).length;
        }
      }
      return { deliveryIds: deliveries.map((d) => d.id), started };
    },
  };
}
