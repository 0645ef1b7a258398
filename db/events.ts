import { paged, type Page } from './page';
import type { Knex } from 'knex';
import { newId } from '../lib/ids';
import { envTable, type Environment } from './environments';
import { PREPARED, withAlongside, type NamedAlongside } from './knex';
import { listeningEndpointQuery } from './webhooks';

/**
 * The events store: each environment's `events` table, the timeline behind every transition and the
 * source of webhooks (docs/webhooks.md#events), and their outbox. Every feature writes its events through
 * `appendEvents` or `appendEventsOfWrite`, inside its own transaction when it has one.
 */

export interface EventRow {
  id: string;
  event: string;
  account_id: string;
  workspace_id: string | null;
  data: Record<string, unknown>;
  version: number;
  request_id: string | null;
  trace_id: string | null;
  span_id: string | null;
  region: string | null;
  subject_type: string | null;
  subject_id: string | null;
  payment_id: string | null;
  charge_id: string | null;
  refund_id: string | null;
  checkout_session_id: string | null;
  actor_type: string | null;
  actor_id: string | null;
  api_key_id: string | null;
  service: string | null;
  routing_plan_id: string | null;
  attempt_id: string | null;
  /** Set while the event awaits its fan-out (a lease's end while a dispatcher holds it); null once done, or for one nobody listens to. */
  fan_out_due: Date | null;
  created_at: Date;
}

/** One event to append: its name, its account, and whatever it is about. */
export interface EventRecord {
  event: string;
  accountId: string;
  workspaceId?: string | null;
  data?: Record<string, unknown>;
  subjectType?: string;
  subjectId?: string;
  paymentId?: string;
  chargeId?: string;
  refundId?: string;
  routingPlanId?: string;
  checkoutSessionId?: string;
  attemptId?: string;
  actorType?: string;
  actorId?: string;
  apiKeyId?: string;
  requestId?: string;
  traceId?: string;
  /** The span that caused the event (the API request's): its fan-out continues that trace. */
  spanId?: string;
}

const events = (db: Knex, env: Environment) => db<EventRow>(envTable(env, 'events'));

/** Every column of an event's row, in the table's order: what the outbox's prepared claim returns by name. */
export const EVENT_COLUMNS = [
  'id', 'event', 'account_id', 'workspace_id', 'data', 'version', 'request_id', 'trace_id', 'region', 'subject_type', 'subject_id',
  'payment_id', 'charge_id', 'refund_id', 'checkout_session_id', 'actor_type', 'actor_id', 'api_key_id', 'service', 'routing_plan_id',
  'attempt_id', 'created_at', 'fan_out_due', 'span_id',
] as const satisfies readonly (keyof EventRow)[];

/**
 * Appends event records (the `event` resource, version 1) to an environment's timeline and answers their
 * ids in order. `alongside`: other stores' statements to run with the insert (db/knex.ts), or on their own
 * when there is no event. An event an enabled endpoint listens to is written due for its fan-out
 * (eventsInsert), so writing it is all it takes to send it: docs/webhooks.md#the-outbox-how-events-leave.
 */
export async function appendEvents(db: Knex, env: Environment, records: EventRecord[], alongside: readonly NamedAlongside[] = []): Promise<string[]> {
  if (!records.length) {
    for (const [, statement] of alongside) await statement;
    return [];
  }
  const rows = eventRows(records);
  await withAlongside(eventsInsert(db, env, rows), alongside);
  return rows.map((r) => r.id);
}

/**
 * Appends event records with another store's write of what they show, in one statement and only if that
 * write wrote: `write` (db/knex.ts's Alongside) must return a row when it writes and none when it does not
 * (an insert that found its row: a retry). The events then go in only with it, and `alongside` runs either
 * way, as appendEvents's does. Answers the events' ids, or undefined when `write` wrote nothing and so
 * neither did this.
 */
export async function appendEventsOfWrite(
  db: Knex, env: Environment, records: EventRecord[], write: NamedAlongside, alongside: readonly NamedAlongside[] = [],
): Promise<string[] | undefined> {
  if (!records.length) throw new Error('appendEventsOfWrite needs an event to write with');
  const rows = eventRows(records);
  const written = await withAlongside(eventsInsert(db, env, rows, write[0]), [write, ...alongside]).options(PREPARED) as unknown[];
  return written.length ? rows.map((r) => r.id) : undefined;
}

/**
 * The insert of event rows, as one JSON value typed by the table's own row type. Each row is due for a
 * fan-out (`fan_out_due` now) when an enabled endpoint of its account listens to its type, read in the
 * snapshot the row is written in; the others never are. With `onlyIfWrote`, the rows go in only if the
 * statement's CTE of that name wrote (db/knex.ts insertIfFirstWrote).
 */
function eventsInsert(db: Knex, env: Environment, rows: ReturnType<typeof eventRows>, onlyIfWrote?: string): Knex.QueryBuilder {
  const table = envTable(env, 'events');
  const columns = Object.keys(rows[0]);
  const due = db.raw('case when exists (?) then now() end', [listeningEndpointQuery(db, env, 'e.account_id', 'e.event')]);
  const selected = db.raw(
    `select ??, ? from jsonb_populate_recordset(null::??, ?::jsonb) as e${onlyIfWrote ? ' where exists (select 1 from ??)' : ''}`,
    [columns, due, table, JSON.stringify(rows), ...(onlyIfWrote ? [onlyIfWrote] : [])],
  );
  return db.into(db.raw('?? (??)', [table, [...columns, 'fan_out_due']])).insert(selected).returning('id');
}

/** The rows of some event records. */
function eventRows(records: EventRecord[]) {
  return records.map((e) => ({
    id: newId('evt'),
    event: e.event,
    account_id: e.accountId,
    workspace_id: e.workspaceId ?? null,
    data: e.data ?? {},
    version: 1,
    request_id: e.requestId ?? null,
    trace_id: e.traceId ?? null,
    span_id: e.spanId ?? null,
    region: process.env.SB_REGION ?? 'local',
    subject_type: e.subjectType ?? null,
    subject_id: e.subjectId ?? null,
    payment_id: e.paymentId ?? null,
    charge_id: e.chargeId ?? null,
    refund_id: e.refundId ?? null,
    checkout_session_id: e.checkoutSessionId ?? null,
    actor_type: e.actorType ?? null,
    actor_id: e.actorId ?? null,
    api_key_id: e.apiKeyId ?? null,
    service: 'switchboard',
    routing_plan_id: e.routingPlanId ?? null,
    attempt_id: e.attemptId ?? null,
  }));
}

// The outbox (docs/webhooks.md#the-outbox-how-events-leave): events due for a fan-out, which the
// workers' dispatchers claim.

export { EVENTS_DUE_CHANNEL } from './migrations/026_event_outbox';

/**
 * Claims up to `limit` events due for a fan-out, oldest due first, and holds them for `leaseMs`: another
 * dispatcher skips them until then, and takes them again if this one never finishes. Answers the events
 * whole (the fan-out builds their deliveries from them; each keeps the span that caused it), in no order:
 * each fans out on its own.
 */
export async function claimDueEvents(db: Knex, env: Environment, limit: number, leaseMs: number): Promise<EventRow[]> {
  const due = events(db, env).where('fan_out_due', '<=', db.fn.now()).orderBy('fan_out_due').limit(limit).forUpdate().skipLocked().select('id');
  const rows = await events(db, env).whereIn('id', due)
    .update({ fan_out_due: db.raw('now() + make_interval(secs => ?)', [leaseMs / 1000]) }).returning(EVENT_COLUMNS).options(PREPARED);
  return rows as EventRow[];
}

/**
 * The events' fan-outs are done: their deliveries exist, each attempted or handed to its workflow. The ids
 * go as one array, so that however many there are it is one statement's text, prepared once.
 */
export async function markFannedOut(db: Knex, env: Environment, ids: string[]): Promise<void> {
  if (ids.length) await events(db, env).whereRaw('id = any(?)', [ids]).update({ fan_out_due: null }).options(PREPARED);
}

/** Claimed events whose fan-out failed: due again after `delayMs`. */
export async function fanOutLater(db: Knex, env: Environment, ids: string[], delayMs: number): Promise<void> {
  if (ids.length) await events(db, env).whereIn('id', ids).update({ fan_out_due: db.raw('now() + make_interval(secs => ?)', [delayMs / 1000]) });
}

/** Events by id, oldest first (the fan-out's order). */
export async function eventsByIds(db: Knex, env: Environment, ids: string[]): Promise<EventRow[]> {
  return events(db, env).whereIn('id', ids).orderBy('created_at').orderBy('id');
}

/** The events of some payments, oldest first (a payment read with include_events). */
export async function eventsOfPayments(db: Knex, env: Environment, paymentIds: string[]): Promise<EventRow[]> {
  if (!paymentIds.length) return [];
  return events(db, env).whereIn('payment_id', paymentIds).orderBy('created_at').orderBy('id');
}

export interface EventFilter { payment_id?: string; type?: string }

/** An account's events, newest first, one page of them, and how many there are in all (GET /events). */
export async function listEvents(
  db: Knex, env: Environment, accountId: string, filter: EventFilter, page: Page,
): Promise<{ rows: EventRow[]; total: number }> {
  const base = () => {
    const q = events(db, env).where({ account_id: accountId });
    if (filter.payment_id) void q.where({ payment_id: filter.payment_id });
    if (filter.type) void q.where({ event: filter.type });
    return q;
  };
  return paged(base, page);
}
