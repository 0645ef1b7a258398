import { Type } from '@sinclair/typebox';
import { listAuditEvents } from '../../db/audit';
import { listStart, paginationError } from '../pagination';
import { defineRoute } from '../route';
import { AuditEventSchema, serializeAuditEvent } from '../../resources/audit-events';
import { Id, Obj, Pagination } from '../../resources/schemas';
import { requestTime } from '../validation';

const Name = (description: string) => Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_.:-]+$', description });


export const auditEventRoutes = [
  defineRoute({
    method: 'get',
    path: '/audit-events',
    tag: 'Audit events',
    summary: 'List the account\'s audit trail, newest first: every change to keys, members, providers, routing, webhooks, and every capture, cancel and refund',
    permission: 'audit:read',
    errors: ['invalid_pagination'],
    envelope: 'paginated',
    message: 'Audit events retrieved',
    query: Obj({
      ...Pagination,
      starting_after: Type.Optional({ ...Id('aud'), description: 'An audit event of this list: the page right after it (older).' }),
      ending_before: Type.Optional({ ...Id('aud'), description: 'An audit event of this list: the page right before it (newer).' }),
      action: Type.Optional(Name('e.g. api_key.created')),
      resource_type: Type.Optional(Name('e.g. payment_provider_config')),
      resource_id: Type.Optional(Name('the id of the resource changed')),
      actor_id: Type.Optional(Name('a user id, system actor id or API key id')),
      from: Type.Optional(Type.String({ format: 'date-time', description: 'created at or after (inclusive)' })),
      to: Type.Optional(Type.String({ format: 'date-time', description: 'created before (exclusive)' })),
    }),
    response: Type.Array(AuditEventSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const start = listStart(query);
      const filter = {
        action: query.action,
        resourceType: query.resource_type,
        resourceId: query.resource_id,
        actorId: query.actor_id,
        from: query.from === undefined ? undefined : requestTime(query.from, 'query/from'),
        to: query.to === undefined ? undefined : requestTime(query.to, 'query/to'),
      };
      const listed = await listAuditEvents(deps.db, scope.account.id, filter, start, query.limit ?? 10);
      if (!listed) {
        throw paginationError(`query/${'startingAfter' in start ? 'starting_after' : 'ending_before'}`, 'no such audit event in this account');
      }
      return { data: listed.rows.map(serializeAuditEvent), total: listed.total, hasMore: listed.hasMore, ...('page' in start ? {} : { page: null }) };
    },
  }),
];
