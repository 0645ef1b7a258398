import { Type } from '@sinclair/typebox';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, WorkflowIdReusePolicy } from '@temporalio/common';
import type { Environment } from '../../db/environments';
import { envTable } from '../../db/environments';
import type { Db } from '../../db/knex';
import { serializeWebhookDelivery, serializeWebhookEndpoint } from '../../db/serialize';
import { looksLikeId, newId } from '../../lib/ids';
import { logger } from '../../lib/logger';
import { isValidEventFilter, WEBHOOK_EVENT_FILTERS } from '../../lib/webhook-events';
import { generateWebhookSecret } from '../../lib/webhook-signature';
import { recoverDeliveries, resendDelivery, type ReplayDeps } from '../../lib/webhook-replay';
import { isAlreadyStarted } from '../../lib/webhook-start';
import { webhookUrlProblem } from '../../lib/webhook-url';
import { TASK_QUEUES } from '../../workflows/shared';
import {
  WEBHOOK_WORKFLOW_IDS, type WebhookSecretRotationInput, type WebhookVerificationInput, type WebhookVerificationResult,
} from '../../workflows/webhook-shared';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/authenticate';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { defineRoute } from '../route';
import { Id, Metadata, Obj, Pagination, Resource } from '../schemas';

const S = Type.String();
const NS = Type.Union([S, Type.Null()]);
const NI = Type.Union([Type.Integer(), Type.Null()]);
const TS = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

const EndpointStatus = Type.Union([Type.Literal('pending_verification'), Type.Literal('enabled'), Type.Literal('disabled')]);
const DeliveryStatus = Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed'), Type.Literal('dead_lettered')]);
const VerificationSchema = Type.Object({ ok: Type.Boolean(), status_code: NI, error: NS }, { additionalProperties: true });

const EndpointSchema = Resource('webhook_endpoint', {
  id: S, account_id: S, url: S, description: NS, events: Type.Array(S), metadata: Type.Record(S, Type.Unknown()),
  status: EndpointStatus, disabled_reason: NS,
  secret: Type.Union([S, Type.Null()], { description: 'The signing secret (whsec_…): only on create and rotate-secret.' }),
  secret_rotation: Type.Integer(), previous_secret_expires_at: TS,
  verification: Type.Union([VerificationSchema, Type.Null()]), verified_at: TS, failing_since: TS,
  deleted: Type.Boolean(), created_at: TS, updated_at: TS,
});

const AttemptSchema = Resource('webhook_attempt', {
  id: S, delivery_id: S, endpoint_id: S, attempt_no: Type.Integer(), trigger: S, url: S, webhook_timestamp: Type.Integer(),
  status_code: Type.Integer({ description: '0 when no HTTP answer came back' }), outcome: S, duration_ms: Type.Integer(),
  response_body: NS, response_body_truncated: Type.Boolean(), error: NS, created_at: TS,
});

const DeliverySchema = Resource('webhook_delivery', {
  id: S, account_id: S, endpoint_id: S, event_id: S, event_type: S, status: DeliveryStatus,
  attempt_count: Type.Integer(), replay_count: Type.Integer(), next_attempt_at: TS, last_attempt_at: TS,
  last_status_code: NI, last_error: NS, succeeded_at: TS, dead_lettered_at: TS, created_at: TS, updated_at: TS,
  attempts: Type.Optional(Type.Array(AttemptSchema)),
});

const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'https (live); private addresses refused unless WEBHOOK_ALLOW_PRIVATE' });
const Events = Type.Array(Type.Unsafe<string>({ type: 'string', enum: [...WEBHOOK_EVENT_FILTERS] }), {
  minItems: 1, maxItems: 100, description: 'Event names, `<family>.*`, or `*` (everything).',
});
const Description = Type.Union([Type.String({ maxLength: 500 }), Type.Null()]);
const Params = Obj({ id: Type.String({ minLength: 1, maxLength: 100 }) });

const DEFAULT_PREVIOUS_SECRET_TTL_S = 86_400;
const MAX_PREVIOUS_SECRET_TTL_S = 7 * 86_400;
/** A verify call waits for its handshake (one POST of at most 15 s) this long at most. */
const VERIFY_TIMEOUT = '40s';

function checkEvents(events: string[] | undefined): string[] | undefined {
  if (!events) return undefined;
  const bad = events.map((e, i) => [e, i] as const).filter(([e]) => !isValidEventFilter(e));
  if (bad.length) {
    throw ApiError.validation(bad.map(([e, i]) => ({ path: `body/events/${i}`, message: `"${e}" is not a known event type (nor <family>.* or *)` })));
  }
  return [...new Set(events)];
}

async function checkUrl(deps: ApiDeps, env: Environment, url: string): Promise<void> {
  const problem = await webhookUrlProblem(url, { live: env === 'production', allowPrivate: deps.config.webhookAllowPrivate });
  if (problem) throw new ApiError('webhook_url_not_allowed', `url ${problem}.`, { fields: [{ path: 'body/url', message: problem }] });
}

/**
 * Finds a row of an environment table by id where the caller may see it: an API key looks only in its
 * own environment, a user token in both, and the row must sit in its account's environment. Anything
 * not visible is a 404.
 */
async function locate(db: Db, access: Access, principal: Principal, table: string, prefix: 'we' | 'whd', id: string, what: string) {
  if (!looksLikeId(id, prefix)) throw ApiError.notFound(what);
  const envs: Environment[] = principal.kind === 'api_key' ? [principal.environment] : ['production', 'sandbox'];
  for (const env of envs) {
    const row = await db(envTable(env, table)).where({ id }).modify((q) => { if (table === 'webhook_endpoints') void q.where({ deleted: false }); }).first();
    if (!row) continue;
    const scope = await access.forResource(row.account_id, what);
    if (scope.environment !== env) break;
    return { env, row, scope };
  }
  throw ApiError.notFound(what);
}

const locateEndpoint = (deps: ApiDeps, access: Access, principal: Principal, id: string) =>
  locate(deps.db, access, principal, 'webhook_endpoints', 'we', id, 'webhook endpoint');
const locateDelivery = (deps: ApiDeps, access: Access, principal: Principal, id: string) =>
  locate(deps.db, access, principal, 'webhook_deliveries', 'whd', id, 'webhook delivery');

/** Starts handshake number `n` without waiting for it (create, URL change, re-enable). */
async function kickOffVerification(deps: ApiDeps, env: Environment, endpointId: string, n: number): Promise<void> {
  try {
    const client = await deps.temporal();
    await client.workflow.start('webhookVerificationWorkflow', {
      workflowId: WEBHOOK_WORKFLOW_IDS.verification(endpointId, n),
      taskQueue: TASK_QUEUES.webhooks,
      args: [{ environment: env, endpointId, verification: n } satisfies WebhookVerificationInput],
      workflowExecutionTimeout: VERIFY_TIMEOUT,
    });
  } catch (err) {
    // The endpoint is saved either way (its secret was shown once); POST …/verify runs the handshake again.
    logger.warn({ err, endpoint_id: endpointId }, 'webhook handshake could not be started');
  }
}

function assertEndpointEnabled(endpoint: any): void {
  if (endpoint.status !== 'enabled') {
    throw new ApiError('invalid_state', `The webhook endpoint is ${endpoint.status}; only enabled endpoints receive deliveries.`, {
      status: endpoint.status, endpoint_id: endpoint.id,
    });
  }
}

/** Replay/recover send through lib/webhook-replay (shared with the ops CLI). */
const replayDeps = (deps: ApiDeps): ReplayDeps => ({ db: deps.db, temporal: deps.temporal, webhookRetrySchedule: deps.config.webhookRetrySchedule });

async function deliveryWithAttempts(db: Db, env: Environment, id: string) {
  const row = await db(envTable(env, 'webhook_deliveries')).where({ id }).first();
  const attempts = await db(envTable(env, 'webhook_attempts')).where({ delivery_id: id }).orderBy('attempt_no');
  return serializeWebhookDelivery(row, attempts);
}

function failureType(err: WorkflowFailedError): string | undefined {
  for (let cause: unknown = err.cause; cause instanceof Error; cause = (cause as { cause?: unknown }).cause) {
    if (cause instanceof ApplicationFailure && cause.type) return cause.type;
  }
  return undefined;
}

export const webhookRoutes = [
  defineRoute({
    method: 'post',
    path: '/webhook-endpoints',
    tag: 'Webhooks',
    summary: 'Register a webhook endpoint; answers with its signing secret (once) and starts the handshake',
    permission: 'webhook:write',
    errors: ['webhook_url_not_allowed'],
    status: 201,
    message: 'Webhook endpoint created',
    body: Obj({ url: Url, events: Type.Optional(Events), description: Type.Optional(Description), metadata: Type.Optional(Metadata) }),
    response: EndpointSchema,
    async handler({ body, access, deps }) {
      const scope = await access.forAccount();
      const events = checkEvents(body.events) ?? ['*'];
      await checkUrl(deps, scope.environment, body.url);
      const secret = generateWebhookSecret();
      const [row] = await deps.db(envTable(scope.environment, 'webhook_endpoints')).insert({
        id: newId('we'), account_id: scope.account.id, url: body.url, description: body.description ?? null,
        events: JSON.stringify(events), metadata: JSON.stringify(body.metadata ?? {}), status: 'pending_verification',
        secret_encrypted: deps.vault.encrypt(secret), verification_count: 1,
      }).returning('*');
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
      const { page = 1, limit = 10 } = query;
      const table = envTable(scope.environment, 'webhook_endpoints');
      const where = { account_id: scope.account.id, deleted: false, ...(query.status ? { status: query.status } : {}) };
      const [{ n }] = await deps.db(table).where(where).count<{ n: string }[]>('* as n');
      const rows = await deps.db(table).where(where).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset((page - 1) * limit);
      return { data: rows.map((r) => serializeWebhookEndpoint(r)), total: Number(n) };
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
    async handler({ params, principal, access, deps }) {
      const { row } = await locateEndpoint(deps, access, principal, params.id);
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
    async handler({ params, body, principal, access, deps }) {
      const { env, row } = await locateEndpoint(deps, access, principal, params.id);
      const events = checkEvents(body.events);
      const url = body.url ?? row.url;
      if (url !== row.url) await checkUrl(deps, env, url);
      const patch: Record<string, unknown> = { url, updated_at: deps.db.fn.now() };
      if (events) patch.events = JSON.stringify(events);
      if (body.description !== undefined) patch.description = body.description;
      if (body.metadata !== undefined) patch.metadata = JSON.stringify(body.metadata);

      // The status after this change: disabling wins; a URL that no handshake has proved goes (back)
      // to pending_verification with a new handshake; re-enabling a proved URL enables it at once.
      const disabledAfter = body.disabled ?? row.status === 'disabled';
      let handshake = false;
      if (disabledAfter) {
        if (row.status !== 'disabled') Object.assign(patch, { status: 'disabled', disabled_reason: 'manual' });
      } else if (url !== row.verified_url) {
        if (url !== row.url || row.status !== 'pending_verification') handshake = true;
        patch.status = 'pending_verification';
      } else if (row.status !== 'enabled') {
        Object.assign(patch, { status: 'enabled', disabled_reason: null, failing_since: null });
      }
      if (handshake) patch.verification_count = deps.db.raw('verification_count + 1');
      const [updated] = await deps.db(envTable(env, 'webhook_endpoints')).where({ id: row.id, deleted: false }).update(patch).returning('*');
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
    async handler({ params, principal, access, deps }) {
      const { env, row } = await locateEndpoint(deps, access, principal, params.id);
      const [deleted] = await deps.db(envTable(env, 'webhook_endpoints')).where({ id: row.id, deleted: false })
        .update({ deleted: true, updated_at: deps.db.fn.now() }).returning('*');
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
    async handler({ params, principal, access, deps }) {
      const { env, row } = await locateEndpoint(deps, access, principal, params.id);
      const table = envTable(env, 'webhook_endpoints');
      const [{ verification_count: n }] = await deps.db(table).where({ id: row.id })
        .update({ verification_count: deps.db.raw('verification_count + 1') }).returning('verification_count');
      const client = await deps.temporal();
      let result: WebhookVerificationResult;
      try {
        result = await client.workflow.execute('webhookVerificationWorkflow', {
          workflowId: WEBHOOK_WORKFLOW_IDS.verification(row.id, n),
          taskQueue: TASK_QUEUES.webhooks,
          args: [{ environment: env, endpointId: row.id, verification: n } satisfies WebhookVerificationInput],
          workflowExecutionTimeout: VERIFY_TIMEOUT,
        }) as WebhookVerificationResult;
      } catch (err) {
        if (err instanceof WorkflowFailedError && failureType(err) === 'not_found') throw ApiError.notFound('webhook endpoint');
        if (err instanceof WorkflowFailedError) {
          throw new ApiError('temporal_unavailable', 'The handshake did not finish in time; try again.', {}, { 'Retry-After': '5' });
        }
        throw err;
      }
      const updated = await deps.db(table).where({ id: row.id }).first();
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
    async handler({ params, body, principal, access, deps }) {
      const { env, row } = await locateEndpoint(deps, access, principal, params.id);
      const expire = body.expire_previous_in_seconds ?? DEFAULT_PREVIOUS_SECRET_TTL_S;
      const rotation = row.secret_rotation + 1;
      // The timer starts first: if Temporal is down nothing has changed and the caller can retry; two
      // concurrent rotations race for the same workflow id and the loser is told so.
      if (expire > 0) {
        const client = await deps.temporal();
        try {
          await client.workflow.start('webhookSecretRotationWorkflow', {
            workflowId: WEBHOOK_WORKFLOW_IDS.secretRotation(row.id, rotation),
            taskQueue: TASK_QUEUES.webhooks,
            args: [{ environment: env, endpointId: row.id, rotation, expirePreviousInSeconds: expire } satisfies WebhookSecretRotationInput],
            workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          });
        } catch (err) {
          if (isAlreadyStarted(err)) throw new ApiError('conflict', 'This endpoint\'s secret is being rotated by another request.');
          throw err;
        }
      }
      const secret = generateWebhookSecret();
      const [updated] = await deps.db(envTable(env, 'webhook_endpoints'))
        .where({ id: row.id, secret_rotation: row.secret_rotation, deleted: false })
        .update({
          secret_encrypted: deps.vault.encrypt(secret),
          previous_secret_encrypted: expire > 0 ? row.secret_encrypted : null,
          previous_secret_expires_at: expire > 0 ? new Date(Date.now() + expire * 1000) : null,
          secret_rotation: rotation,
          updated_at: deps.db.fn.now(),
        }).returning('*');
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
    response: Type.Object({ object: Type.Literal('webhook_recovery'), endpoint_id: S, recovered: Type.Integer() }, { additionalProperties: true }),
    async handler({ params, body, principal, access, deps }) {
      const { env, row } = await locateEndpoint(deps, access, principal, params.id);
      const since = new Date(body.since);
      const until = body.until ? new Date(body.until) : undefined;
      if (until && until <= since) throw ApiError.validation([{ path: 'body/until', message: 'must be after since' }]);
      assertEndpointEnabled(row);
      const recovered = await recoverDeliveries(replayDeps(deps), env, row.id, since, until);
      return { data: { object: 'webhook_recovery', endpoint_id: row.id, recovered } };
    },
  }),

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
      const { page = 1, limit = 10 } = query;
      const table = envTable(scope.environment, 'webhook_deliveries');
      const where: Record<string, string> = { account_id: scope.account.id };
      if (query.endpoint_id) where.endpoint_id = query.endpoint_id;
      if (query.event_id) where.event_id = query.event_id;
      if (query.status) where.status = query.status;
      const [{ n }] = await deps.db(table).where(where).count<{ n: string }[]>('* as n');
      const rows = await deps.db(table).where(where).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset((page - 1) * limit);
      return { data: rows.map((r) => serializeWebhookDelivery(r)), total: Number(n) };
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
    async handler({ params, principal, access, deps }) {
      const { env, row } = await locateDelivery(deps, access, principal, params.id);
      return { data: await deliveryWithAttempts(deps.db, env, row.id) };
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
    async handler({ params, principal, access, deps }) {
      const { env, row } = await locateDelivery(deps, access, principal, params.id);
      const endpoint = await deps.db(envTable(env, 'webhook_endpoints')).where({ id: row.endpoint_id, deleted: false }).first();
      if (!endpoint) throw new ApiError('invalid_state', 'The webhook endpoint of this delivery was deleted.', { status: 'deleted', endpoint_id: row.endpoint_id });
      assertEndpointEnabled(endpoint);
      if ((await resendDelivery(replayDeps(deps), env, row)) === 'skipped') throw new ApiError('conflict', 'The delivery changed while it was being replayed; try again.');
      return { data: await deliveryWithAttempts(deps.db, env, row.id) };
    },
  }),
];
