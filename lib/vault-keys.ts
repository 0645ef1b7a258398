/**
 * The vault's key ring as VAULT_KEYS spells it: `k2:<base64>,k1:<base64>`, newest first, each key 32
 * bytes under an id of its own. VAULT_KEY alone is the one-key ring `k0:<VAULT_KEY>`. Errors name the
 * variable and the key id, never a key.
 */

export interface VaultKey {
  /** What encrypted values and seals carry to say which key made them: `[a-z0-9]{1,16}`. */
  id: string;
  /** The key's 32 bytes, from which each purpose's key is derived (lib/vault.ts). */
  bytes: Buffer;
}

/** The id VAULT_KEY's single key takes; name it so in VAULT_KEYS when adding a second key. */
export const SINGLE_KEY_ID = 'k0';

const KEY_ID = /^[a-z0-9]{1,16}$/;

export class VaultKeyError extends Error {}

/** The base64 text of each key in `text`, by id, in ring order (no checks beyond the shape). */
export function vaultKeyEntries(text: string): { id: string; key: string }[] {
  return text.split(',').map((entry) => entry.trim()).map((entry) => {
    const colon = entry.indexOf(':');
    return colon < 0 ? { id: '', key: entry } : { id: entry.slice(0, colon), key: entry.slice(colon + 1) };
  });
}

/** The ring `text` describes, newest first; throws a VaultKeyError naming what is wrong. */
export function parseVaultKeys(text: string): VaultKey[] {
  const entries = vaultKeyEntries(text);
  const seen = new Set<string>();
  return entries.map(({ id, key }, i) => {
    if (!KEY_ID.test(id)) throw new VaultKeyError(`VAULT_KEYS entry ${i + 1} needs an id: <id>:<base64 key>, the id [a-z0-9]{1,16}`);
    if (seen.has(id)) throw new VaultKeyError(`VAULT_KEYS names key "${id}" twice`);
    seen.add(id);
    const bytes = Buffer.from(key, 'base64');
    if (bytes.length !== 32) throw new VaultKeyError(`VAULT_KEYS key "${id}" must be 32 bytes, base64`);
    return { id, bytes };
  });
}

/** The ring the environment gives (VAULT_KEYS, else VAULT_KEY as key k0), as VAULT_KEYS spells it. */
export function vaultKeysText(vaultKeys: string | undefined, vaultKey: string | undefined): string | undefined {
  if (vaultKeys && vaultKey) throw new VaultKeyError('set VAULT_KEYS or VAULT_KEY, not both (VAULT_KEY is the ring k0:<VAULT_KEY>)');
  if (vaultKeys) return vaultKeys;
  return vaultKey ? `${SINGLE_KEY_ID}:${vaultKey}` : undefined;
}
