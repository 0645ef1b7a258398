import { Static, Type } from '@sinclair/typebox';
import { iso } from '../lib/timestamps';
import type { WebhookAttemptRow, WebhookDeliveryRow } from '../db/webhook-deliveries';
import type { WebhookEndpointRow } from '../db/webhooks';
import { DELIVERY_STATUSES, ENDPOINT_STATUSES } from '../contracts/webhooks';
import { Resource, Timestamp } from './schemas';

/** The webhook resources (docs/webhooks.md): endpoint, delivery and attempt, each schema next to its serializer. */

const S = Type.String();
const NS = Type.Union([S, Type.Null()]);
const NI = Type.Union([Type.Integer(), Type.Null()]);

export const EndpointStatus = Type.Union(ENDPOINT_STATUSES.map((s) => Type.Literal(s)));
export const DeliveryStatus = Type.Union(DELIVERY_STATUSES.map((s) => Type.Literal(s)));
export const VerificationSchema = Type.Object({ ok: Type.Boolean(), status_code: NI, error: NS }, { additionalProperties: true });

export const EndpointSchema = Resource('webhook_endpoint', {
  id: S, account_id: S, url: S, description: NS, events: Type.Array(S), metadata: Type.Record(S, Type.Unknown()),
  status: EndpointStatus, disabled_reason: NS,
  secret: Type.Union([S, Type.Null()], { description: 'The signing secret (whsec_…): only on create and rotate-secret.' }),
  secret_rotation: Type.Integer(), previous_secret_expires_at: Timestamp,
  verification: Type.Union([VerificationSchema, Type.Null()]), verified_at: Timestamp, failing_since: Timestamp,
  deleted: Type.Boolean(), created_at: Timestamp, updated_at: Timestamp,
});

export const AttemptSchema = Resource('webhook_attempt', {
  id: S, delivery_id: S, endpoint_id: S, attempt_no: Type.Integer(), trigger: S, url: S, webhook_timestamp: Type.Integer(),
  status_code: Type.Integer({ description: '0 when no HTTP answer came back' }), outcome: S, duration_ms: Type.Integer(),
  response_body: NS, response_body_truncated: Type.Boolean(), error: NS, created_at: Timestamp,
});

export const DeliverySchema = Resource('webhook_delivery', {
  id: S, account_id: S, endpoint_id: S, event_id: S, event_type: S, status: DeliveryStatus,
  attempt_count: Type.Integer(), replay_count: Type.Integer(), next_attempt_at: Timestamp, last_attempt_at: Timestamp,
  last_status_code: NI, last_error: NS, succeeded_at: Timestamp, dead_lettered_at: Timestamp, created_at: Timestamp, updated_at: Timestamp,
  attempts: Type.Optional(Type.Array(AttemptSchema)),
});

export type WebhookEndpoint = Static<typeof EndpointSchema>;
export type WebhookAttempt = Static<typeof AttemptSchema>;
export type WebhookDelivery = Static<typeof DeliverySchema>;

/**
 * A webhook endpoint. `secret` is the plaintext and is given only on create and rotate-secret (shown
 * once); the stored secrets (`*_secret_encrypted`) are never copied.
 */
export function serializeWebhookEndpoint(row: WebhookEndpointRow, secret?: string): WebhookEndpoint {
  return {
    object: 'webhook_endpoint',
    id: row.id,
    account_id: row.account_id,
    url: row.url,
    description: row.description ?? null,
    events: row.events ?? ['*'],
    metadata: row.metadata ?? {},
    status: row.status,
    disabled_reason: row.status === 'disabled' ? (row.disabled_reason ?? null) : null,
    secret: secret ?? null,
    secret_rotation: row.secret_rotation ?? 0,
    previous_secret_expires_at: row.previous_secret_encrypted ? iso(row.previous_secret_expires_at) : null,
    verification: row.verification ?? null,
    verified_at: iso(row.verified_at),
    failing_since: iso(row.failing_since),
    deleted: row.deleted,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function serializeWebhookAttempt(row: WebhookAttemptRow): WebhookAttempt {
  return {
    object: 'webhook_attempt',
    id: row.id,
    delivery_id: row.delivery_id,
    endpoint_id: row.endpoint_id,
    attempt_no: row.attempt_no,
    trigger: row.trigger,
    url: row.url,
    webhook_timestamp: row.webhook_timestamp,
    status_code: row.status_code,
    outcome: row.outcome,
    duration_ms: row.duration_ms,
    response_body: row.response_body ?? null,
    response_body_truncated: row.response_body_truncated,
    error: row.error ?? null,
    created_at: iso(row.created_at),
  };
}

/** A webhook delivery; `attempts` (rows, oldest first) is embedded only when given. */
export function serializeWebhookDelivery(row: WebhookDeliveryRow, attempts?: WebhookAttemptRow[]): WebhookDelivery {
  return {
    object: 'webhook_delivery',
    id: row.id,
    account_id: row.account_id,
    endpoint_id: row.endpoint_id,
    event_id: row.event_id,
    event_type: row.event_type,
    status: row.status,
    attempt_count: row.attempt_count,
    replay_count: row.replay_count,
    next_attempt_at: iso(row.next_attempt_at),
    last_attempt_at: iso(row.last_attempt_at),
    last_status_code: row.last_status_code ?? null,
    last_error: row.last_error ?? null,
    succeeded_at: iso(row.succeeded_at),
    dead_lettered_at: iso(row.dead_lettered_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    ...(attempts ? { attempts: attempts.map(serializeWebhookAttempt) } : {}),
  };
}
