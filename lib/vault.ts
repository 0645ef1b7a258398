import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { parseVaultKeys, type VaultKey } from './vault-keys';

/** What each key of the ring is for: one derived key per purpose, so no key serves two (docs/security.md §18). */
const PURPOSES = ['encryption', 'command-seal', 'fingerprint'] as const;
type Purpose = (typeof PURPOSES)[number];

/**
 * The seal purposes that were sealed before keys had ids, and so may still have an id-less seal in
 * flight: only refunds. Every later purpose (payment commands) exists only with key ids, so an id-less
 * seal of one is refused.
 */
export const LEGACY_SEAL_PURPOSES: readonly string[] = ['refund'];

/** A ring key with its derived purpose keys. */
interface RingKey { id: string; raw: Buffer; derived: Record<Purpose, Buffer> }

function derive(key: VaultKey): RingKey {
  const derived = Object.fromEntries(PURPOSES.map((purpose) => [
    purpose, Buffer.from(hkdfSync('sha256', key.bytes, Buffer.alloc(0), `switchboard vault ${purpose}`, 32)),
  ])) as Record<Purpose, Buffer>;
  return { id: key.id, raw: key.bytes, derived };
}

/** A value or seal made under a key the ring no longer holds: loud, naming the key id (never a key). */
export class VaultKeyMissingError extends Error {
  constructor(readonly keyId: string, what: string) {
    super(`${what} is sealed under vault key "${keyId}", which is not in VAULT_KEYS: put it back at the end of the ring and finish vault:rotate before removing it`);
  }
}

const b64 = (b: Buffer) => b.toString('base64url');

function openGcm(key: Buffer, iv: string, tag: string, ciphertext: string, aad?: string): string {
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  if (aad !== undefined) decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
}

function equalInConstantTime(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * Encryption at rest for card numbers, CVCs, provider credentials, webhook secrets, sealed 3-D Secure
 * data and idempotent replies: AES-256-GCM under the newest key of the ring (VAULT_KEYS), stored as
 * `v2.<keyId>.<iv>.<tag>.<ciphertext>` (base64url; the `v2.<keyId>` prefix is authenticated too).
 * Reads take the key the value names, so values under an older key keep opening until the rotation
 * (workflows/vault) has moved them. Each purpose (encryption, command seals, fingerprints) uses its own
 * key, derived from the ring key with HKDF-SHA256.
 *
 * Legacy: `v1.<iv>.<tag>.<ciphertext>` values and id-less seals were made under a ring key's raw bytes
 * before keys had ids; they are opened by trying each ring key (GCM's tag tells which). The rotation
 * re-encrypts them, after which nothing takes this path.
 */
export class Vault {
  private readonly ring: RingKey[];

  /** `keys`: the ring as VAULT_KEYS spells it (config.vaultKeys), newest first. */
  constructor(keys: string) {
    this.ring = parseVaultKeys(keys).map(derive);
    if (!this.ring.length) throw new Error('the vault needs at least one key');
  }

  /** The id of the key new values are written under. */
  get currentKeyId(): string {
    return this.ring[0].id;
  }

  encrypt(plaintext: string): string {
    const key = this.ring[0];
    const iv = randomBytes(12);
    const header = `v2.${key.id}`;
    const cipher = createCipheriv('aes-256-gcm', key.derived.encryption, iv);
    cipher.setAAD(Buffer.from(header));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [header, b64(iv), b64(cipher.getAuthTag()), b64(ciphertext)].join('.');
  }

  decrypt(sealed: string): string {
    const parts = sealed.split('.');
    if (parts[0] === 'v2' && parts.length === 5) {
      const [, keyId, iv, tag, ciphertext] = parts;
      return openGcm(this.key(keyId, 'a vault value').derived.encryption, iv, tag, ciphertext, `v2.${keyId}`);
    }
    if (parts[0] === 'v1' && parts.length === 4) return this.decryptLegacy(parts[1], parts[2], parts[3]);
    throw new Error('not a sealed vault value');
  }

  encryptJson(value: unknown): string {
    return this.encrypt(JSON.stringify(value));
  }

  decryptJson<T>(sealed: string): T {
    return JSON.parse(this.decrypt(sealed)) as T;
  }

  /** Whether `sealed` is encrypted under the newest key (nothing left for the rotation to do). */
  isCurrent(sealed: string): boolean {
    return sealed.startsWith(`v2.${this.ring[0].id}.`);
  }

  /**
   * A command's seal, `<keyId>.<HMAC-SHA256>` under the newest key's seal key, for `purpose`: what the
   * API signs before a workflow moves money on it, so that a workflow started by anyone else who
   * reaches Temporal is told apart. Only processes holding the vault keys (the API, the worker) can
   * make or check one.
   */
  seal(purpose: string, text: string): string {
    const key = this.ring[0];
    return `${key.id}.${this.mac(key.derived['command-seal'], purpose, text)}`;
  }

  /**
   * Whether `seal` is this vault's seal of `text` for `purpose` (compared in constant time), under the
   * key it names; an id-less seal (made before keys had ids, by a command still in flight) is checked
   * against each ring key's raw bytes, for a purpose of LEGACY_SEAL_PURPOSES only.
   */
  sealed(purpose: string, text: string, seal: string | undefined): boolean {
    if (!seal) return false;
    const dot = seal.indexOf('.');
    if (dot < 0) return LEGACY_SEAL_PURPOSES.includes(purpose) && this.ring.some((key) => equalInConstantTime(seal, this.mac(key.raw, purpose, text)));
    const key = this.ring.find((k) => k.id === seal.slice(0, dot));
    return !!key && equalInConstantTime(seal.slice(dot + 1), this.mac(key.derived['command-seal'], purpose, text));
  }

  /**
   * A keyed fingerprint (HMAC-SHA256 under the newest key's fingerprint key): equal inputs match, yet
   * the value reveals nothing without the key. It changes once per rotation (the rotation recomputes
   * each card's from its number).
   */
  fingerprint(value: string): string {
    return createHmac('sha256', this.ring[0].derived.fingerprint).update(`fingerprint:${value}`).digest('base64url').slice(0, 32);
  }

  private mac(key: Buffer, purpose: string, text: string): string {
    return createHmac('sha256', key).update(`command:${purpose}:${text}`).digest('base64url');
  }

  private key(id: string, what: string): RingKey {
    const key = this.ring.find((k) => k.id === id);
    if (!key) throw new VaultKeyMissingError(id, what);
    return key;
  }

  private decryptLegacy(iv: string, tag: string, ciphertext: string): string {
    for (const key of this.ring) {
      try {
        return openGcm(key.raw, iv, tag, ciphertext);
      } catch {
        // Another key's value: GCM's tag refuses it; try the next.
      }
    }
    throw new Error('a legacy (v1) vault value that no key in VAULT_KEYS opens: its key was removed before vault:rotate moved it');
  }
}
