import { paged, type Page } from './page';
import type { Knex } from 'knex';
import { newId } from '../lib/ids';
import { envTable, type Environment } from './environments';
import { insertIfFirstWrote, withAlongside, type NamedAlongside } from './knex';
import { hasEnabledEndpoint, listeningEndpointQuery } from './webhooks';

/**
 * The events store: each environment's `events` table, the timeline behind every transition and the
 * source of webhooks (docs/webhooks.md#events). Every feature writes its events through `appendEvents`,
 * inside its own transaction when it has one.
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
}

const events = (db: Knex, env: Environment) => db<EventRow>(envTable(env, 'events'));

/** Appends event records (the `event` resource, version 1) to an environment's timeline; answers their ids in order. */
export async function appendEvents(db: Knex, env: Environment, records: EventRecord[]): Promise<string[]> {
  if (!records.length) return [];
  const rows = eventRows(records);
  await db(envTable(env, 'events')).insert(rows);
  return rows.map((r) => r.id);
}

/**
 * Appends one account's event records and answers the ids to fan out to webhooks: those an enabled
 * endpoint of the account listens to (listeningEndpointQuery). One statement: the insert returns, per
 * event, whether one does, read in the snapshot the events are written in. `alongside`:
 * other stores' statements to run with the insert (db/knex.ts), or on their own when there is no event.
 */
export async function appendEventsToPublish(
  db: Knex, env: Environment, accountId: string, records: EventRecord[], alongside: readonly NamedAlongside[] = [],
): Promise<string[]> {
  if (!records.length) {
    for (const [, statement] of alongside) await statement;
    return [];
  }
  const rows = eventRows(records);
  const insert = db(envTable(env, 'events')).insert(rows).returning(publishedIds(db, env, accountId));
  return listenedIds(await withAlongside(insert, alongside) as Published[]);
}

/**
 * Appends one account's event records with another store's write of what they show, in one statement and
 * only if that write wrote: `write` (db/knex.ts's Alongside) must return a row when it writes and none when
 * it does not (an insert that found its row: a retry). The events then go in only with it — the CTE of
 * its name, read by the events' insert — and `alongside` runs either way, as appendEventsToPublish's does.
 * Answers the ids to fan out (see appendEventsToPublish), or undefined when `write` wrote nothing and so
 * neither did this.
 */
export async function appendEventsOfWrite(
  db: Knex, env: Environment, accountId: string, records: EventRecord[], write: NamedAlongside, alongside: readonly NamedAlongside[] = [],
): Promise<string[] | undefined> {
  if (!records.length) throw new Error('appendEventsOfWrite needs an event to write with');
  const rows = eventRows(records, (data) => data);
  const insert = insertIfFirstWrote(db, envTable(env, 'events'), rows, write[0]).returning(publishedIds(db, env, accountId));
  const written = await withAlongside(insert, [write, ...alongside]) as Published[];
  return written.length ? listenedIds(written) : undefined;
}

/** An inserted event's id, and whether an enabled endpoint of its account listens to its type. */
interface Published { id: string; publish: boolean }

/** What an events insert returns for listenedIds: each row's id and whether anyone listens (read in the insert's snapshot). */
function publishedIds(db: Knex, env: Environment, accountId: string): (string | Knex.Raw)[] {
  return ['id', db.raw('exists (?) as publish', [listeningEndpointQuery(db, env, accountId, 'events.event')])];
}

const listenedIds = (rows: Published[]) => rows.filter((r) => r.publish).map((r) => r.id);

/**
 * The rows of some event records; `data` goes in as JSON text (jsonb) by default: the typed builder would
 * want the parsed object.
 */
function eventRows(records: EventRecord[], data: (value: Record<string, unknown>) => unknown = (value) => JSON.stringify(value)) {
  return records.map((e) => ({
    id: newId('evt'),
    event: e.event,
    account_id: e.accountId,
    workspace_id: e.workspaceId ?? null,
    data: data(e.data ?? {}),
    version: 1,
    request_id: e.requestId ?? null,
    trace_id: e.traceId ?? null,
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

/**
 * The ids to fan out to webhooks: all of them when the account has an enabled endpoint, none when it
 * has not — so a payment of an account without webhooks costs no fan-out activity at all.
 */
export async function idsToPublish(db: Knex, env: Environment, accountId: string, eventIds: string[]): Promise<string[]> {
  if (!eventIds.length) return [];
  return (await hasEnabledEndpoint(db, env, accountId)) ? eventIds : [];
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

/** The ids of a charge's events, in id order. */
export async function eventIdsOfCharge(db: Knex, env: Environment, chargeId: string): Promise<string[]> {
  return events(db, env).where({ charge_id: chargeId }).orderBy('id').pluck('id');
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
