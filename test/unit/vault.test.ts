import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Vault } from '../../lib/vault';

describe('vault', () => {
  const vault = new Vault(randomBytes(32).toString('base64'));

  it('round-trips a value and never stores it in the clear', () => {
    const sealed = vault.encrypt('4242424242424242');
    expect(sealed).not.toContain('4242');
    expect(sealed.startsWith('v1.')).toBe(true);
    expect(vault.decrypt(sealed)).toBe('4242424242424242');
  });

  it('gives a new ciphertext each time and detects tampering', () => {
    const a = vault.encrypt('secret');
    expect(vault.encrypt('secret')).not.toBe(a);
    const parts = a.split('.');
    parts[3] = Buffer.from('other').toString('base64url');
    expect(() => vault.decrypt(parts.join('.'))).toThrow();
  });

  it('refuses a value sealed under another key', () => {
    const other = new Vault(randomBytes(32).toString('base64'));
    expect(() => other.decrypt(vault.encrypt('x'))).toThrow();
  });

  it('fingerprints equal values equally, under its key only', () => {
    const other = new Vault(randomBytes(32).toString('base64'));
    expect(vault.fingerprint('4242424242424242')).toBe(vault.fingerprint('4242424242424242'));
    expect(vault.fingerprint('4242424242424242')).not.toBe(other.fingerprint('4242424242424242'));
  });

  it('round-trips JSON', () => {
    expect(vault.decryptJson(vault.encryptJson({ api_key: 'k', n: 1 }))).toEqual({ api_key: 'k', n: 1 });
  });
});
