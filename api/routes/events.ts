import { Type } from '@sinclair/typebox';
import { listEvents } from '../../db/events';
import { defineRoute } from '../route';
import { EventSchema, serializeEvent } from '../../resources/events';
import { Id, Obj, Pagination } from '../../resources/schemas';

export const eventRoutes = [
  defineRoute({
    method: 'get',
    path: '/events',
    tag: 'Events',
    summary: 'List event records, newest first',
    permission: 'event:read',
    envelope: 'paginated',
    message: 'Events retrieved',
    query: Obj({
      ...Pagination,
      payment_id: Type.Optional(Id('pay')),
      type: Type.Optional(Type.String({ pattern: '^[a-z_]+\\.[a-z_.]+$', maxLength: 100 })),
    }),
    response: Type.Array(EventSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const { rows, total } = await listEvents(deps.db, scope.environment, scope.account.id,
        { payment_id: query.payment_id, type: query.type }, { page: query.page ?? 1, limit: query.limit ?? 10 });
      return { data: rows.map(serializeEvent), total };
    },
  }),
];
