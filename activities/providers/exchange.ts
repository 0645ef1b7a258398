// Helpers for building `exchanges` records that are safe to store and show.
import type { ProviderEventSignal } from '../../contracts/temporal';
import type { ProviderExchange, ProviderOutcome } from './types';

export { redactSecrets } from '../../lib/providers/redact';

/** The stored record of one exchange: its outcome, our decline code and, when there is one, the provider's own. */
export function recordExchange(exchange: Omit<ProviderExchange, 'outcome'>, outcome: ProviderOutcome, providerCode?: string): ProviderExchange {
  return {
    ...exchange,
    outcome: outcome.kind,
    ...('declineCode' in outcome ? { decline_code: outcome.declineCode } : {}),
    ...(providerCode ? { provider_code: providerCode } : {}),
  };
}

/**
 * A processor notification as an entry of the charge's exchanges: what the processor pushed (its event
 * id and type) in place of an answer, under the key of the operation it completes.
 */
export function notificationExchange(notification: ProviderEventSignal, idempotencyKey: string): ProviderExchange {
  return recordExchange({
    operation: notification.operation,
    idempotency_key: idempotencyKey,
    request: { method: 'NOTIFICATION', path: notification.type },
    response: { status: 200, body: { provider_event_id: notification.eventId } },
    started_at: new Date().toISOString(),
    duration_ms: 0,
  }, notification.outcome, notification.providerCode);
}
