import type { Knex } from 'knex';
import type { NotifiedOperation, NotifiedOutcome, ProviderEventSignal } from '../contracts/temporal';
import type { DisputeNotice } from '../lib/providers/disputes';
import { envTable, type Environment } from './environments';

/**
 * The provider-events store: each environment's `provider_events`, the processors' notifications as
 * received through POST /v1/provider-webhooks/{provider_config_id} (docs/connectors.md#provider-webhooks).
 * One row per (config, processor event id): a processor that sends an event again finds it here.
 */

export type ProviderEventDelivery = 'signalled' | 'no_target' | 'workflow_closed';

export interface ProviderEventRow {
  id: string;
  payment_provider_config_id: string;
  account_id: string;
  processor_event_id: string;
  type: string;
  operation: NotifiedOperation | null;
  payment_id: string | null;
  charge_id: string | null;
  refund_id: string | null;
  outcome: NotifiedOutcome | null;
  provider_code: string | null;
  payload: Record<string, unknown>;
  /** A dispute's event, normalized (lib/providers/disputes.ts): what the dispute's workflow applies. */
  dispute: DisputeNotice | null;
  delivered_at: Date | null;
  delivery: ProviderEventDelivery | null;
  created_at: Date;
}

export type NewProviderEvent = Omit<ProviderEventRow, 'delivered_at' | 'delivery' | 'created_at'>;

const table = (db: Knex, env: Environment) => db<ProviderEventRow>(envTable(env, 'provider_events'));

/**
 * Stores an event unless the config already has one under the processor's id. Returns the row either
 * way, and whether this call wrote it.
 */
export async function recordProviderEvent(db: Knex, env: Environment, event: NewProviderEvent): Promise<{ row: ProviderEventRow; inserted: boolean }> {
  const [inserted] = await db(envTable(env, 'provider_events'))
    .insert({
      ...event, outcome: event.outcome ? JSON.stringify(event.outcome) : null, payload: JSON.stringify(event.payload),
      dispute: event.dispute ? JSON.stringify(event.dispute) : null,
    })
    .onConflict(['payment_provider_config_id', 'processor_event_id']).ignore()
    .returning('*') as ProviderEventRow[];
  if (inserted) return { row: inserted, inserted: true };
  const existing = await table(db, env)
    .where({ payment_provider_config_id: event.payment_provider_config_id, processor_event_id: event.processor_event_id }).first();
  if (!existing) throw new Error(`provider event ${event.processor_event_id} vanished`);
  return { row: existing, inserted: false };
}

/** Notes where an event went (once delivered, a repeat of it is acknowledged without a second signal). */
export async function markProviderEventDelivered(db: Knex, env: Environment, id: string, delivery: ProviderEventDelivery): Promise<void> {
  await table(db, env).where({ id }).update({ delivered_at: new Date(), delivery });
}

/** What a step waiting for a notification expects it to be about. */
export interface NotificationTarget {
  operation: NotifiedOperation;
  chargeId: string;
  /** The config the charge was made through: only its verified webhooks speak for the charge. */
  providerConfigId: string;
  /** For a refund's notification; any other names none. */
  refundId?: string;
}

/**
 * The stored event `id` as the notification to apply, if it is one about `target` (same operation,
 * charge, refund and config) with a final outcome; nothing otherwise. Its facts are the stored ones:
 * a `providerEvent` signal only says which stored event to look at (docs/security.md).
 */
export async function storedNotification(db: Knex, env: Environment, id: string, target: NotificationTarget): Promise<ProviderEventSignal | undefined> {
  const row = await table(db, env).where({
    id, operation: target.operation, charge_id: target.chargeId, payment_provider_config_id: target.providerConfigId,
    refund_id: target.refundId ?? null,
  }).first();
  if (!row?.operation || !row.charge_id || !row.outcome) return undefined;
  return {
    eventId: row.id, type: row.type, operation: row.operation, chargeId: row.charge_id, outcome: row.outcome,
    ...(row.refund_id ? { refundId: row.refund_id } : {}), ...(row.provider_code ? { providerCode: row.provider_code } : {}),
  };
}

/** A charge's events, oldest first (operators, tests). */
export async function providerEventsOfCharge(db: Knex, env: Environment, chargeId: string): Promise<ProviderEventRow[]> {
  return table(db, env).where({ charge_id: chargeId }).orderBy('created_at').orderBy('id');
}

/** A config's events, oldest first. */
export async function providerEventsOfConfig(db: Knex, env: Environment, configId: string): Promise<ProviderEventRow[]> {
  return table(db, env).where({ payment_provider_config_id: configId }).orderBy('created_at').orderBy('id');
}

/** A stored event by its id, for a dispute's workflow to apply (never what a signal says). */
export async function findProviderEvent(db: Knex, env: Environment, id: string): Promise<ProviderEventRow | undefined> {
  return table(db, env).where({ id }).first();
}
