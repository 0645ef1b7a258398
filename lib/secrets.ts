import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { customAlphabet } from 'nanoid';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const base62 = customAlphabet(BASE62, 40);

export type KeyKind = 'sk' | 'pk';
export type KeyMode = 'live' | 'test';

/** A new API key plaintext, e.g. `sk_test_` + 40 base62 characters. */
export function generateApiKey(kind: KeyKind, mode: KeyMode): string {
  return `${kind}_${mode}_${base62()}`;
}

/**
 * Keys are stored only as HMAC-SHA256 under a server pepper: fast enough for every request (a slow
 * password hash is pointless for 238 bits of randomness) and useless to anyone holding the table alone.
 */
export function hashApiKey(plaintext: string, pepper: string): string {
  return createHmac('sha256', pepper).update(plaintext).digest('hex');
}

export function hashesEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a, 'hex');
  const bb = Buffer.from(b, 'hex');
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64');
}
