import type { TSchema } from '@sinclair/typebox';
import { ERRORS, ErrorReason } from './errors';
import { takesIdempotencyKey } from './middleware/idempotency';
import { REQUEST_ID_PATTERN } from './middleware/request-context';
import { openApiPath, Route } from './route';
import { NO_NUL, requestSchema, SHARED_SCHEMAS, WELL_FORMED } from '../resources/schemas';

type Json = Record<string, unknown>;

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid input', 401: 'Missing or invalid credentials', 403: 'Not allowed', 404: 'Not found',
  409: 'Conflicts with the current state', 415: 'Not JSON', 422: 'Breaks a business rule', 429: 'Rate limited',
  500: 'Internal error', 503: 'A dependency is unavailable; retry after Retry-After seconds',
};

/** Reasons whose `details.fields` lists `{ path, message }` per offending field. */
const FIELD_REASONS: ReadonlySet<ErrorReason> = new Set(['validation_failed', 'unknown_field', 'invalid_card', 'webhook_url_not_allowed']);

/**
 * Every error reason a route can answer with: those its declaration implies (the middleware every
 * request passes, what `defineRoute` and the route layer add) plus the route's own `errors`.
 */
export function declaredReasons(route: Route): ErrorReason[] {
  const reasons = new Set<ErrorReason>([
    // authentication (api/auth/authenticate.ts), the rate limit, and what any handler may meet
    'missing_authorization', 'invalid_token', 'token_expired', 'invalid_api_key', 'rate_limited',
    'internal_error', 'database_unavailable',
    // a query parameter the route does not take (a route without query schema takes none)
    'unknown_field',
  ]);
  const hasBody = ['post', 'put', 'patch'].includes(route.method);
  if (route.params || route.query || hasBody) reasons.add('validation_failed');
  if (hasBody) {
    // api/middleware/body.ts: no JSON, malformed JSON, over 1 MiB, nested too deep; then the closed body schema
    for (const r of ['unsupported_media_type', 'invalid_json', 'payload_too_large', 'validation_failed'] as const) reasons.add(r);
  }
  // api/route.ts
  if (!route.publishable) reasons.add('publishable_key_not_allowed');
  if (route.systemOnly) reasons.add('system_actor_required');
  // a platform token on a route not for it, or another token on one requiring it
  if (route.platform !== 'allowed' || route.userOnly || route.permission !== null) reasons.add('insufficient_permissions');
  // account-scoped routes take account_id; naming one the caller cannot act for is 403 (api/auth/access.ts)
  if (route.permission !== null) reasons.add('account_access_denied');
  // a resource named in the path that the caller cannot see
  if (route.params) reasons.add('not_found');
  // api/middleware/idempotency.ts: Idempotency-Key on POST and PATCH (too long is a 400)
  if (takesIdempotencyKey(route.method)) {
    for (const r of ['idempotency_key_in_use', 'idempotency_key_reused', 'validation_failed'] as const) reasons.add(r);
  }
  for (const r of route.errors ?? []) reasons.add(r);
  return [...reasons].sort();
}

/** A local `$ref` (a shared schema's `$id`, as ajv resolves it) as the document's component reference. */
function documentRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(documentRefs);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k,
    k === '$ref' && typeof v === 'string' && !v.startsWith('#') ? `#/components/schemas/${v}` : documentRefs(v)]));
}

/** Drops TypeBox's symbol keys so the document is plain OpenAPI 3.1; named schemas become components. */
function plain(schema: TSchema | object | undefined): Json | undefined {
  return schema === undefined ? undefined : documentRefs(JSON.parse(JSON.stringify(schema))) as Json;
}

const header = (name: string) => ({ $ref: `#/components/headers/${name}` });

function successEnvelope(route: Route): object {
  const base: Record<string, unknown> = { message: { type: 'string' }, success: { type: 'boolean', const: true } };
  if (route.envelope !== 'void') base.data = plain(route.response) ?? {};
  if (route.envelope === 'paginated') {
    base.limit = { type: 'integer', minimum: 0 };
    // Null where a list does not count (a cursor page, or more matches than it counts: docs/api-conventions.md#pagination).
    for (const k of ['total', 'page', 'pages']) base[k] = { type: ['integer', 'null'], minimum: 0 };
    base.has_more = { type: 'boolean', description: 'Lists that page by cursor (payments): whether more rows lie beyond this page, in the direction walked.' };
  }
  const required = ['message', 'success', ...(route.envelope === 'void' ? [] : ['data']),
    ...(route.envelope === 'paginated' ? ['total', 'page', 'limit', 'pages'] : [])];
  return { type: 'object', properties: base, required, additionalProperties: true };
}

function parameters(route: Route): object[] {
  const out: object[] = [];
  for (const [where, validator] of [['path', route.validate.params], ['query', route.validate.query]] as const) {
    const s = plain(validator?.schema) as { properties?: Record<string, object>; required?: string[] } | undefined;
    for (const [name, prop] of Object.entries(s?.properties ?? {})) {
      out.push({ name, in: where, required: where === 'path' || (s?.required ?? []).includes(name), schema: prop });
    }
  }
  out.push({
    name: 'X-Request-Id',
    in: 'header',
    required: false,
    description: `Correlation id. Echoed in the response's X-Request-Id when it matches \`${REQUEST_ID_PATTERN}\`; `
      + 'any other value is ignored and replaced by a generated `req_<ulid>` (never an error).',
    schema: { type: 'string' },
  });
  if (takesIdempotencyKey(route.method)) {
    out.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: 'Makes the request safe to retry: the first answer (2xx or 4xx but 401/403/409/429) is replayed for '
        + 'the same request, 409 while it runs, 422 for another request under the same key. Empty counts as absent.',
      schema: { type: 'string', maxLength: 255 },
    });
  }
  return out;
}

/** Whether the route's body validator takes `{}`. */
function takesEmptyBody(route: Route): boolean {
  try {
    route.validate.body?.({});
    return true;
  } catch {
    return false;
  }
}

function requestBody(route: Route): object | undefined {
  if (!['post', 'put', 'patch'].includes(route.method)) return undefined;
  const schema = plain(route.validate.body?.schema ?? requestSchema({ type: 'object', additionalProperties: false } as unknown as TSchema))!;
  return {
    // An absent body counts as {}: it is required exactly when {} would not do (a required field, a
    // rule such as "exactly one of", minProperties), which the validator itself answers.
    required: !takesEmptyBody(route),
    description: 'application/json; an absent body counts as `{}`.',
    content: { 'application/json': { schema } },
  };
}

const errorSchemaName = (reason: ErrorReason) => `Error_${reason}`;

/** Statuses whose answer to a POST or PATCH with an Idempotency-Key is stored and may come back replayed. */
const REPLAYED_STATUSES: ReadonlySet<number> = new Set([400, 404, 422]);

/**
 * The route's error responses, by status: `$ref`s to shared response components, one per (status,
 * reasons, replayable) combination, named after them (e.g. `E404.not_found`).
 */
function errorResponses(route: Route, components: Record<string, object>): Record<string, object> {
  const byStatus = new Map<number, ErrorReason[]>();
  for (const reason of declaredReasons(route)) {
    const { status } = ERRORS[reason];
    byStatus.set(status, [...(byStatus.get(status) ?? []), reason]);
  }
  const out: Record<string, object> = {};
  for (const [status, reasons] of [...byStatus].sort(([a], [b]) => a - b)) {
    const replayed = takesIdempotencyKey(route.method) && REPLAYED_STATUSES.has(status);
    const name = `E${status}.${reasons.join('.')}${replayed ? '.replayable' : ''}`;
    const refs = reasons.map((r) => ({ $ref: `#/components/schemas/${errorSchemaName(r)}` }));
    components[name] ??= {
      description: `${STATUS_TEXT[status] ?? 'Error'}: ${reasons.map((r) => `\`${r}\` (${ERRORS[r].message})`).join('; ')}`,
      headers: {
        'X-Request-Id': header('X-Request-Id'),
        ...(status === 429 || status === 503 ? { 'Retry-After': header('Retry-After') } : {}),
        ...(replayed ? { 'Idempotent-Replayed': header('Idempotent-Replayed') } : {}),
      },
      content: { 'application/json': { schema: refs.length === 1 ? refs[0] : { anyOf: refs } } },
    };
    out[String(status)] = { $ref: `#/components/responses/${name}` };
  }
  return out;
}

function errorSchemas(used: ReadonlySet<ErrorReason>): Record<string, object> {
  const field = { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, message: { type: 'string' } } };
  const out: Record<string, object> = {
    ErrorEnvelope: {
      type: 'object',
      required: ['message', 'success', 'error'],
      properties: {
        message: { type: 'string' },
        success: { type: 'boolean', const: false },
        error: {
          type: 'object',
          required: ['code', 'message', 'details'],
          properties: {
            code: { type: 'integer' },
            message: { type: 'string' },
            details: { type: 'object', properties: { reason: { type: 'string' } }, required: ['reason'], additionalProperties: true },
          },
        },
      },
    },
  };
  for (const [reason, { status, message }] of Object.entries(ERRORS) as [ErrorReason, { status: number; message: string }][]) {
    if (!used.has(reason)) continue;
    const details: Json = { properties: { reason: { const: reason } } };
    if (FIELD_REASONS.has(reason)) (details.properties as Json).fields = { type: 'array', items: field };
    out[errorSchemaName(reason)] = {
      description: `${status} \`${reason}\`: ${message}`,
      allOf: [{ $ref: '#/components/schemas/ErrorEnvelope' }, { properties: { error: { properties: { code: { const: status }, details } } } }],
    };
  }
  return out;
}

/**
 * The OpenAPI 3.1 document, built from the very schemas ajv validates requests with (each validator's
 * `schema`, the route's schema with the rules of `requestSchema`), and from each route's declared errors.
 */
export function buildOpenApi(routes: Route[]): object {
  const paths: Record<string, Record<string, object>> = {};
  const responses: Record<string, object> = {};
  for (const route of routes) {
    const path = `/v1${openApiPath(route.path)}`;
    const status = String(route.status ?? 200);
    const body = requestBody(route);
    (paths[path] ??= {})[route.method] = {
      operationId: `${route.method}${path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string) => (c ? c.toUpperCase() : ''))}`,
      tags: [route.tag],
      summary: route.summary,
      parameters: parameters(route),
      ...(body ? { requestBody: body } : {}),
      responses: {
        [status]: {
          description: route.message,
          headers: {
            'X-Request-Id': header('X-Request-Id'),
            ...(takesIdempotencyKey(route.method) ? { 'Idempotent-Replayed': header('Idempotent-Replayed') } : {}),
          },
          content: { 'application/json': { schema: successEnvelope(route) } },
        },
        ...errorResponses(route, responses),
      },
    };
  }
  const shared = Object.fromEntries(SHARED_SCHEMAS.map((schema) => {
    const { $id, ...rest } = plain(schema)!;
    return [$id as string, rest];
  }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Switchboard API',
      version: 'v1',
      description: 'Payment orchestration: routing, cascading, refunds and signed webhooks.\n\n'
        + `No request string or object key may contain U+0000 or an unpaired surrogate (Postgres cannot store them): every string schema without a pattern of its own carries \`pattern: ${NO_NUL}\` and \`${WELL_FORMED}: true\` (no unpaired UTF-16 surrogate).`,
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A JWT, a secret key (sk_…) or a publishable key (pk_…).' } },
      schemas: { ...shared, ...errorSchemas(new Set(routes.flatMap(declaredReasons))) },
      responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b))),
      headers: {
        'X-Request-Id': {
          description: 'The request\'s id: the client\'s X-Request-Id when it matched the pattern, else a generated `req_<ulid>`.',
          required: true,
          schema: { type: 'string', pattern: REQUEST_ID_PATTERN },
        },
        'Retry-After': { description: 'Seconds to wait before retrying.', required: true, schema: { type: 'string', pattern: '^[0-9]+$' } },
        'Idempotent-Replayed': {
          description: '`true` when this is the stored answer to an earlier request with the same Idempotency-Key.',
          required: false,
          schema: { type: 'string', const: 'true' },
        },
      },
    },
  };
}
