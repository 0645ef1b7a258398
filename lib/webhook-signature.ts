import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signing, Standard Webhooks scheme (https://www.standardwebhooks.com): the signed content is
 * `<webhook-id>.<webhook-timestamp>.<raw body>`, HMAC-SHA256 under the base64-decoded secret (the part
 * after `whsec_`), sent as `v1,<base64>`; during a secret rotation one signature per live secret,
 * space-separated. Pure functions: the caller supplies the clock and the secrets.
 */
export const SECRET_PREFIX = 'whsec_';

/** A new endpoint secret: `whsec_` + base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** The HMAC key of a secret: the base64-decoded part after `whsec_`. */
export function secretKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('a webhook secret starts with whsec_');
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  if (key.length < 24) throw new Error('a webhook secret carries at least 24 bytes');
  return key;
}

/** One `v1,<base64>` signature of one message under one secret. */
export function signature(secret: string, id: string, timestamp: number, body: string | Buffer): string {
  const mac = createHmac('sha256', secretKey(secret));
  mac.update(`${id}.${timestamp}.`);
  mac.update(body);
  return `v1,${mac.digest('base64')}`;
}

/** The `webhook-signature` header value: one signature per secret (current first), space-separated. */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string | Buffer): string {
  if (!secrets.length) throw new Error('signing needs at least one secret');
  return secrets.map((secret) => signature(secret, id, timestamp, body)).join(' ');
}

export interface SignedHeadersInput {
  /** The event id: `webhook-id`, stable across retries and replays. */
  id: string;
  /** Unix seconds of this attempt. */
  timestamp: number;
  /** The exact bytes that will be sent. */
  body: string | Buffer;
  /** The current secret first, then a previous one while it is still valid. */
  secrets: readonly string[];
  eventType: string;
}

/** Every header of a signed delivery: the Standard Webhooks names and their X-Switchboard-* twins. */
export function signedHeaders(input: SignedHeadersInput): Record<string, string> {
  const sig = signatureHeader(input.secrets, input.id, input.timestamp, input.body);
  const ts = String(input.timestamp);
  return {
    'content-type': 'application/json',
    'webhook-id': input.id,
    'webhook-timestamp': ts,
    'webhook-signature': sig,
    'x-switchboard-id': input.id,
    'x-switchboard-timestamp': ts,
    'x-switchboard-signature': sig,
    'x-switchboard-event-type': input.eventType,
  };
}

/**
 * The receiver's side, for our own tests and tools: true when any `v1` signature in the header matches
 * the secret and the timestamp is within `toleranceSeconds` of `nowSeconds` (replay protection).
 */
export function verifySignature(
  secret: string,
  headers: { id: string; timestamp: string; signature: string },
  body: string | Buffer,
  nowSeconds: number,
  toleranceSeconds = 300,
): boolean {
  const timestamp = Number(headers.timestamp);
  if (!/^\d+$/.test(headers.timestamp) || Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(signature(secret, headers.id, timestamp, body).slice(3), 'base64');
  return headers.signature.split(' ').some((candidate) => {
    const [version, value] = candidate.split(',', 2);
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
