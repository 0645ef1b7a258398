import { Type } from '@sinclair/typebox';
import { serializeMembership } from '../../db/serialize';
import { looksLikeId, newId } from '../../lib/ids';
import { ApiError } from '../errors';
import { defineRoute } from '../route';
import { Obj, Resource } from '../schemas';

const S = Type.String();
const TS = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const Role = Type.Union([Type.Literal('OWNER'), Type.Literal('ADMIN'), Type.Literal('DEVELOPER'), Type.Literal('VIEWER')]);

const MembershipSchema = Resource('account_membership', {
  id: S, account_id: S, user_id: S, role: Role, created_at: TS, updated_at: TS,
});

const UNIQUE_VIOLATION = '23505';

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
    body: Obj({ user_id: Type.String({ minLength: 1, maxLength: 100 }), role: Role }),
    response: MembershipSchema,
    async handler({ body, access, deps }) {
      const scope = await access.forAccount();
      try {
        const row = await deps.db.transaction(async (trx) => {
          // Users come into being on first sight (docs/api-conventions.md#authentication); one invited before signing in is one too.
          await trx('core.users').insert({ id: body.user_id }).onConflict('id').ignore();
          const [inserted] = await trx('core.account_memberships')
            .insert({ id: newId('mem'), account_id: scope.account.id, user_id: body.user_id, role: body.role })
            .returning('*');
          return inserted;
        });
        return { data: serializeMembership(row) };
      } catch (err) {
        if ((err as { code?: string }).code === UNIQUE_VIOLATION) {
          throw new ApiError('conflict', 'That user already has a membership on this account.');
        }
        throw err;
      }
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
      const rows = await deps.db('core.account_memberships').where({ account_id: scope.account.id })
        .orderBy('created_at', 'desc').orderBy('id', 'desc');
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
      const found = looksLikeId(params.id, 'mem') ? await deps.db('core.account_memberships').where({ id: params.id }).first() : undefined;
      if (!found) throw ApiError.notFound('account membership');
      await access.forResource(found.account_id, 'account membership');
      await deps.db.transaction(async (trx) => {
        // The account row lock serializes every removal on this account, so two owners removed at the
        // same moment cannot each see the other as the one who remains.
        await trx('core.accounts').where({ id: found.account_id }).forUpdate().first('id');
        const membership = await trx('core.account_memberships').where({ id: params.id }).first();
        if (!membership) throw ApiError.notFound('account membership');
        if (membership.role === 'OWNER') {
          const [{ n }] = await trx('core.account_memberships')
            .where({ account_id: membership.account_id, role: 'OWNER' }).whereNot({ id: membership.id })
            .count<{ n: string }[]>('* as n');
          if (Number(n) === 0) throw new ApiError('last_owner');
        }
        await trx('core.account_memberships').where({ id: membership.id }).del();
      });
      return {};
    },
  }),
];
