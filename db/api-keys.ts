import type { Knex } from 'knex';
import { newId } from '../lib/ids';
import { generateApiKey, hashApiKey, KeyKind } from '../lib/secrets';
import type { ApiKeyRotationInput } from '../contracts/api-keys';
import type { Environment } from './environments';

/** The API-keys store: `core.api_keys`. Keys are stored as a keyed hash; the plaintext is never kept. */

export type ApiKeyType = 'SECRET' | 'PUBLISHABLE';

/** The credential that created a key: a user's or the system actor's `sub`, or a key's id. */
export interface KeyCreator { type: 'user' | 'system' | 'api_key'; id: string }

export interface ApiKeyRow {
  id: string;
  account_id: string;
  name: string;
  type: ApiKeyType;
  environment: Environment;
  key_hash: string;
  key_prefix: string;
  key_last4: string;
  status: string;
  /** scope → actions, e.g. { payment: ['read', 'create'] }. */
  permissions: Record<string, string[]>;
  metadata: Record<string, unknown>;
  managed: boolean;
  deleted: boolean;
  rotation_count: number;
  last_used_ip: string | null;
  last_used_at: Date | null;
  expires_at: Date | null;
  /** Null for the managed keys made with their account, and for keys whose creator was not recorded. */
  created_by_type: KeyCreator['type'] | null;
  created_by_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewApiKey {
  accountId: string;
  environment: Environment;
  type: ApiKeyType;
  name: string;
  managed: boolean;
  permissions: Record<string, string[]>;
  metadata?: Record<string, string>;
  expiresAt?: Date | null;
  createdBy?: KeyCreator;
}

const apiKeys = (db: Knex) => db<ApiKeyRow>('core.api_keys');

/** Inserts a key and returns its row and its plaintext — the only moment the plaintext exists. */
export async function insertApiKey(db: Knex, pepper: string, key: NewApiKey): Promise<{ row: ApiKeyRow; plaintext: string }> {
  const kind: KeyKind = key.type === 'SECRET' ? 'sk' : 'pk';
  const plaintext = generateApiKey(kind, key.environment === 'production' ? 'live' : 'test');
  const [row] = await db('core.api_keys')
    .insert({
      id: newId('key'),
      account_id: key.accountId,
      name: key.name,
      type: key.type,
      environment: key.environment,
      key_hash: hashApiKey(plaintext, pepper),
      key_prefix: plaintext.slice(0, 8),
      key_last4: plaintext.slice(-4),
      permissions: JSON.stringify(key.permissions),
      metadata: JSON.stringify(key.metadata ?? {}),
      managed: key.managed,
      expires_at: key.expiresAt ?? null,
      created_by_type: key.createdBy?.type ?? null,
      created_by_id: key.createdBy?.id ?? null,
    })
    .returning<ApiKeyRow[]>('*');
  return { row, plaintext };
}

/**
 * Inserts a key unless the account already holds `limit` live keys (undefined then). An advisory lock
 * per account serializes its creates, so concurrent ones cannot each see the last free place.
 */
export async function insertApiKeyWithin(
  db: Knex, pepper: string, key: NewApiKey, limit: number,
): Promise<{ row: ApiKeyRow; plaintext: string } | undefined> {
  return db.transaction(async (trx) => {
    await trx.raw('SELECT pg_advisory_xact_lock(hashtextextended(?, 0))', [`core.api_keys/${key.accountId}`]);
    const [{ count }] = await apiKeys(trx).where({ account_id: key.accountId, deleted: false }).count({ count: '*' });
    if (Number(count) >= limit) return undefined;
    return insertApiKey(trx, pepper, key);
  });
}

export async function findApiKey(db: Knex, id: string): Promise<ApiKeyRow | undefined> {
  return apiKeys(db).where({ id }).first();
}

/** A key that is not deleted. */
export async function findLiveApiKey(db: Knex, id: string): Promise<ApiKeyRow | undefined> {
  return apiKeys(db).where({ id, deleted: false }).first();
}

/** An account's keys that are not deleted, newest first. */
export async function listLiveApiKeys(db: Knex, accountId: string): Promise<ApiKeyRow[]> {
  return apiKeys(db).where({ account_id: accountId, deleted: false }).orderBy('created_at', 'desc').orderBy('id', 'desc');
}

/** Soft-deletes a key; false when it was deleted already (or never existed). */
export async function deleteApiKey(db: Knex, id: string): Promise<boolean> {
  const count = await apiKeys(db).where({ id, deleted: false }).update({ deleted: true, updated_at: db.fn.now() });
  return count > 0;
}

/** What authenticating with a key needs: the key, and its account's workspace and whether it is deleted. */
export type AuthenticatingKey = Pick<ApiKeyRow, 'id' | 'type' | 'account_id' | 'environment' | 'permissions' | 'status' | 'deleted' | 'expires_at' | 'last_used_at'>
  & { workspace_id: string; account_deleted: boolean };

export async function findApiKeyByHash(db: Knex, keyHash: string): Promise<AuthenticatingKey | undefined> {
  return db('core.api_keys as k')
    .join('core.accounts as a', 'a.id', 'k.account_id')
    .where('k.key_hash', keyHash)
    .first<AuthenticatingKey | undefined>('k.id', 'k.type', 'k.account_id', 'k.environment', 'k.permissions', 'k.status', 'k.deleted', 'k.expires_at',
      'k.last_used_at', 'a.workspace_id', 'a.deleted as account_deleted');
}

/** Records a key's use (when and from where). */
export async function touchApiKey(db: Knex, id: string, ip: string): Promise<void> {
  await apiKeys(db).where({ id }).update({ last_used_at: db.fn.now(), last_used_ip: ip });
}

/** How swapping a managed key's secret went (in the caller's transaction). */
export type SecretSwap =
  | { outcome: 'not_found' }
  /** Deleted, unmanaged, or not at the rotation before this one: someone else changed it meanwhile. */
  | { outcome: 'changed' }
  /** This rotation had landed already (a retry after our own commit). */
  | { outcome: 'already'; key: ApiKeyRow & { workspace_id: string } }
  | { outcome: 'swapped'; key: ApiKeyRow & { workspace_id: string }; updatedAt: Date };

/**
 * Swaps a managed key's hash for the rotation's, conditional on the rotation number, under the key's row
 * lock: the old value stops working at once, and two rotations cannot interleave.
 */
export async function swapApiKeySecret(trx: Knex.Transaction, input: ApiKeyRotationInput): Promise<SecretSwap> {
  const key = await trx('core.api_keys as k')
    .join('core.accounts as a', 'a.id', 'k.account_id')
    .where('k.id', input.keyId)
    .forUpdate()
    .first<(ApiKeyRow & { workspace_id: string }) | undefined>('k.*', 'a.workspace_id');
  if (!key) return { outcome: 'not_found' };
  if (key.rotation_count === input.rotation && key.key_hash === input.newKeyHash) return { outcome: 'already', key };
  if (key.deleted || !key.managed || key.rotation_count !== input.rotation - 1) return { outcome: 'changed' };
  const [updated] = await apiKeys(trx).where({ id: input.keyId }).update({
    key_hash: input.newKeyHash,
    key_prefix: input.newKeyPrefix,
    key_last4: input.newKeyLast4,
    rotation_count: input.rotation,
    updated_at: trx.fn.now(),
  }).returning('updated_at');
  return { outcome: 'swapped', key, updatedAt: updated.updated_at };
}
