import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { envTable, type Environment } from '../db/environments';
import type { Db } from '../db/knex';
import { parseRetrySchedule } from './webhook-retry';
import { startDeliveryWorkflow } from './webhook-start';
import { retryNowSignal, WEBHOOK_WORKFLOW_IDS } from '../workflows/webhook-shared';

/**
 * Replay and recover of webhook deliveries, shared by the API routes and the ops CLI. Callers check
 * who may do it and that the endpoint is enabled; these functions only send.
 */
export interface ReplayDeps {
  db: Db;
  temporal(): Promise<Client>;
  /** WEBHOOK_RETRY_SCHEDULE as configured (undefined: the default schedule). */
  webhookRetrySchedule?: string;
}

export type Resend = 'signalled' | 'started' | 'skipped';

/**
 * Sends a delivery again now, with the same webhook-id. One still retrying (pending/failed) has a
 * workflow waiting on a timer: wake it. Otherwise claim the row (conditional on what we read, so two
 * replays cannot both start) and run a new attempt sequence `webhook-delivery/<whd_id>/replay-<n>`.
 */
export async function resendDelivery(deps: ReplayDeps, env: Environment, delivery: any): Promise<Resend> {
  const client = await deps.temporal();
  if (delivery.status === 'pending' || delivery.status === 'failed') {
    try {
      await client.workflow.getHandle(delivery.workflow_id).signal(retryNowSignal);
      return 'signalled';
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      // Its workflow is gone (failed, terminated): start a new sequence below.
    }
  }
  const table = envTable(env, 'webhook_deliveries');
  const n = delivery.replay_count + 1;
  const workflowId = WEBHOOK_WORKFLOW_IDS.replay(delivery.id, n);
  const claimed = await deps.db(table).where({ id: delivery.id, status: delivery.status, replay_count: delivery.replay_count })
    .update({ status: 'pending', replay_count: n, workflow_id: workflowId, next_attempt_at: deps.db.fn.now(), updated_at: deps.db.fn.now() });
  if (!claimed) return 'skipped';
  try {
    await startDeliveryWorkflow(client, {
      workflowId, environment: env, deliveryId: delivery.id, retrySchedule: parseRetrySchedule(deps.webhookRetrySchedule), trigger: 'replay',
    });
  } catch (err) {
    await deps.db(table).where({ id: delivery.id, replay_count: n })
      .update({ status: delivery.status, replay_count: delivery.replay_count, workflow_id: delivery.workflow_id, next_attempt_at: delivery.next_attempt_at });
    throw err;
  }
  return 'started';
}

/** Re-sends every failed or dead-lettered delivery of an endpoint created in [since, until); answers how many. */
export async function recoverDeliveries(deps: ReplayDeps, env: Environment, endpointId: string, since: Date, until?: Date): Promise<number> {
  const deliveries = await deps.db(envTable(env, 'webhook_deliveries'))
    .where({ endpoint_id: endpointId }).whereIn('status', ['failed', 'dead_lettered']).where('created_at', '>=', since)
    .modify((q) => { if (until) void q.where('created_at', '<', until); })
    .orderBy('created_at').orderBy('id');
  let recovered = 0;
  for (let i = 0; i < deliveries.length; i += 20) {
    const results = await Promise.all(deliveries.slice(i, i + 20).map((d: any) => resendDelivery(deps, env, d)));
    recovered += results.filter((r) => r !== 'skipped').length;
  }
  return recovered;
}
