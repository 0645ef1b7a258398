import type { Knex } from 'knex';
import { newId } from '../lib/ids';

/** The memberships store: `core.users` and `core.account_memberships`, who may act on which account in what role. */

export type MembershipRole = 'OWNER' | 'ADMIN' | 'DEVELOPER' | 'VIEWER';

export interface MembershipRow {
  id: string;
  account_id: string;
  user_id: string;
  role: MembershipRole;
  created_at: Date;
  updated_at: Date;
}

const UNIQUE_VIOLATION = '23505';

const memberships = (db: Knex) => db<MembershipRow>('core.account_memberships');

/** Users come into being on first sight (docs/api-conventions.md#authentication): a valid token, or an invitation. */
export async function ensureUser(db: Knex, userId: string): Promise<void> {
  await db('core.users').insert({ id: userId }).onConflict('id').ignore();
}

/** Gives a user a role on an account (in the caller's transaction, when it has one). */
export async function addMembership(db: Knex, m: { accountId: string; userId: string; role: MembershipRole }): Promise<MembershipRow> {
  const [row] = await db('core.account_memberships')
    .insert({ id: newId('mem'), account_id: m.accountId, user_id: m.userId, role: m.role })
    .returning<MembershipRow[]>('*');
  return row;
}

/** Invites a user (created if new) onto an account; `exists` when they already have a membership there. */
export async function inviteMember(
  db: Knex, m: { accountId: string; userId: string; role: MembershipRole },
): Promise<{ outcome: 'created'; row: MembershipRow } | { outcome: 'exists' }> {
  try {
    const row = await db.transaction(async (trx) => {
      await ensureUser(trx, m.userId);
      return addMembership(trx, m);
    });
    return { outcome: 'created', row };
  } catch (err) {
    if ((err as { code?: string }).code === UNIQUE_VIOLATION) return { outcome: 'exists' };
    throw err;
  }
}

export async function findMembership(db: Knex, id: string): Promise<MembershipRow | undefined> {
  return memberships(db).where({ id }).first();
}

/** An account's memberships, newest first. */
export async function listMemberships(db: Knex, accountId: string): Promise<MembershipRow[]> {
  return memberships(db).where({ account_id: accountId }).orderBy('created_at', 'desc').orderBy('id', 'desc');
}

/**
 * Removes a membership, unless it is the account's last owner. The account's row lock serializes every
 * removal on the account, so two owners removed at the same moment cannot each see the other as the one
 * who remains.
 */
export async function removeMembership(db: Knex, accountId: string, id: string): Promise<'removed' | 'not_found' | 'last_owner'> {
  return db.transaction(async (trx) => {
    await trx('core.accounts').where({ id: accountId }).forUpdate().first('id');
    const membership = await memberships(trx).where({ id }).first();
    if (!membership) return 'not_found';
    if (membership.role === 'OWNER') {
      const [{ n }] = await memberships(trx)
        .where({ account_id: membership.account_id, role: 'OWNER' }).whereNot({ id: membership.id })
        .count<{ n: number }[]>('* as n');
      if (Number(n) === 0) return 'last_owner';
    }
    await memberships(trx).where({ id: membership.id }).del();
    return 'removed';
  });
}

/** The user's role on an account, if they have one. */
export async function roleOn(db: Knex, accountId: string, userId: string): Promise<MembershipRole | undefined> {
  const row = await memberships(db).where({ account_id: accountId, user_id: userId }).first('role');
  return row?.role;
}

/** The ids of the live accounts the user is a member of. */
export async function liveAccountIdsOfUser(db: Knex, userId: string): Promise<string[]> {
  return db('core.account_memberships as m')
    .join('core.accounts as a', 'a.id', 'm.account_id')
    .where({ 'm.user_id': userId, 'a.deleted': false })
    .pluck('a.id');
}
