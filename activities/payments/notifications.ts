import type { Knex } from 'knex';
import type { Environment } from '../../db/environments';
import { storedNotification, type NotificationTarget } from '../../db/provider-events';
import { logger } from '../../lib/logger';
import type { ChargeRow } from '../../db/payments';
import type { NotifiedOperation, ProviderEventSignal } from '../../contracts/temporal';

/** What a notification about `operation` on `charge` must name: the charge, and the config it was made through. */
export function notificationTarget(operation: NotifiedOperation, charge: Pick<ChargeRow, 'id' | 'payment_provider_config_id'>, refundId?: string): NotificationTarget {
  return { operation, chargeId: charge.id, providerConfigId: charge.payment_provider_config_id ?? '', ...(refundId ? { refundId } : {}) };
}

/**
 * The notification a `providerEvent` signal points at, as stored when its webhook was verified
 * (db/provider-events.ts `storedNotification`). Anyone who reaches Temporal can send the signal, so its
 * own outcome is never applied: without a stored event about `target` it is ignored (a warning with ids
 * only) and the caller goes on as if nothing had come (docs/security.md).
 */
export async function verifiedNotification(db: Knex, env: Environment, signal: ProviderEventSignal, target: NotificationTarget): Promise<ProviderEventSignal | undefined> {
  // A signal's fields are whatever its sender wrote: only a string can name a stored event.
  const eventId = typeof signal.eventId === 'string' ? signal.eventId : undefined;
  const stored = eventId ? await storedNotification(db, env, eventId, target) : undefined;
  if (!stored) {
    logger.warn({
      environment: env, provider_event_id: eventId?.slice(0, 64), operation: target.operation, charge_id: target.chargeId,
      ...(target.refundId ? { refund_id: target.refundId } : {}),
    }, 'providerEvent signal ignored: no stored provider event matches it');
  }
  return stored;
}
