import { Static, Type } from '@sinclair/typebox';
import type { EventRow } from '../db/events';
import { iso } from '../lib/timestamps';
import { Resource, Timestamp } from './schemas';

const S = Type.String();
const NS = Type.Union([S, Type.Null()]);

/** An event record: the timeline entry behind a transition and the source of webhooks (docs/webhooks.md#events). */
export const EventSchema = Resource('event', {
  id: S, event: S, account_id: S, workspace_id: NS, data: Type.Record(S, Type.Unknown()), version: Type.Integer(),
  request_id: NS, trace_id: NS, region: NS, subject_type: NS, subject_id: NS, payment_id: NS, charge_id: NS, refund_id: NS,
  checkout_session_id: NS, actor_type: NS, actor_id: NS, api_key_id: NS, service: NS, routing_plan_id: NS, attempt_id: NS,
  created_at: Timestamp,
});

export type Event = Static<typeof EventSchema>;

export function serializeEvent(row: EventRow): Event {
  return {
    object: 'event',
    id: row.id,
    event: row.event,
    account_id: row.account_id,
    workspace_id: row.workspace_id ?? null,
    data: row.data ?? {},
    version: row.version,
    request_id: row.request_id ?? null,
    trace_id: row.trace_id ?? null,
    region: row.region ?? null,
    subject_type: row.subject_type ?? null,
    subject_id: row.subject_id ?? null,
    payment_id: row.payment_id ?? null,
    charge_id: row.charge_id ?? null,
    refund_id: row.refund_id ?? null,
    checkout_session_id: row.checkout_session_id ?? null,
    actor_type: row.actor_type ?? null,
    actor_id: row.actor_id ?? null,
    api_key_id: row.api_key_id ?? null,
    service: row.service ?? null,
    routing_plan_id: row.routing_plan_id ?? null,
    attempt_id: row.attempt_id ?? null,
    created_at: iso(row.created_at),
  };
}
