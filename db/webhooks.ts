import { paged, type Page } from './page';
import type { Knex } from 'knex';
import { newId } from '../lib/ids';
import type { ResponseClass } from '../lib/webhook-retry';
import type {
  DeliveryStatus, DeliveryTrigger, DisabledReason, EndpointStatus, WebhookVerificationResult,
} from '../workflows/webhooks/contract';
import { ENV_SCHEMAS, envTable, type Environment } from './environments';

/**
 * The webhooks store (docs/webhooks.md): each environment's `webhook_endpoints` (with their encrypted
 * secrets), `webhook_deliveries` and `webhook_attempts`. The only module that queries those tables.
 */

/** The last handshake, as recorded on the endpoint. */
export interface VerificationSummary extends WebhookVerificationResult {
  duration_ms: number;
  url: string;
  at: string;
}

export interface WebhookEndpointRow {
  id: string;
  account_id: string;
  url: string;
  description: string | null;
  events: string[];
  metadata: Record<string, unknown>;
  status: EndpointStatus;
  disabled_reason: DisabledReason | null;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_expires_at: Date | null;
  secret_rotation: number;
  verification_count: number;
  verification: VerificationSummary | null;
  verified_url: string | null;
  verified_at: Date | null;
  failing_since: Date | null;
  deleted: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface WebhookDeliveryRow {
  id: string;
  account_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  /** The signed body, built once at fan-out so every attempt and replay sends the same bytes. */
  payload: string;
  status: DeliveryStatus;
  attempt_count: number;
  replay_count: number;
  workflow_id: string | null;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  succeeded_at: Date | null;
  dead_lettered_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface WebhookAttemptRow {
  id: string;
  account_id: string;
  delivery_id: string;
  endpoint_id: string;
  attempt_no: number;
  trigger: DeliveryTrigger;
  url: string;
  webhook_timestamp: number;
  /** 0 when no HTTP answer came back. */
  status_code: number;
  outcome: ResponseClass;
  duration_ms: number;
  response_body: string | null;
  response_body_truncated: boolean;
  error: string | null;
  created_at: Date;
}

const endpoints = (db: Knex, env: Environment) => db<WebhookEndpointRow>(envTable(env, 'webhook_endpoints'));
const deliveries = (db: Knex, env: Environment) => db<WebhookDeliveryRow>(envTable(env, 'webhook_deliveries'));
const attempts = (db: Knex, env: Environment) => db<WebhookAttemptRow>(envTable(env, 'webhook_attempts'));
/** Writes that carry jsonb text or SQL expressions, which the typed builders would refuse. */
const raw = (db: Knex, env: Environment, table: 'webhook_endpoints' | 'webhook_deliveries' | 'webhook_attempts') => db(envTable(env, table));


// ---------------------------------------------------------------------------------------------------
// Endpoints

/** An endpoint by id, deleted ones included (callers decide what a deleted one means to them). */
export async function findEndpoint(db: Knex, env: Environment, id: string): Promise<WebhookEndpointRow | undefined> {
  return endpoints(db, env).where({ id }).first();
}

export interface NewEndpoint {
  accountId: string;
  url: string;
  description: string | null;
  events: string[];
  metadata: Record<string, unknown>;
  secretEncrypted: string;
}

/**
 * A new endpoint, waiting for its first handshake (verification number 1); undefined when the account
 * already has `limit` endpoints that are not deleted. An account's creates take turns (a transaction-level
 * advisory lock on its endpoints), so concurrent ones cannot pass the limit together.
 */
export async function insertEndpoint(db: Knex, env: Environment, e: NewEndpoint, limit: number): Promise<WebhookEndpointRow | undefined> {
  return db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`${envTable(env, 'webhook_endpoints')}/${e.accountId}`]);
    const [{ count }] = await endpoints(trx, env).where({ account_id: e.accountId, deleted: false }).count({ count: '*' });
    if (Number(count) >= limit) return undefined;
    const [row] = await raw(trx, env, 'webhook_endpoints').insert({
      id: newId('we'), account_id: e.accountId, url: e.url, description: e.description, events: JSON.stringify(e.events),
      metadata: JSON.stringify(e.metadata), status: 'pending_verification', secret_encrypted: e.secretEncrypted, verification_count: 1,
    }).returning('*');
    return row as WebhookEndpointRow;
  });
}

/** An account's endpoints that are not deleted, newest first. */
export async function listEndpoints(db: Knex, env: Environment, accountId: string, filter: { status?: EndpointStatus }, page: Page) {
  return paged(() => endpoints(db, env).where({ account_id: accountId, deleted: false, ...(filter.status ? { status: filter.status } : {}) }), page);
}

export interface EndpointPatch {
  url: string;
  events?: string[];
  description?: string | null;
  metadata?: Record<string, unknown>;
  status?: EndpointStatus;
  disabled_reason?: DisabledReason | null;
  failing_since?: null;
  /** Counts a new handshake: verification_count + 1 (read it back from the returned row). */
  nextVerification?: boolean;
}

/** Changes an endpoint that is not deleted; undefined when it is (or is gone). */
export async function updateEndpoint(db: Knex, env: Environment, id: string, patch: EndpointPatch): Promise<WebhookEndpointRow | undefined> {
  const { nextVerification, events, metadata, ...columns } = patch;
  // Only what the patch names changes: a field left undefined keeps its value.
  const set = Object.fromEntries(Object.entries(columns).filter(([, v]) => v !== undefined));
  const [row] = await raw(db, env, 'webhook_endpoints').where({ id, deleted: false }).update({
    ...set,
    ...(events ? { events: JSON.stringify(events) } : {}),
    ...(metadata !== undefined ? { metadata: JSON.stringify(metadata) } : {}),
    ...(nextVerification ? { verification_count: db.raw('verification_count + 1') } : {}),
    updated_at: db.fn.now(),
  }).returning('*');
  return row as WebhookEndpointRow | undefined;
}

/** Soft delete: no further deliveries, history kept. Undefined when it was already deleted. */
export async function deleteEndpoint(db: Knex, env: Environment, id: string): Promise<WebhookEndpointRow | undefined> {
  const [row] = await endpoints(db, env).where({ id, deleted: false }).update({ deleted: true, updated_at: db.fn.now() }).returning('*');
  return row;
}

/** Takes the next handshake number of an endpoint. */
export async function nextVerificationNumber(db: Knex, env: Environment, id: string): Promise<number> {
  const [{ verification_count: n }] = await raw(db, env, 'webhook_endpoints').where({ id })
    .update({ verification_count: db.raw('verification_count + 1') }).returning('verification_count');
  return n as number;
}

/**
 * Records a handshake's answer, only if the endpoint still has the URL and handshake number it ran
 * for: a slow handshake never enables a URL changed meanwhile. A pending endpoint that passed is enabled.
 */
export async function recordVerification(db: Knex, env: Environment, run: { endpointId: string; url: string; verification: number },
  summary: VerificationSummary, verifiedAt: Date): Promise<void> {
  const current = { id: run.endpointId, url: run.url, verification_count: run.verification, deleted: false };
  await raw(db, env, 'webhook_endpoints').where(current).update({
    verification: JSON.stringify(summary),
    ...(summary.ok ? {
      verified_url: run.url, verified_at: verifiedAt,
      status: db.raw(`case when status = 'pending_verification' then 'enabled' else status end`),
    } : {}),
    updated_at: db.fn.now(),
  });
}

/** The enabled endpoints of an account, with their event filters (the fan-out's targets). */
export async function enabledEndpointsOf(db: Knex, env: Environment, accountId: string): Promise<Pick<WebhookEndpointRow, 'id' | 'events'>[]> {
  return endpoints(db, env).where({ account_id: accountId, status: 'enabled', deleted: false }).select('id', 'events');
}

/** The select of an account's first enabled endpoint, for a statement that asks whether one exists. */
export function enabledEndpointQuery(db: Knex, env: Environment, accountId: string): Knex.QueryBuilder {
  return endpoints(db, env).where({ account_id: accountId, status: 'enabled', deleted: false }).select('id').limit(1);
}

export async function hasEnabledEndpoint(db: Knex, env: Environment, accountId: string): Promise<boolean> {
  return (await enabledEndpointQuery(db, env, accountId)).length > 0;
}

// Endpoint health, written with each attempt (in its transaction).

/** After a success: the endpoint is no longer failing. */
export async function markEndpointHealthy(db: Knex, env: Environment, id: string): Promise<void> {
  await endpoints(db, env).where({ id }).whereNotNull('failing_since').update({ failing_since: null });
}

/** After a failure: when the current run of failures began (now, if this is its first). */
export async function markEndpointFailing(db: Knex, env: Environment, id: string, now: Date): Promise<Date> {
  const [{ failing_since: since }] = await raw(db, env, 'webhook_endpoints').where({ id })
    .update({ failing_since: db.raw('coalesce(failing_since, ?)', [now]) }).returning('failing_since');
  return new Date(since as Date | string);
}

/** Disables an enabled endpoint; false when it was not enabled (someone else got there first). */
export async function disableEndpoint(db: Knex, env: Environment, id: string, reason: DisabledReason): Promise<boolean> {
  const changed = await endpoints(db, env).where({ id, status: 'enabled' }).update({ status: 'disabled', disabled_reason: reason, updated_at: db.fn.now() });
  return changed > 0;
}

// ---------------------------------------------------------------------------------------------------
// Secrets

export interface SecretSwap {
  secretEncrypted: string;
  /** The outgoing secret while it keeps signing, else null (dropped at once). */
  previousSecretEncrypted: string | null;
  previousExpiresAt: Date | null;
  rotation: number;
}

/** Swaps an endpoint's secrets, if no other rotation came first (its secret_rotation is still `fromRotation`). */
export async function swapSecrets(db: Knex, env: Environment, id: string, fromRotation: number, swap: SecretSwap): Promise<WebhookEndpointRow | undefined> {
  const [row] = await endpoints(db, env).where({ id, secret_rotation: fromRotation, deleted: false }).update({
    secret_encrypted: swap.secretEncrypted,
    previous_secret_encrypted: swap.previousSecretEncrypted,
    previous_secret_expires_at: swap.previousExpiresAt,
    secret_rotation: swap.rotation,
    updated_at: db.fn.now(),
  }).returning('*');
  return row;
}

/** The end of a rotation's grace period: drops the previous secret, unless a newer rotation replaced it. */
export async function dropPreviousSecret(db: Knex, env: Environment, id: string, rotation: number): Promise<boolean> {
  const changed = await endpoints(db, env).where({ id, secret_rotation: rotation }).whereNotNull('previous_secret_encrypted')
    .update({ previous_secret_encrypted: null, previous_secret_expires_at: null, updated_at: db.fn.now() });
  return changed > 0;
}

// ---------------------------------------------------------------------------------------------------
// Deliveries and attempts

export async function findDelivery(db: Knex, env: Environment, id: string): Promise<WebhookDeliveryRow | undefined> {
  return deliveries(db, env).where({ id }).first();
}

export interface DeliveryFilter { endpoint_id?: string; event_id?: string; status?: DeliveryStatus }

/** An account's deliveries, newest first. */
export async function listDeliveries(db: Knex, env: Environment, accountId: string, filter: DeliveryFilter, page: Page) {
  const where: Partial<WebhookDeliveryRow> = { account_id: accountId };
  if (filter.endpoint_id) where.endpoint_id = filter.endpoint_id;
  if (filter.event_id) where.event_id = filter.event_id;
  if (filter.status) where.status = filter.status;
  return paged(() => deliveries(db, env).where(where), page);
}

/** A delivery's attempts, oldest first. */
export async function listAttempts(db: Knex, env: Environment, deliveryId: string): Promise<WebhookAttemptRow[]> {
  return attempts(db, env).where({ delivery_id: deliveryId }).orderBy('attempt_no');
}

/** Dead-lettered deliveries, most recently dead-lettered first (the ops CLI). */
export async function listDeadLettered(db: Knex, env: Environment, filter: { endpointId?: string; limit: number }): Promise<WebhookDeliveryRow[]> {
  const q = deliveries(db, env).where({ status: 'dead_lettered' });
  if (filter.endpointId) void q.where({ endpoint_id: filter.endpointId });
  return q.orderBy('dead_lettered_at', 'desc').orderBy('id', 'desc').limit(filter.limit);
}

export type NewDelivery = Pick<WebhookDeliveryRow, 'id' | 'account_id' | 'endpoint_id' | 'event_id' | 'event_type' | 'payload' | 'workflow_id'>;

/** New pending deliveries; one per event and endpoint, so a repeated fan-out adds nothing. */
export async function insertDeliveries(db: Knex, env: Environment, rows: NewDelivery[]): Promise<void> {
  if (!rows.length) return;
  const now = new Date();
  await deliveries(db, env).insert(rows.map((r) => ({ ...r, status: 'pending' as const, next_attempt_at: now })))
    .onConflict(['event_id', 'endpoint_id']).ignore();
}

export type DeliveryState = Pick<WebhookDeliveryRow, 'id' | 'status' | 'attempt_count' | 'replay_count' | 'workflow_id'>;

/** Every delivery of some events, by id. */
export async function deliveriesOfEvents(db: Knex, env: Environment, eventIds: string[]): Promise<DeliveryState[]> {
  return deliveries(db, env).whereIn('event_id', eventIds).select('id', 'status', 'attempt_count', 'replay_count', 'workflow_id').orderBy('id');
}

/** Dead-letters a delivery without an attempt (its endpoint stopped taking events while it waited). */
export async function parkDelivery(db: Knex, env: Environment, id: string, why: string): Promise<void> {
  await deliveries(db, env).where({ id }).update({
    status: 'dead_lettered', next_attempt_at: null, dead_lettered_at: db.fn.now(), last_error: why, updated_at: db.fn.now(),
  });
}

export interface AttemptResult {
  status: DeliveryStatus;
  at: Date;
  statusCode: number;
  lastError: string | null;
  nextAttemptAt: Date | null;
}

/**
 * A delivery's state after one attempt, and the attempt's row, in one statement: the attempt is numbered
 * by the delivery's update (its count after it) and written only with it. Answers the attempt's number.
 */
export async function recordDeliveryAttempt(
  db: Knex, env: Environment, id: string, r: AttemptResult, attempt: Omit<WebhookAttemptRow, 'id' | 'created_at' | 'attempt_no' | 'delivery_id'>,
): Promise<number> {
  const update = raw(db, env, 'webhook_deliveries').where({ id }).update({
    status: r.status,
    attempt_count: db.raw('attempt_count + 1'),
    last_attempt_at: r.at,
    last_status_code: r.statusCode,
    last_error: r.lastError,
    next_attempt_at: r.nextAttemptAt,
    ...(r.status === 'succeeded' ? { succeeded_at: db.fn.now() } : {}),
    ...(r.status === 'dead_lettered' ? { dead_lettered_at: db.fn.now() } : {}),
    updated_at: db.fn.now(),
  }).returning('attempt_count');
  const row: Record<string, Knex.Value> = { id: newId('wha'), delivery_id: id, ...attempt };
  const columns = Object.keys(row);
  const numbered = db.select([...columns.map((c) => db.raw('?', [row[c]])), 'attempt_count']).from('recorded');
  const [inserted] = await db.with('recorded', update)
    .into(db.raw('?? (??)', [envTable(env, 'webhook_attempts'), [...columns, 'attempt_no']]))
    .insert(numbered).returning('attempt_no') as { attempt_no: number }[];
  if (!inserted) throw new Error(`webhook delivery ${id} is missing`);
  return inserted.attempt_no;
}

type Resendable = Pick<WebhookDeliveryRow, 'id' | 'status' | 'replay_count' | 'workflow_id' | 'next_attempt_at'>;

/** The store side of replay and recover, for the webhooks command client (workflows/webhooks/client.ts). */
export function replayStore(db: Knex, env: Environment) {
  return {
    environment: env,
    async claim(d: Resendable, n: number, workflowId: string): Promise<boolean> {
      const claimed = await deliveries(db, env).where({ id: d.id, status: d.status, replay_count: d.replay_count })
        .update({ status: 'pending', replay_count: n, workflow_id: workflowId, next_attempt_at: db.fn.now(), updated_at: db.fn.now() });
      return claimed > 0;
    },
    async release(d: Resendable, n: number): Promise<void> {
      await deliveries(db, env).where({ id: d.id, replay_count: n })
        .update({ status: d.status, replay_count: d.replay_count, workflow_id: d.workflow_id, next_attempt_at: d.next_attempt_at });
    },
    async recoverable(endpointId: string, since: Date, until?: Date): Promise<WebhookDeliveryRow[]> {
      const q = deliveries(db, env).where({ endpoint_id: endpointId }).whereIn('status', ['failed', 'dead_lettered']).where('created_at', '>=', since);
      if (until) void q.where('created_at', '<', until);
      return q.orderBy('created_at').orderBy('id');
    },
  };
}

/**
 * How many deliveries are waiting (pending or failed, to be retried) and how many are dead-lettered,
 * over both environments: the worker's gauges, read on each scrape (one grouped COUNT per environment).
 */
export async function countDeliveriesByState(db: Knex): Promise<{ pending: number; deadLettered: number }> {
  let pending = 0;
  let deadLettered = 0;
  for (const env of Object.keys(ENV_SCHEMAS) as Environment[]) {
    const rows = await db(envTable(env, 'webhook_deliveries'))
      .select('status').count<{ status: DeliveryStatus; count: string }[]>('* as count')
      .whereIn('status', ['pending', 'failed', 'dead_lettered']).groupBy('status');
    for (const row of rows) {
      if (row.status === 'dead_lettered') deadLettered += Number(row.count);
      else pending += Number(row.count);
    }
  }
  return { pending, deadLettered };
}
