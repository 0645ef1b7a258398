import { createCipheriv, createHmac, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { LEGACY_SEAL_PURPOSES, Vault, VaultKeyMissingError } from '../../lib/vault';

const newKey = () => randomBytes(32).toString('base64');

/** A value as the vault wrote it before keys had ids: `v1.…` under the raw key. */
function legacyValue(base64Key: string, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', Buffer.from(base64Key, 'base64'), iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), ciphertext].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

/** A seal as the vault made it before keys had ids: HMAC under the raw key, no id. */
const legacySeal = (base64Key: string, purpose: string, text: string) =>
  createHmac('sha256', Buffer.from(base64Key, 'base64')).update(`command:${purpose}:${text}`).digest('base64url');

describe('vault', () => {
  const k1 = newKey();
  const k2 = newKey();
  const vault = new Vault(`k1:${k1}`);
  const rotated = new Vault(`k2:${k2},k1:${k1}`);

  it('round-trips a value under the newest key, naming it, and never stores it in the clear', () => {
    const sealed = rotated.encrypt('4242424242424242');
    expect(sealed).not.toContain('4242');
    expect(sealed.startsWith('v2.k2.')).toBe(true);
    expect(rotated.decrypt(sealed)).toBe('4242424242424242');
    expect(rotated.isCurrent(sealed)).toBe(true);
  });

  it('gives a new ciphertext each time and detects tampering, the key id included', () => {
    const a = vault.encrypt('secret');
    expect(vault.encrypt('secret')).not.toBe(a);
    const parts = a.split('.');
    expect(() => vault.decrypt([...parts.slice(0, 4), Buffer.from('other').toString('base64url')].join('.'))).toThrow();
    // Relabelling a k1 value as another key's is refused by the tag (the header is authenticated).
    const relabelled = ['v2', 'k2', ...parts.slice(2)].join('.');
    expect(() => rotated.decrypt(relabelled)).toThrow();
  });

  it('reads a value under an older key of the ring by the id it carries, and says it is not current', () => {
    const old = vault.encrypt('cvc 123');
    expect(rotated.decrypt(old)).toBe('cvc 123');
    expect(rotated.isCurrent(old)).toBe(false);
  });

  it('still opens legacy v1 values made under the raw bytes of any ring key', () => {
    expect(rotated.decrypt(legacyValue(k1, 'from before'))).toBe('from before');
    expect(rotated.decryptJson(legacyValue(k2, JSON.stringify({ api_key: 'k' })))).toEqual({ api_key: 'k' });
    expect(rotated.isCurrent(legacyValue(k2, 'x'))).toBe(false);
  });

  it('fails loudly on a value under a removed key, naming the key id and never the key', () => {
    const old = vault.encrypt('x');
    const after = new Vault(`k2:${k2}`);
    let error: unknown;
    try {
      after.decrypt(old);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(VaultKeyMissingError);
    expect((error as Error).message).toContain('"k1"');
    expect((error as Error).message).not.toContain(k1);
    expect(() => after.decrypt(legacyValue(k1, 'x'))).toThrow(/legacy \(v1\).*no key in VAULT_KEYS/);
  });

  it('seals under the newest key with its id; verifies a seal of any ring key and legacy seals', () => {
    const seal = rotated.seal('refund', 'ref_1|1000');
    expect(seal.startsWith('k2.')).toBe(true);
    expect(rotated.sealed('refund', 'ref_1|1000', seal)).toBe(true);
    expect(rotated.sealed('refund', 'ref_1|1001', seal)).toBe(false);
    expect(rotated.sealed('payment', 'ref_1|1000', seal)).toBe(false);
    expect(rotated.sealed('refund', 'ref_1|1000', vault.seal('refund', 'ref_1|1000'))).toBe(true);
    expect(rotated.sealed('refund', 'ref_1|1000', legacySeal(k1, 'refund', 'ref_1|1000'))).toBe(true);
    expect(new Vault(`k2:${k2}`).sealed('refund', 'ref_1|1000', vault.seal('refund', 'ref_1|1000'))).toBe(false);
    expect(rotated.sealed('refund', 'ref_1|1000', undefined)).toBe(false);
    expect(rotated.sealed('refund', 'ref_1|1000', `k9.${seal.slice(3)}`)).toBe(false);
  });

  it('accepts an id-less (legacy) seal only for a purpose that had them: refunds, never payment commands', () => {
    const text = '["capture","pay_1","cmd_1",null]';
    expect(LEGACY_SEAL_PURPOSES).toEqual(['refund']);
    expect(rotated.sealed('refund', text, legacySeal(k1, 'refund', text))).toBe(true);
    expect(rotated.sealed('payment', text, legacySeal(k1, 'payment', text))).toBe(false);
    expect(rotated.sealed('payment', text, legacySeal(k2, 'payment', text))).toBe(false);
    expect(rotated.sealed('payment', text, rotated.seal('payment', text))).toBe(true);
  });

  it('keys each purpose apart: a seal is no fingerprint and the raw key makes neither', () => {
    const text = 'same input';
    const raw = createHmac('sha256', Buffer.from(k1, 'base64'));
    expect(vault.seal('p', text).slice(3)).not.toBe(raw.update(`command:p:${text}`).digest('base64url'));
    expect(vault.fingerprint(text)).not.toBe(vault.seal('p', text).slice(3, 35));
  });

  it('fingerprints equal values equally under the newest key, so a rotation changes them', () => {
    expect(vault.fingerprint('4242424242424242')).toBe(new Vault(`k1:${k1}`).fingerprint('4242424242424242'));
    expect(rotated.fingerprint('4242424242424242')).not.toBe(vault.fingerprint('4242424242424242'));
    expect(rotated.fingerprint('4242424242424242')).toBe(new Vault(`k2:${k2}`).fingerprint('4242424242424242'));
  });

  it('refuses a malformed ring', () => {
    expect(() => new Vault(k1)).toThrow(/needs an id/);
    expect(() => new Vault(`k1:${k1},k1:${k2}`)).toThrow(/twice/);
    expect(() => new Vault(`K1:${k1}`)).toThrow(/needs an id/);
    expect(() => new Vault(`k1:${randomBytes(16).toString('base64')}`)).toThrow(/"k1" must be 32 bytes/);
  });

  it('round-trips JSON', () => {
    expect(vault.decryptJson(vault.encryptJson({ api_key: 'k', n: 1 }))).toEqual({ api_key: 'k', n: 1 });
  });
});
