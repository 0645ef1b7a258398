import { Type } from '@sinclair/typebox';
import { findMembership, inviteMember, listMemberships, removeMembership } from '../../db/memberships';
import { looksLikeId } from '../../lib/ids';
import { assertMayGrantRole } from '../auth/permissions';
import { ApiError } from '../errors';
import { MembershipRole, MembershipSchema, serializeMembership } from '../../resources/memberships';
import { defineRoute } from '../route';
import { Obj } from '../../resources/schemas';

export const membershipRoutes = [
  defineRoute({
    method: 'post',
    path: '/account-memberships',
    tag: 'Account memberships',
    summary: 'Give a user a role on an account',
    permission: 'account:membership:create',
    errors: ['conflict'],
    status: 201,
    message: 'Account membership created',
    body: Obj({ user_id: Type.String({ minLength: 1, maxLength: 100 }), role: MembershipRole }),
    response: MembershipSchema,
    async handler({ body, access, deps }) {
      const scope = await access.forAccount();
      // A membership is a credential too: nobody gives a role that can do more than they can.
      assertMayGrantRole(scope, body.role);
      // Users come into being on first sight (docs/api-conventions.md#authentication); one invited before signing in is one too.
      const invited = await inviteMember(deps.db, { accountId: scope.account.id, userId: body.user_id, role: body.role });
      if (invited.outcome === 'exists') throw new ApiError('conflict', 'That user already has a membership on this account.');
      return { data: serializeMembership(invited.row) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/account-memberships',
    tag: 'Account memberships',
    summary: 'List the account\'s memberships, newest first',
    permission: 'account:membership:read',
    message: 'Account memberships retrieved',
    response: Type.Array(MembershipSchema),
    async handler({ access, deps }) {
      const scope = await access.forAccount();
      const rows = await listMemberships(deps.db, scope.account.id);
      return { data: rows.map(serializeMembership) };
    },
  }),

  defineRoute({
    method: 'delete',
    path: '/account-memberships/:id',
    tag: 'Account memberships',
    summary: 'Remove a membership; the user loses access to the account at once',
    permission: 'account:membership:delete',
    errors: ['last_owner'],
    envelope: 'void',
    message: 'Account membership deleted',
    params: Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) }),
    async handler({ params, access, deps }) {
      const found = looksLikeId(params.id, 'mem') ? await findMembership(deps.db, params.id) : undefined;
      if (!found) throw ApiError.notFound('account membership');
      const scope = await access.forResource(found.account_id, 'account membership');
      // Taking a role away is as strong as giving it: nobody removes a member ranked above them, or one
      // with a permission they lack (an ADMIN cannot remove an OWNER).
      assertMayGrantRole(scope, found.role);
      const removed = await removeMembership(deps.db, found.account_id, params.id);
      if (removed === 'not_found') throw ApiError.notFound('account membership');
      if (removed === 'last_owner') throw new ApiError('last_owner');
      return {};
    },
  }),
];
