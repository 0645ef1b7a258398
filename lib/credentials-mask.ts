// How a provider config's credentials are shown: which keys are set, never their values.

const MASK = '••••';
/** Strings this long show their last 4 characters; shorter ones show nothing (never more than a third). */
const MASK_SHOW_LAST4_FROM = 12;
/** The sandbox simulator's knobs (docs/sandbox-processor.md#the-sandbox-processor-simulator): switches and numbers that are not secret, so they stay visible. */
const VISIBLE_CREDENTIAL_KEYS = new Set(['simulate']);

/**
 * The masked view of a provider config's credentials: keys are kept so a merchant can see what is set,
 * every string becomes `••••` (plus its last 4 characters when it is at least 12 long), and numbers and
 * booleans become `••••` too — except the scalar knobs under `simulate`, which are test switches.
 */
export function maskCredentials(credentials: Record<string, unknown>): Record<string, unknown> {
  return maskObject(credentials, false);
}

function maskObject(value: object, visible: boolean): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, mask(child, visible || VISIBLE_CREDENTIAL_KEYS.has(key))]));
}

function mask(value: unknown, visible: boolean): unknown {
  if (Array.isArray(value)) return value.map((item) => mask(item, visible));
  if (typeof value === 'object' && value !== null) return maskObject(value, visible);
  if (typeof value === 'string') return value.length >= MASK_SHOW_LAST4_FROM ? `${MASK}${value.slice(-4)}` : MASK;
  if (value === null) return null;
  return visible && (typeof value === 'number' || typeof value === 'boolean') ? value : MASK;
}
