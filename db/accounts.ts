import type { Knex } from 'knex';
import { groupBy } from '../lib/group-by';
import { newId } from '../lib/ids';
import { ApiKeyRow, insertApiKey } from './api-keys';
import type { Environment } from './environments';
import { addMembership } from './memberships';

/** The accounts store: `core.workspaces`, `core.accounts` and their settings (`core.account_settings`). */

export interface AccountRow {
  id: string;
  user_id: string;
  workspace_id: string;
  name: string;
  country: string | null;
  currency: string | null;
  timezone: string | null;
  environment: Environment;
  prod_account_id: string | null;
  deleted: boolean;
  metadata: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export interface AccountSettingRow {
  id: string;
  account_id: string;
  key: string;
  value: string;
  created_at: Date;
  updated_at: Date;
}

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

const accounts = (db: Knex) => db<AccountRow>('core.accounts');

/**
 * Creates an account with its OWNER membership and its two managed keys (secret and publishable) in
 * one transaction: an account never exists without an owner or keys.
 */
export async function createAccount(
  db: Knex, pepper: string, input: NewAccount,
): Promise<{ account: AccountRow; keys: { row: ApiKeyRow; plaintext: string }[] }> {
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
      .returning<AccountRow[]>('*');
    await addMembership(trx, { accountId: account.id, userId: input.userId, role: 'OWNER' });
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

/** Workspaces come into being the first time a valid token names them (or the demo seed does). */
export async function ensureWorkspace(db: Knex, workspaceId: string, name?: string): Promise<void> {
  await db('core.workspaces').insert({ id: workspaceId, ...(name ? { name } : {}) }).onConflict('id').ignore();
}

/** An account, deleted or not. */
export async function findAccount(db: Knex, id: string): Promise<AccountRow | undefined> {
  return accounts(db).where({ id }).first();
}

/** An account that is not deleted. */
export async function findLiveAccount(db: Knex, id: string): Promise<AccountRow | undefined> {
  return accounts(db).where({ id, deleted: false }).first();
}

/** Some accounts by id, newest first. */
export async function listAccounts(db: Knex, ids: string[]): Promise<AccountRow[]> {
  return ids.length ? accounts(db).whereIn('id', ids).orderBy('created_at', 'desc').orderBy('id', 'desc') : [];
}

/** The ids of a workspace's live accounts (what the system actor sees). */
export async function liveAccountIdsOfWorkspace(db: Knex, workspaceId: string): Promise<string[]> {
  return accounts(db).where({ workspace_id: workspaceId, deleted: false }).pluck('id');
}

/** The settings of each account, by key. */
export async function settingsByAccount(db: Knex, accountIds: string[]): Promise<Map<string, AccountSettingRow[]>> {
  const rows = accountIds.length ? await db<AccountSettingRow>('core.account_settings').whereIn('account_id', accountIds).orderBy('key') : [];
  return groupBy(rows, 'account_id');
}

/** One setting of an account (`core.account_settings`), if it is set. */
export async function findAccountSetting(db: Knex, accountId: string, key: string): Promise<AccountSettingRow | undefined> {
  return db<AccountSettingRow>('core.account_settings').where({ account_id: accountId, key }).first();
}

/** Sets one setting of an account, replacing its value if it was set. */
export async function putAccountSetting(db: Knex, accountId: string, key: string, value: string): Promise<AccountSettingRow> {
  const [row] = await db('core.account_settings')
    .insert({ id: newId('set'), account_id: accountId, key, value })
    .onConflict(['account_id', 'key'])
    .merge({ value, updated_at: db.fn.now() })
    .returning<AccountSettingRow[]>('*');
  return row;
}
