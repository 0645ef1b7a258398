// The webhook deliveries API: what was sent to a merchant's endpoints, each attempt's answer, and replaying
// one. Apart from webhooks.ts (the endpoints themselves) because deliveries are read and re-sent from the
// delivery log, not configured.

import { Type } from '@sinclair/typebox';
import type { Environment } from '../../db/environments';
import { findDelivery, listAttempts, listDeliveries, replayStore } from '../../db/webhook-deliveries';
import { findEndpoint } from '../../db/webhooks';
import { looksLikeId } from '../../lib/ids';
import { webhookClient } from '../../workflows/webhooks/client';
import type { Access } from '../auth/access';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { DeliverySchema, DeliveryStatus, serializeWebhookDelivery } from '../../resources/webhooks';
import { defineRoute } from '../route';
import { Id, Obj, Pagination } from '../../resources/schemas';
import { findVisible } from './environment-lookup';
import { assertEndpointEnabled } from './webhooks';

const Params = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });

async function locateDelivery(deps: ApiDeps, access: Access, id: string) {
  if (!looksLikeId(id, 'whd')) throw ApiError.notFound('webhook delivery');
  return findVisible(access, 'webhook delivery', (env) => findDelivery(deps.db, env, id));
}

async function deliveryWithAttempts(deps: ApiDeps, env: Environment, id: string) {
  const row = await findDelivery(deps.db, env, id);
  if (!row) throw ApiError.notFound('webhook delivery');
  return serializeWebhookDelivery(row, await listAttempts(deps.db, env, id));
}

export const webhookDeliveryRoutes = [
  defineRoute({
    method: 'get',
    path: '/webhook-deliveries',
    tag: 'Webhooks',
    summary: 'List webhook deliveries, newest first',
    permission: 'webhook:read',
    envelope: 'paginated',
    message: 'Webhook deliveries retrieved',
    query: Obj({
      endpoint_id: Type.Optional(Id('we')), event_id: Type.Optional(Id('evt')),
      status: Type.Optional(DeliveryStatus), ...Pagination,
    }),
    response: Type.Array(DeliverySchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const { rows, total } = await listDeliveries(deps.db, scope.environment, scope.account.id,
        { endpoint_id: query.endpoint_id, event_id: query.event_id, status: query.status }, { page: query.page ?? 1, limit: query.limit ?? 10 });
      return { data: rows.map((r) => serializeWebhookDelivery(r)), total };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/webhook-deliveries/:id',
    tag: 'Webhooks',
    summary: 'Get a webhook delivery with its attempts and their response bodies',
    permission: 'webhook:read',
    message: 'Webhook delivery retrieved',
    params: Params,
    response: DeliverySchema,
    async handler({ params, access, deps }) {
      const { env, row } = await locateDelivery(deps, access, params.id);
      return { data: await deliveryWithAttempts(deps, env, row.id) };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/webhook-deliveries/:id/replay',
    tag: 'Webhooks',
    summary: 'Send a delivery again now (same webhook-id); a retrying one skips its wait',
    permission: 'webhook:write',
    errors: ['invalid_state', 'conflict', 'temporal_unavailable'],
    message: 'Webhook delivery replay started',
    params: Params,
    response: DeliverySchema,
    async handler({ params, access, deps }) {
      const { env, row } = await locateDelivery(deps, access, params.id);
      const endpoint = await findEndpoint(deps.db, env, row.endpoint_id);
      if (!endpoint || endpoint.deleted) throw new ApiError('invalid_state', 'The webhook endpoint of this delivery was deleted.', { status: 'deleted', endpoint_id: row.endpoint_id });
      assertEndpointEnabled(endpoint);
      const client = webhookClient(await deps.temporal(), deps.config);
      if ((await client.resendDelivery(replayStore(deps.db, env), row)) === 'skipped') throw new ApiError('conflict', 'The delivery changed while it was being replayed; try again.');
      return { data: await deliveryWithAttempts(deps, env, row.id) };
    },
  }),
];
