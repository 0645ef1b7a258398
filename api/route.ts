import type Koa from 'koa';
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { ApiDeps } from './deps';
import { ApiError, type ErrorReason } from './errors';
import type { Principal } from './auth/authenticate';
import type { RequestContext } from '../contracts/temporal';
import type { Access } from './auth/access';
import { AUDIT_ACTIONS, auditKey, type AuditAction } from './audit-actions';
import { AuditedAccess, recordAudit } from './audit-trail';
import type { Permission } from './auth/permissions';
import { bodyValidator, paramsValidator, queryValidator, Validator } from './validation';
import { idempotency, idempotencyKeyOf } from './middleware/idempotency';
import { Id, Obj } from '../resources/schemas';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
type Empty = TObject<Record<string, never>>;

export interface HandlerArgs<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  principal: Principal;
  /** Account resolution with this route's permission check built in. */
  access: Access;
  deps: ApiDeps;
  ctx: Koa.Context;
}

export interface HandlerResult {
  data?: unknown;
  message?: string;
  /** Paginated lists: total matching rows, or null when not counted; page and limit come from the query. */
  total?: number | null;
  /** Paginated lists that know it (payments): whether rows lie beyond this page, in the direction walked. */
  hasMore?: boolean;
  /** Paginated lists: null on a cursor page, which has no page number. */
  page?: null;
}

export interface RouteSpec<P extends TObject, Q extends TObject, B extends TObject> {
  method: Method;
  /** Koa-style path below /v1, e.g. `/payments/:id`. */
  path: string;
  tag: string;
  summary: string;
  /**
   * The permission this route needs on its account, enforced by `access.forAccount/forResource`, or
   * null for routes that are not about one account (the account list, account creation, registering a
   * provider). A route with a permission is account-scoped: the route layer adds `account_id` to its
   * query (never declare it in `query`) and hands the named account to `access`.
   */
  permission: Permission | null;
  /** Publishable keys may call this route (GET payment, confirm). */
  publishable?: boolean;
  /** Only the system actor may call this route. */
  systemOnly?: boolean;
  /** Only JWT users (not API keys) may call this route. */
  userOnly?: boolean;
  /**
   * Platform tokens (system tokens that name no workspace): `allowed` on this route, or `required` by it.
   * A platform token calls nothing else: it acts on no workspace's accounts.
   */
  platform?: 'allowed' | 'required';
  /**
   * The error reasons this route answers with beyond those its declaration implies (authentication,
   * validation, permissions, the named account, a path resource's 404, idempotency: see
   * `declaredReasons` in api/openapi.ts). The OpenAPI document declares exactly the union.
   */
  errors?: readonly ErrorReason[];
  params?: P;
  query?: Q;
  body?: B;
  /** The `data` schema of a success, for the OpenAPI document. */
  response?: TSchema;
  status?: 200 | 201;
  envelope?: 'data' | 'void' | 'paginated';
  message: string;
  handler(args: HandlerArgs<Static<P>, Static<Q>, Static<B>>): Promise<HandlerResult>;
}

/** A declared route, whatever its own schemas: what the router, the OpenAPI document and the tests read. */
export interface Route extends RouteSpec<TObject, TObject, TObject> {
  /** Object schemas, so each validator answers an object. */
  validate: { params?: Validator<Record<string, unknown>>; query?: Validator<Record<string, unknown>>; body?: Validator<Record<string, unknown>> };
}

/** The query parameter every account-scoped route takes; the same schema reads it before validation. */
const ACCOUNT_ID = Object.assign(Id('acct'), {
  description: 'The account acted on. With a user token: required on lists and creates; a resource by id must '
    + 'belong to it (else 404). With an API key: optional, and only the key\'s own account.',
});

/** Routes that act on one account: those with a permission, since a permission is held on an account. */
export function isAccountScoped(route: { permission: Permission | null }): boolean {
  return route.permission !== null;
}

/** An account-scoped route's query: its own parameters plus `account_id`, still closed. */
function accountScopedQuery(spec: Pick<RouteSpec<TObject, TObject, TObject>, 'method' | 'path' | 'query'>): TObject {
  if (spec.query?.properties.account_id) {
    throw new Error(`${spec.method.toUpperCase()} ${spec.path}: account_id is added by the route layer; do not declare it`);
  }
  return Obj({ account_id: Type.Optional(ACCOUNT_ID), ...spec.query?.properties });
}

/** Declares a route once: its validation, its permission, its envelope and its OpenAPI entry. */
export function defineRoute<P extends TObject = Empty, Q extends TObject = Empty, B extends TObject = Empty>(
  spec: RouteSpec<P, Q, B>,
): Route {
  const query = isAccountScoped(spec) ? accountScopedQuery(spec) : spec.query;
  return {
    // The handler takes its own schemas' types; the route layer hands it values those validators produced.
    ...(spec as unknown as RouteSpec<TObject, TObject, TObject>),
    query,
    validate: {
      params: spec.params && paramsValidator<Record<string, unknown>>(spec.params),
      query: query && queryValidator<Record<string, unknown>>(query),
      body: spec.body && bodyValidator<Record<string, unknown>>(spec.body),
    },
  };
}

function isPlatform(principal: Principal): boolean {
  return principal.kind === 'user' && principal.platform === true;
}

function platformRefusal(route: Route): ApiError {
  return route.platform === 'required'
    ? new ApiError('insufficient_permissions', 'This needs a platform-scoped system token (one that names no workspace).', { required: 'platform_token' })
    : new ApiError('insufficient_permissions', 'A platform token acts on no workspace\'s accounts: use a workspace\'s token.', { required: 'workspace_token' });
}

const EMPTY_OBJECT_BODY = bodyValidator<Record<string, unknown>>(Type.Object({}, { additionalProperties: false }));

/**
 * The Koa middleware that runs one route: who may call it, then the Idempotency-Key, validation, the
 * handler and the envelope. A request with an Idempotency-Key is admitted before the idempotency store
 * is consulted, so a stored reply is never handed to a credential that may not make the request.
 */
export function routeMiddleware(route: Route, deps: ApiDeps): Koa.Middleware {
  const idempotent = idempotency(deps.db, deps.lease, deps.config.apiKeyPepper, deps.vault);
  // The audit trail's hook: a change this route makes appends one audit event (api/audit-actions.ts).
  const audited = route.method === 'get' ? undefined : AUDIT_ACTIONS[auditKey(route)];
  const replayable = async (ctx: Koa.Context, principal: Principal, access: AuditedAccess): Promise<void> => {
    await access.admit();
    await idempotent(ctx, () => runHandler(route, ctx, principal, access, deps, audited));
  };
  // Not an async function: a read goes from here to its handler without a promise of this layer's own
  // (a refusal thrown here becomes the request's error all the same: Koa's compose catches it).
  return (ctx) => {
    const principal = ctx.state.principal as Principal;
    if (principal.kind === 'api_key' && principal.keyType === 'PUBLISHABLE' && !route.publishable) {
      throw new ApiError('publishable_key_not_allowed');
    }
    if (route.systemOnly && !(principal.kind === 'user' && principal.actorType === 'system')) {
      throw new ApiError('system_actor_required');
    }
    if (isPlatform(principal) ? !route.platform : route.platform === 'required') throw platformRefusal(route);
    if (route.userOnly && principal.kind !== 'user') {
      throw new ApiError('insufficient_permissions', 'This needs a user token, not an API key.', { required: 'user_token' });
    }
    const access = new AuditedAccess(deps.db, principal, route.permission, deps.accountCache, namedAccountId(route, ctx));
    // Without an Idempotency-Key (every read) there is nothing to claim: the handler runs directly.
    return idempotencyKeyOf(ctx) ? replayable(ctx, principal, access) : runHandler(route, ctx, principal, access, deps, audited);
  };
}

async function runHandler(
  route: Route, ctx: Koa.Context, principal: Principal, access: AuditedAccess, deps: ApiDeps, audited?: AuditAction,
): Promise<void> {
  const params = route.validate.params ? route.validate.params({ ...ctx.params }) : {};
  const validated = route.validate.query ? route.validate.query({ ...ctx.query }) : rejectQuery(ctx);
  // The named account is checked here for every account-scoped route, before the body and the handler:
  // naming an account the caller cannot act for is 403 whatever the rest of the request says. Handlers
  // get the account through `access` only, so account_id is not in their query.
  if (access.namedAccountId) await access.namedAccount();
  const query: Record<string, unknown> = { ...validated };
  delete query.account_id;
  const hasBody = route.method !== 'get' && route.method !== 'delete';
  const body = hasBody ? (route.validate.body ?? EMPTY_OBJECT_BODY)(ctx.request.body ?? {}) : {};

  const result = await route.handler({ params, query, body, principal, access, deps, ctx });
  // Only a change that succeeded is recorded; a replayed answer (Idempotency-Key) ran no handler, so none.
  if (audited) await recordAudit(deps.db, audited, { ctx, principal, access, params, query, body, data: result.data });

  ctx.status = route.status ?? 200;
  const envelope: Record<string, unknown> = { message: result.message ?? route.message, success: true };
  if (route.envelope !== 'void') envelope.data = result.data;
  if (route.envelope === 'paginated') {
    const { page: asked = 1, limit = 10 } = query as { page?: number; limit?: number };
    const page = result.page === null ? null : asked;
    const total = result.total === undefined ? 0 : result.total;
    Object.assign(envelope, { total, page, limit, pages: total === null || page === null ? null : Math.ceil(total / limit) });
    if (result.hasMore !== undefined) envelope.has_more = result.hasMore;
  }
  ctx.body = envelope;
}

/**
 * The `account_id` a request names, read before validation (which runs under the Idempotency-Key, so
 * that a retried bad request gets the same 400): only on account-scoped routes, only if it passes the
 * very schema validation applies (a malformed one is then that 400).
 */
function namedAccountId(route: Route, ctx: Koa.Context): string | undefined {
  const value = ctx.query.account_id;
  return isAccountScoped(route) && typeof value === 'string' && Value.Check(ACCOUNT_ID, value) ? value : undefined;
}

function rejectQuery(ctx: Koa.Context): Record<string, never> {
  const unknown = Object.keys(ctx.query);
  if (unknown.length) {
    throw ApiError.validation(unknown.map((k) => ({ path: `query/${k}`, message: 'is not a known field' })), 'unknown_field');
  }
  return {};
}

/** `/payments/:id` → `/payments/{id}` for OpenAPI. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, '{$1}');
}

/** Who asked and under which request: what a workflow records on the events it writes (ids only). */
export function workflowContext(ctx: Koa.Context, principal: Principal): RequestContext {
  return {
    requestId: ctx.state.requestId,
    traceId: ctx.state.traceId,
    spanId: ctx.state.spanId,
    actor: principal.kind === 'api_key'
      ? { type: 'api_key', id: principal.keyId, apiKeyId: principal.keyId }
      : { type: principal.actorType, id: principal.userId },
  };
}
