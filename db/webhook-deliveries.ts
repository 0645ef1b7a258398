import type { Knex } from 'knex';
import { newId } from '../lib/ids';
import type { ResponseClass } from '../lib/webhook-retry';
import type { DeliveryStatus, DeliveryTrigger } from '../contracts/webhooks';
import { ENV_SCHEMAS, envTable, type Environment } from './environments';
import { paged, type Page } from './page';
import { PREPARED } from './knex';

/**
 * The webhook deliveries store (docs/webhooks.md): each environment's `webhook_deliveries` and
 * `webhook_attempts`, the log of what was sent to an endpoint and how it answered. The only module that
 * queries those tables; apart from the endpoints (db/webhooks.ts), which are configuration, because this
 * log is written by the delivery workflow on every attempt and read back by replay and recovery.
 */

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

const deliveries = (db: Knex, env: Environment) => db<WebhookDeliveryRow>(envTable(env, 'webhook_deliveries'));
const attempts = (db: Knex, env: Environment) => db<WebhookAttemptRow>(envTable(env, 'webhook_attempts'));
/** Writes that carry SQL expressions, which the typed builder would refuse. */
const raw = (db: Knex, env: Environment) => db(envTable(env, 'webhook_deliveries'));

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

/**
 * Writes the events' new pending deliveries, one per event and endpoint (a repeated fan-out adds none),
 * and answers every delivery of the events, new or written before, by id: one statement. The table's
 * scan runs in the statement's snapshot, before the insert, so the two halves never hold the same row.
 */
export async function insertDeliveriesOf(db: Knex, env: Environment, eventIds: string[], rows: NewDelivery[]): Promise<WebhookDeliveryRow[]> {
  if (!rows.length) return deliveries(db, env).whereIn('event_id', eventIds).orderBy('id');
  const now = new Date();
  const inserted = deliveries(db, env).insert(rows.map((r) => ({ ...r, status: 'pending' as const, next_attempt_at: now })))
    .onConflict(['event_id', 'endpoint_id']).ignore().returning('*');
  const all: WebhookDeliveryRow[] = await db.with('inserted', inserted).select('*').from('inserted')
    .unionAll((earlier) => { void earlier.select('*').from(envTable(env, 'webhook_deliveries')).whereIn('event_id', eventIds); });
  return all.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** Names the workflow that makes a delivery's attempts from now on, unless one is named already. */
export async function nameDeliveryWorkflow(db: Knex, env: Environment, id: string, workflowId: string): Promise<void> {
  await deliveries(db, env).where({ id }).whereNull('workflow_id').update({ workflow_id: workflowId });
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
  const update = raw(db, env).where({ id }).update({
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
    .insert(numbered).returning('attempt_no').options(PREPARED) as { attempt_no: number }[];
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
