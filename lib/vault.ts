import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Encryption at rest for card numbers, CVCs and provider credentials: AES-256-GCM under VAULT_KEY,
 * stored as `v1.<iv>.<tag>.<ciphertext>` (base64url). The version prefix leaves room for key rotation.
 */
export class Vault {
  private readonly key: Buffer;

  constructor(base64Key: string) {
    this.key = Buffer.from(base64Key, 'base64');
    if (this.key.length !== 32) throw new Error('the vault key must be 32 bytes');
  }

  encrypt(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), ciphertext].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  }

  decrypt(sealed: string): string {
    const [version, iv, tag, ciphertext] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || ciphertext === undefined) throw new Error('not a sealed vault value');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  }

  encryptJson(value: unknown): string {
    return this.encrypt(JSON.stringify(value));
  }

  decryptJson<T>(sealed: string): T {
    return JSON.parse(this.decrypt(sealed)) as T;
  }

  /**
   * A command's seal (HMAC-SHA256 under the vault key, for `purpose`): what the API signs before a
   * workflow moves money on it, so that a workflow started by anyone else who reaches Temporal is told
   * apart. Only processes holding VAULT_KEY (the API, the worker) can make or check one.
   */
  seal(purpose: string, text: string): string {
    return createHmac('sha256', this.key).update(`command:${purpose}:${text}`).digest('base64url');
  }

  /** Whether `seal` is this vault's seal of `text` for `purpose` (compared in constant time). */
  sealed(purpose: string, text: string, seal: string | undefined): boolean {
    const expected = Buffer.from(this.seal(purpose, text));
    const given = Buffer.from(seal ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** A keyed fingerprint (HMAC-SHA256): equal inputs match, yet the value reveals nothing without the key. */
  fingerprint(value: string): string {
    return createHmac('sha256', this.key).update(`fingerprint:${value}`).digest('base64url').slice(0, 32);
  }
}
