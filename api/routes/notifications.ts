import { Type } from '@sinclair/typebox';
import type { Knex } from 'knex';
import { serializeNotification } from '../../db/serialize';
import { looksLikeId } from '../../lib/ids';
import type { Db } from '../../db/knex';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/authenticate';
import { ApiError } from '../errors';
import { defineRoute } from '../route';
import { Obj, Pagination, Resource } from '../schemas';

const S = Type.String();
const NS = Type.Union([S, Type.Null()]);
const TS = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

const NotificationSchema = Resource('notification', {
  id: S, user_id: NS, account_id: S, type: S, details: Type.Record(S, Type.Unknown()),
  archived: Type.Boolean(), archived_at: TS, created_at: TS, updated_at: TS,
  account: Type.Object({ object: Type.Literal('account'), id: S }, { additionalProperties: true }),
});

/**
 * A notification addressed to one user (user_id set) is that user's; one without a user is the whole
 * account's. API keys act for the account and see both kinds.
 */
function visibleTo(principal: Principal) {
  return (q: Knex.QueryBuilder) => {
    if (principal.kind === 'user' && principal.actorType === 'user') {
      void q.where((w) => { void w.whereNull('user_id').orWhere('user_id', principal.userId); });
    }
  };
}

async function locateNotification(db: Db, access: Access, principal: Principal, id: string) {
  const row = looksLikeId(id, 'ntf') ? await db('core.notifications').where({ id }).modify(visibleTo(principal)).first() : undefined;
  if (!row) throw ApiError.notFound('notification');
  const scope = await access.forResource(row.account_id, 'notification');
  return { row, scope };
}

const NotificationParams = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });

function setArchived(archived: boolean) {
  return async ({ params, principal, access, deps }: { params: { id: string }; principal: Principal; access: Access; deps: { db: Db } }) => {
    const { row, scope } = await locateNotification(deps.db, access, principal, params.id);
    // Archiving twice keeps the first archived_at; unarchiving an unarchived one changes nothing.
    const wanted = archived ? (row.archived_at ?? deps.db.fn.now()) : null;
    const [updated] = await deps.db('core.notifications').where({ id: row.id })
      .update({ archived_at: wanted, updated_at: deps.db.fn.now() }).returning('*');
    return { data: serializeNotification(updated, scope.account) };
  };
}

export const notificationRoutes = [
  defineRoute({
    method: 'get',
    path: '/notifications',
    tag: 'Notifications',
    summary: 'List the account\'s notifications, newest first',
    permission: 'notification:read',
    envelope: 'paginated',
    message: 'Notifications retrieved',
    query: Obj({ archived: Type.Optional(Type.Boolean()), ...Pagination }),
    response: Type.Array(NotificationSchema),
    async handler({ query, principal, access, deps }) {
      const scope = await access.forAccount();
      const { page = 1, limit = 10 } = query;
      const base = () => {
        const q = deps.db('core.notifications').where({ account_id: scope.account.id }).modify(visibleTo(principal));
        if (query.archived === true) void q.whereNotNull('archived_at');
        if (query.archived === false) void q.whereNull('archived_at');
        return q;
      };
      const [{ n }] = await base().count<{ n: string }[]>('* as n');
      const rows = await base().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset((page - 1) * limit);
      return { data: rows.map((r: any) => serializeNotification(r, scope.account)), total: Number(n) };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/notifications/:id/archive',
    tag: 'Notifications',
    summary: 'Archive a notification',
    permission: 'notification:write',
    message: 'Notification archived',
    params: NotificationParams,
    response: NotificationSchema,
    handler: setArchived(true),
  }),

  defineRoute({
    method: 'post',
    path: '/notifications/:id/unarchive',
    tag: 'Notifications',
    summary: 'Unarchive a notification (clears archived_at)',
    permission: 'notification:write',
    message: 'Notification unarchived',
    params: NotificationParams,
    response: NotificationSchema,
    handler: setArchived(false),
  }),
];
