import { Type } from '@sinclair/typebox';
import type { Db } from '../../db/knex';
import { findNotification, listNotifications, NotificationReader, setNotificationArchived } from '../../db/notifications';
import { looksLikeId } from '../../lib/ids';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/authenticate';
import { ApiError } from '../errors';
import { NotificationSchema, serializeNotification } from '../../resources/notifications';
import { defineRoute } from '../route';
import { Obj, Pagination } from '../../resources/schemas';

/**
 * A notification addressed to one user (user_id set) is that user's; one without a user is the whole
 * account's. API keys (and the system actor) act for the account and see both kinds.
 */
function readerOf(principal: Principal): NotificationReader {
  return principal.kind === 'user' && principal.actorType === 'user' ? { userId: principal.userId } : {};
}

async function locateNotification(db: Db, access: Access, principal: Principal, id: string) {
  const row = looksLikeId(id, 'ntf') ? await findNotification(db, id, readerOf(principal)) : undefined;
  if (!row) throw ApiError.notFound('notification');
  const scope = await access.forResource(row.account_id, 'notification');
  return { row, scope };
}

const NotificationParams = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });

function setArchived(archived: boolean) {
  return async ({ params, principal, access, deps }: { params: { id: string }; principal: Principal; access: Access; deps: { db: Db } }) => {
    const { row, scope } = await locateNotification(deps.db, access, principal, params.id);
    // Archiving twice keeps the first archived_at; unarchiving an unarchived one changes nothing.
    const updated = await setNotificationArchived(deps.db, row, archived);
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
      const { rows, total } = await listNotifications(deps.db, scope.account.id, readerOf(principal), { archived: query.archived }, { page, limit });
      return { data: rows.map((r) => serializeNotification(r, scope.account)), total };
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
