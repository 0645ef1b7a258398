import type { Knex } from 'knex';
import { newId } from '../../lib/ids';
import { generateApiKey, hashApiKey, KeyKind } from '../../lib/secrets';
import type { Environment } from '../environments';

export interface NewApiKey {
  accountId: string;
  environment: Environment;
  type: 'SECRET' | 'PUBLISHABLE';
  name: string;
  managed: boolean;
  permissions: Record<string, string[]>;
  metadata?: Record<string, string>;
  expiresAt?: Date | null;
}

/** Inserts a key and returns its row and its plaintext — the only moment the plaintext exists. */
export async function insertApiKey(db: Knex, pepper: string, key: NewApiKey): Promise<{ row: any; plaintext: string }> {
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
    })
    .returning('*');
  return { row, plaintext };
}
