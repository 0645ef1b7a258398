// Helpers for building `exchanges` records that are safe to store and show.
import type { ProviderEventSignal } from '../../contracts/temporal';
import type { ProviderExchange, ProviderOutcome } from './types';

// Field names that may carry a card number, CVC or credential in any provider's JSON. Adapters build
// request summaries from an allow-list; this is the second line of defence for response bodies.
const SECRET_KEYS = new Set([
  'number', 'pan', 'card_number', 'cvc', 'cvv', 'cvc2', 'security_code',
  'api_key', 'apikey', 'secret', 'secret_key', 'client_secret', 'password', 'authorization', 'token', 'access_token',
  // 3-D Secure authentication values: one-time cryptograms
  'cavv', 'cryptogram', 'authentication_value',
]);

const MAX_TEXT = 4_096;

export function redactSecrets(value: unknown, depth = 0): unknown {
  if (depth > 10) return '[truncated]';
  if (Array.isArray(value)) return value.map((item) => redactSecrets(item, depth + 1));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, child]) => [key, SECRET_KEYS.has(key.toLowerCase()) ? '[redacted]' : redactSecrets(child, depth + 1)]),
    );
  }
  if (typeof value === 'string' && value.length > MAX_TEXT) return `${value.slice(0, MAX_TEXT)}…`;
  return value;
}

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
