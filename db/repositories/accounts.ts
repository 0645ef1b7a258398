import type { Knex } from 'knex';
import { newId } from '../../lib/ids';
import type { Environment } from '../environments';
import { insertApiKey } from '../api-keys';

export interface NewAccount {
  userId: string;
  workspaceId: string;
  name: string;
  country?: string;
  currency?: string;
  timezone?: string;
  environment: Environment;
  prodAccountId?: string;
  metadata?: Record<string, string>;
  /** The permission map the two managed keys get (all of the catalogue). */
  managedKeyPermissions: Record<string, string[]>;
}

/**
 * Creates an account with its OWNER membership and its two managed keys (secret and publishable) in
 * one transaction: an account never exists without an owner or keys.
 */
export async function createAccount(db: Knex, pepper: string, input: NewAccount) {
  return db.transaction(async (trx) => {
    const [account] = await trx('core.accounts')
      .insert({
        id: newId('acct'),
        user_id: input.userId,
        workspace_id: input.workspaceId,
        name: input.name,
        country: input.country ?? null,
        currency: input.currency ?? null,
        timezone: input.timezone ?? 'UTC',
        environment: input.environment,
        prod_account_id: input.prodAccountId ?? null,
        metadata: JSON.stringify(input.metadata ?? {}),
      })
      .returning('*');
    await trx('core.account_memberships').insert({ id: newId('mem'), account_id: account.id, user_id: input.userId, role: 'OWNER' });
    const keys = [];
    for (const type of ['SECRET', 'PUBLISHABLE'] as const) {
      keys.push(await insertApiKey(trx, pepper, {
        accountId: account.id,
        environment: input.environment,
        type,
        name: type === 'SECRET' ? 'Managed secret key' : 'Managed publishable key',
        managed: true,
        // A publishable key may only read a payment and confirm it (docs/api-conventions.md#authorization).
        permissions: type === 'SECRET' ? input.managedKeyPermissions : { payment: ['read', 'confirm'] },
      }));
    }
    return { account, keys };
  });
}

export async function settingsByAccount(db: Knex, accountIds: string[]): Promise<Map<string, any[]>> {
  const rows = accountIds.length ? await db('core.account_settings').whereIn('account_id', accountIds).orderBy('key') : [];
  const map = new Map<string, any[]>();
  for (const row of rows) map.set(row.account_id, [...(map.get(row.account_id) ?? []), row]);
  return map;
}
