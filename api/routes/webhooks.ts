// The webhook endpoints API: register, change, verify, rotate the secret of, and recover the deliveries
// of a merchant's endpoints. Delivery reads and replay are webhook-deliveries.ts's.

import { Type } from '@sinclair/typebox';
import type { Environment } from '../../db/environments';
import { replayStore } from '../../db/webhook-deliveries';
import {
  deleteEndpoint, findEndpoint, insertEndpoint, listEndpoints, nextVerificationNumber, swapSecrets, updateEndpoint,
  type EndpointPatch, type WebhookEndpointRow,
} from '../../db/webhooks';
import { looksLikeId } from '../../lib/ids';
import { logger } from '../../lib/logger';
import { isValidEventFilter, WEBHOOK_EVENT_FILTERS } from '../../lib/webhook-events';
import { generateWebhookSecret } from '../../lib/webhook-signature';
import { webhookUrlProblem } from '../../lib/webhook-url';
import { hostResolver } from '../../net/webhook-dns';
import { webhookClient } from '../../workflows/webhooks/client';
import type { Access } from '../auth/access';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { EndpointSchema, EndpointStatus, serializeWebhookEndpoint, VerificationSchema } from '../../resources/webhooks';
import { defineRoute } from '../route';
import { Metadata, Obj, Pagination } from '../../resources/schemas';
import { requestTime } from '../validation';
import { findVisible } from './environment-lookup';

/**
 * Endpoints an account may have at once (not deleted; disabled ones count), as Stripe allows: each one
 * receives its own delivery workflow for every event, so the number bounds what one event can fan out to.
 */
export const MAX_WEBHOOK_ENDPOINTS = 16;

const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'https (live); private addresses refused unless WEBHOOK_ALLOW_PRIVATE' });
const Events = Type.Array(Type.Unsafe<string>({ type: 'string', enum: [...WEBHOOK_EVENT_FILTERS] }), {
  minItems: 1, maxItems: 100, description: 'Event names, `<family>.*`, or `*` (everything).',
});
const Description = Type.Union([Type.String({ maxLength: 500 }), Type.Null()]);
const Params = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });

const DEFAULT_PREVIOUS_SECRET_TTL_S = 86_400;
const MAX_PREVIOUS_SECRET_TTL_S = 7 * 86_400;

function checkEvents(events: string[] | undefined): string[] | undefined {
  if (!events) return undefined;
  const bad = events.map((e, i) => [e, i] as const).filter(([e]) => !isValidEventFilter(e));
  if (bad.length) {
    throw ApiError.validation(bad.map(([e, i]) => ({ path: `body/events/${i}`, message: `"${e}" is not a known event type (nor <family>.* or *)` })));
  }
  return [...new Set(events)];
}

async function checkUrl(deps: ApiDeps, env: Environment, url: string): Promise<void> {
  const problem = await webhookUrlProblem(url, { live: env === 'production', allowPrivate: deps.config.webhookAllowPrivate, resolve: hostResolver(deps.config.webhookAllowPrivate) });
  if (problem) throw new ApiError('webhook_url_not_allowed', `url ${problem}.`, { fields: [{ path: 'body/url', message: problem }] });
}

/** An endpoint (not deleted) the caller may see, or 404 (environment-lookup.ts says where it looks). */
async function locateEndpoint(deps: ApiDeps, access: Access, id: string) {
  if (!looksLikeId(id, 'we')) throw ApiError.notFound('webhook endpoint');
  return findVisible(access, 'webhook endpoint', async (env) => {
    const row = await findEndpoint(deps.db, env, id);
    return row && !row.deleted ? row : undefined;
  });
}

/** Starts handshake number `n` without waiting for it (create, URL change, re-enable). */
async function kickOffVerification(deps: ApiDeps, env: Environment, endpointId: string, n: number): Promise<void> {
  try {
    await webhookClient(await deps.temporal()).startVerification(env, endpointId, n);
  } catch (err) {
    // The endpoint is saved either way (its secret was shown once); POST …/verify runs the handshake again.
    logger.warn({ err, endpoint_id: endpointId }, 'webhook handshake could not be started');
  }
}

/** A delivery goes only to an enabled endpoint: recover and replay refuse any other (409 invalid_state). */
export function assertEndpointEnabled(endpoint: WebhookEndpointRow): void {
  if (endpoint.status !== 'enabled') {
    throw new ApiError('invalid_state', `The webhook endpoint is ${endpoint.status}; only enabled endpoints receive deliveries.`, {
      status: endpoint.status, endpoint_id: endpoint.id,
    });
  }
}

export const webhookRoutes = [
  defineRoute({
    method: 'post',
    path: '/webhook-endpoints',
    tag: 'Webhooks',
    summary: 'Register a webhook endpoint; answers with its signing secret (once) and starts the handshake',
    permission: 'webhook:write',
    errors: ['webhook_url_not_allowed', 'webhook_endpoint_limit_reached'],
    status: 201,
    message: 'Webhook endpoint created',
    body: Obj({ url: Url, events: Type.Optional(Events), description: Type.Optional(Description), metadata: Type.Optional(Metadata) }),
    response: EndpointSchema,
    async handler({ body, access, deps }) {
      const scope = await access.forAccount();
      const events = checkEvents(body.events) ?? ['*'];
      await checkUrl(deps, scope.environment, body.url);
      const secret = generateWebhookSecret();
      const row = await insertEndpoint(deps.db, scope.environment, {
        accountId: scope.account.id, url: body.url, description: body.description ?? null, events,
        metadata: body.metadata ?? {}, secretEncrypted: deps.vault.encrypt(secret),
      }, MAX_WEBHOOK_ENDPOINTS);
      if (!row) {
        throw new ApiError('webhook_endpoint_limit_reached', `An account may have at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints; delete one first.`,
          { limit: MAX_WEBHOOK_ENDPOINTS });
      }
      await kickOffVerification(deps, scope.environment, row.id, 1);
      return { data: serializeWebhookEndpoint(row, secret) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/webhook-endpoints',
    tag: 'Webhooks',
    summary: 'List webhook endpoints, newest first',
    permission: 'webhook:read',
    envelope: 'paginated',
    message: 'Webhook endpoints retrieved',
    query: Obj({ status: Type.Optional(EndpointStatus), ...Pagination }),
    response: Type.Array(EndpointSchema),
    async handler({ query, access, deps }) {
      const scope = await access.forAccount();
      const { rows, total } = await listEndpoints(deps.db, scope.environment, scope.account.id, { status: query.status },
        { page: query.page ?? 1, limit: query.limit ?? 10 });
      return { data: rows.map((r) => serializeWebhookEndpoint(r)), total };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/webhook-endpoints/:id',
    tag: 'Webhooks',
    summary: 'Get a webhook endpoint (never its secret)',
    permission: 'webhook:read',
    message: 'Webhook endpoint retrieved',
    params: Params,
    response: EndpointSchema,
    async handler({ params, access, deps }) {
      const { row } = await locateEndpoint(deps, access, params.id);
      return { data: serializeWebhookEndpoint(row) };
    },
  }),

  defineRoute({
    method: 'patch',
    path: '/webhook-endpoints/:id',
    tag: 'Webhooks',
    summary: 'Update a webhook endpoint; a new URL must pass the handshake again; `disabled` turns deliveries off and on',
    permission: 'webhook:write',
    errors: ['webhook_url_not_allowed'],
    message: 'Webhook endpoint updated',
    params: Params,
    body: Obj({
      url: Type.Optional(Url), events: Type.Optional(Events), description: Type.Optional(Description),
      metadata: Type.Optional(Metadata), disabled: Type.Optional(Type.Boolean()),
    }),
    response: EndpointSchema,
    async handler({ params, body, access, deps }) {
      const { env, row } = await locateEndpoint(deps, access, params.id);
      const events = checkEvents(body.events);
      const url = body.url ?? row.url;
      if (url !== row.url) await checkUrl(deps, env, url);
      const patch: EndpointPatch = { url, events, description: body.description, metadata: body.metadata };

      // The status after this change: disabling wins; a URL that no handshake has proved goes (back)
      // to pending_verification with a new handshake; re-enabling a proved URL enables it at once.
      const disabledAfter = body.disabled ?? row.status === 'disabled';
      let handshake = false;
      if (disabledAfter) {
        if (row.status !== 'disabled') Object.assign(patch, { status: 'disabled', disabled_reason: 'manual' } satisfies Partial<EndpointPatch>);
      } else if (url !== row.verified_url) {
        if (url !== row.url || row.status !== 'pending_verification') handshake = true;
        patch.status = 'pending_verification';
      } else if (row.status !== 'enabled') {
        Object.assign(patch, { status: 'enabled', disabled_reason: null, failing_since: null } satisfies Partial<EndpointPatch>);
      }
      patch.nextVerification = handshake;
      const updated = await updateEndpoint(deps.db, env, row.id, patch);
      if (!updated) throw ApiError.notFound('webhook endpoint');
      if (handshake) await kickOffVerification(deps, env, updated.id, updated.verification_count);
      return { data: serializeWebhookEndpoint(updated) };
    },
  }),

  defineRoute({
    method: 'delete',
    path: '/webhook-endpoints/:id',
    tag: 'Webhooks',
    summary: 'Delete a webhook endpoint (soft: no further deliveries; history is kept)',
    permission: 'webhook:write',
    message: 'Webhook endpoint deleted',
    params: Params,
    response: EndpointSchema,
    async handler({ params, access, deps }) {
      const { env, row } = await locateEndpoint(deps, access, params.id);
      const deleted = await deleteEndpoint(deps.db, env, row.id);
      if (!deleted) throw ApiError.notFound('webhook endpoint');
      return { data: serializeWebhookEndpoint(deleted) };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/webhook-endpoints/:id/verify',
    tag: 'Webhooks',
    summary: 'Run the handshake now and answer with its result (a pending endpoint that passes is enabled)',
    permission: 'webhook:write',
    errors: ['temporal_unavailable'],
    message: 'Webhook endpoint verification finished',
    params: Params,
    response: Type.Intersect([EndpointSchema, Type.Object({ verification: VerificationSchema })]),
    async handler({ params, access, deps }) {
      const { env, row } = await locateEndpoint(deps, access, params.id);
      const n = await nextVerificationNumber(deps.db, env, row.id);
      const result = await webhookClient(await deps.temporal()).verify(env, row.id, n);
      const updated = await findEndpoint(deps.db, env, row.id);
      if (!updated) throw ApiError.notFound('webhook endpoint');
      return { data: { ...serializeWebhookEndpoint(updated), verification: result } };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/webhook-endpoints/:id/rotate-secret',
    tag: 'Webhooks',
    summary: 'Issue a new signing secret (shown once); the previous one keeps signing until it expires',
    permission: 'webhook:write',
    errors: ['conflict', 'temporal_unavailable'],
    message: 'Webhook secret rotated',
    params: Params,
    body: Obj({
      expire_previous_in_seconds: Type.Optional(Type.Integer({
        minimum: 0, maximum: MAX_PREVIOUS_SECRET_TTL_S, default: DEFAULT_PREVIOUS_SECRET_TTL_S,
        description: 'How long deliveries stay signed with the previous secret too (0: drop it now; at most 7 days).',
      })),
    }),
    response: EndpointSchema,
    async handler({ params, body, access, deps }) {
      const { env, row } = await locateEndpoint(deps, access, params.id);
      const expire = body.expire_previous_in_seconds ?? DEFAULT_PREVIOUS_SECRET_TTL_S;
      const rotation = row.secret_rotation + 1;
      // The timer starts first: if Temporal is down nothing has changed and the caller can retry; two
      // concurrent rotations race for the same workflow id and the loser is told so.
      const webhooks = expire > 0 ? webhookClient(await deps.temporal()) : undefined;
      await webhooks?.startSecretRotation({ environment: env, endpointId: row.id, rotation, expirePreviousInSeconds: expire });
      const secret = generateWebhookSecret();
      const updated = await swapSecrets(deps.db, env, row.id, row.secret_rotation, {
        secretEncrypted: deps.vault.encrypt(secret),
        previousSecretEncrypted: expire > 0 ? row.secret_encrypted : null,
        previousExpiresAt: expire > 0 ? new Date(Date.now() + expire * 1000) : null,
        rotation,
      }).catch(async (err: unknown) => {
        // The swap failed (Postgres): its timer would hold this rotation's number for its whole wait.
        await webhooks?.abandonSecretRotation(row.id, rotation).catch(() => undefined);
        throw err;
      });
      // A rotation that lost a race leaves a timer whose drop no longer matches any rotation: harmless.
      if (!updated) throw new ApiError('conflict', 'This endpoint\'s secret is being rotated by another request.');
      return { data: serializeWebhookEndpoint(updated, secret) };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/webhook-endpoints/:id/recover',
    tag: 'Webhooks',
    summary: 'Re-send every failed or dead-lettered delivery of the endpoint created in [since, until)',
    permission: 'webhook:write',
    errors: ['invalid_state', 'temporal_unavailable'],
    message: 'Webhook deliveries recovered',
    params: Params,
    body: Obj({ since: Type.String({ format: 'date-time' }), until: Type.Optional(Type.String({ format: 'date-time' })) }),
    response: Type.Object({ object: Type.Literal('webhook_recovery'), endpoint_id: Type.String(), recovered: Type.Integer() }, { additionalProperties: true }),
    async handler({ params, body, access, deps }) {
      const { env, row } = await locateEndpoint(deps, access, params.id);
      const since = requestTime(body.since, 'body/since');
      const until = body.until ? requestTime(body.until, 'body/until') : undefined;
      if (until && until <= since) throw ApiError.validation([{ path: 'body/until', message: 'must be after since' }]);
      assertEndpointEnabled(row);
      const client = webhookClient(await deps.temporal(), deps.config);
      const recovered = await client.recoverDeliveries(replayStore(deps.db, env), row.id, { since, until });
      return { data: { object: 'webhook_recovery', endpoint_id: row.id, recovered } };
    },
  }),
];
