import { Static, Type } from '@sinclair/typebox';
import type { MembershipRow } from '../db/memberships';
import { iso } from '../lib/timestamps';
import { Resource } from './schemas';

const S = Type.String();
const TS = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

export const MembershipRole = Type.Union([Type.Literal('OWNER'), Type.Literal('ADMIN'), Type.Literal('DEVELOPER'), Type.Literal('VIEWER')]);

/** A user's role on an account. */
export const MembershipSchema = Resource('account_membership', {
  id: S, account_id: S, user_id: S, role: MembershipRole, created_at: TS, updated_at: TS,
});

export type Membership = Static<typeof MembershipSchema>;

export function serializeMembership(row: MembershipRow): Membership {
  return {
    object: 'account_membership',
    id: row.id,
    account_id: row.account_id,
    user_id: row.user_id,
    role: row.role,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
