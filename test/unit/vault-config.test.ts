import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../lib/config';
import { Vault } from '../../lib/vault';

const key = () => randomBytes(32).toString('base64');
const local = { dataDir: '/tmp/sb-vault-config', devSecrets: { jwtSecret: 'j'.repeat(40), systemJwtSecret: 's'.repeat(40), vaultKey: key(), apiKeyPepper: 'p'.repeat(40) } };
const production = () => ({
  NODE_ENV: 'production', JWT_SECRET: randomBytes(48).toString('base64'), SYSTEM_JWT_SECRET: randomBytes(48).toString('base64'),
  API_KEY_PEPPER: randomBytes(48).toString('base64'), METRICS_TOKEN: randomBytes(48).toString('base64'),
});

describe('VAULT_KEYS', () => {
  it('takes a ring, newest first, and new values go under its first key', () => {
    const config = parseConfig({ VAULT_KEYS: `k2:${key()},k1:${key()}` }, local);
    expect(new Vault(config.vaultKeys).encrypt('x').startsWith('v2.k2.')).toBe(true);
  });

  it('takes VAULT_KEY as the one-key ring k0', () => {
    const vaultKey = key();
    const config = parseConfig({ VAULT_KEY: vaultKey }, local);
    expect(config.vaultKeys).toBe(`k0:${vaultKey}`);
    expect(parseConfig({}, local).vaultKeys).toBe(`k0:${local.devSecrets.vaultKey}`);
  });

  it('refuses both set, and a malformed ring, naming the variable and never a key', () => {
    const k = key();
    expect(() => parseConfig({ VAULT_KEYS: `k1:${k}`, VAULT_KEY: key() }, local)).toThrow(/VAULT_KEYS or VAULT_KEY, not both/);
    expect(() => parseConfig({ VAULT_KEYS: k }, local)).toThrow(/VAULT_KEYS entry 1 needs an id/);
    expect(() => parseConfig({ VAULT_KEYS: `k1:${k},k1:${key()}` }, local)).toThrow(/"k1" twice/);
    expect(() => parseConfig({ VAULT_KEYS: `k2:${key()},k1:${randomBytes(16).toString('base64')}` }, local)).toThrow(/VAULT_KEYS key "k1" must be 32 bytes/);
    try {
      parseConfig({ VAULT_KEYS: `k1:${k}`, VAULT_KEY: k }, local);
    } catch (err) {
      expect((err as Error).message).not.toContain(k);
    }
  });

  it('holds every key of the ring to VAULT_KEY’s production rules', () => {
    const weak = Buffer.alloc(32, 'ab').toString('base64');
    expect(() => parseConfig({ ...production(), VAULT_KEYS: `k2:${key()},k1:${weak}` }, local)).toThrow(/VAULT_KEYS key "k1" is too weak/);
    const pepper = randomBytes(32).toString('base64');
    expect(() => parseConfig({ ...production(), API_KEY_PEPPER: pepper, VAULT_KEYS: `k2:${pepper}` }, local)).toThrow(/VAULT_KEYS key "k2" and API_KEY_PEPPER must differ/);
    const same = key();
    expect(() => parseConfig({ ...production(), VAULT_KEYS: `k2:${same},k1:${same}` }, local)).toThrow(/keys "k2" and "k1" must differ/);
    expect(() => parseConfig({ ...production() }, local)).toThrow(/needs VAULT_KEYS \(or VAULT_KEY\)/);
    expect(parseConfig({ ...production(), VAULT_KEYS: `k2:${key()},k1:${key()}` }, local).vaultKeys).toMatch(/^k2:/);
  });
});
