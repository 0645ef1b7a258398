// Keeping card data and credentials out of what is stored from a processor's answers and webhooks.

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
