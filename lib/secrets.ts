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

/**
 * Bits by a character-frequency estimate: the length times the Shannon entropy of the value's own
 * distribution of symbols (characters of a string, bytes of a key). A value repeating one or two
 * symbols scores near 0; `openssl rand -base64 32` scores about 210, `openssl rand -hex 32` about 245.
 */
export function estimatedBits(symbols: ArrayLike<string | number>): number {
  const counts = new Map<string | number, number>();
  for (let i = 0; i < symbols.length; i += 1) counts.set(symbols[i], (counts.get(symbols[i]) ?? 0) + 1);
  let perSymbol = 0;
  for (const n of counts.values()) perSymbol -= (n / symbols.length) * Math.log2(n / symbols.length);
  return perSymbol * symbols.length;
}

/** True when the value is a shorter run of symbols repeated (`abc123abc123abc1`): its smallest period is at most half its length. */
export function isRepetitive(symbols: ArrayLike<string | number>): boolean {
  const n = symbols.length;
  if (n < 2) return true;
  const border = new Array<number>(n).fill(0); // KMP failure function: the longest proper prefix that is also a suffix
  for (let i = 1, k = 0; i < n; i += 1) {
    while (k > 0 && symbols[i] !== symbols[k]) k = border[k - 1];
    if (symbols[i] === symbols[k]) k += 1;
    border[i] = k;
  }
  return n - border[n - 1] <= n / 2;
}

/** True for a value holding what the placeholders of `.env.example` contain (`CHANGE_ME`, any case, `changeme`, `change-me`). */
export function isPlaceholder(value: string): boolean {
  return /change[_-]?me/i.test(value);
}
export const MIN_SECRET_CHARS = 32;
export const MIN_SECRET_BITS = 128;

/**
 * Why a secret may not be used in production, or null. `string` secrets (JWT_SECRET,
 * SYSTEM_JWT_SECRET, API_KEY_PEPPER) are HMAC keys taken as they are: at least 32 characters, at
 * least 128 bits by `estimatedBits`, not a repetition. `key32` (VAULT_KEY, each key of VAULT_KEYS) is 32 bytes in base64 (or
 * base64url), exactly: no stray characters, and the same two checks on its bytes. Messages name the
 * variable and never carry the value.
 */
export function secretProblem(name: string, value: string, kind: 'string' | 'key32'): string | null {
  if (isPlaceholder(value)) return `${name} is still the .env.example placeholder`;
  let symbols: ArrayLike<string | number>;
  if (kind === 'key32') {
    const bytes = Buffer.from(value, 'base64');
    const canonical = [bytes.toString('base64'), bytes.toString('base64url')].map((s) => s.replace(/=+$/, ''));
    if (bytes.length !== 32 || !canonical.includes(value.replace(/=+$/, ''))) return `${name} must be exactly 32 bytes, base64`;
    symbols = bytes;
  } else {
    symbols = [...value];
    if (symbols.length < MIN_SECRET_CHARS) return `${name} is too short: at least ${MIN_SECRET_CHARS} characters`;
  }
  if (estimatedBits(symbols) < MIN_SECRET_BITS || isRepetitive(symbols)) {
    return `${name} is too weak (repeated characters or a repeated pattern): generate it, e.g. openssl rand -base64 ${kind === 'key32' ? 32 : 48}`;
  }
  return null;
}
