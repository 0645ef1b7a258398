import type { Knex } from 'knex';
import { newId } from '../lib/ids';
import { envTable, Environment } from '../db/environments';

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

/** Appends event records (the `event` resource, version 1; docs/webhooks.md#events) to an environment's timeline. */
export async function appendEvents(db: Knex, env: Environment, events: EventRecord[]): Promise<string[]> {
  if (!events.length) return [];
  const rows = events.map((e) => ({
    id: newId('evt'),
    event: e.event,
    account_id: e.accountId,
    workspace_id: e.workspaceId ?? null,
    data: JSON.stringify(e.data ?? {}),
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
  await db(envTable(env, 'events')).insert(rows);
  return rows.map((r) => r.id);
}

/**
 * The ids to fan out to webhooks: all of them when the account has an enabled endpoint, none when it
 * has not — so a payment of an account without webhooks costs no fan-out activity at all.
 */
export async function idsToPublish(db: Knex, env: Environment, accountId: string, eventIds: string[]): Promise<string[]> {
  if (!eventIds.length) return [];
  const endpoint = await db(envTable(env, 'webhook_endpoints')).where({ account_id: accountId, status: 'enabled', deleted: false }).first('id');
  return endpoint ? eventIds : [];
}
