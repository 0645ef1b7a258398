import type { TSchema } from '@sinclair/typebox';
import { openApiPath, Route } from './route';

const ERROR_STATUSES = [400, 401, 403, 404, 409, 422, 429, 500] as const;
const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid input', 401: 'Missing or invalid credentials', 403: 'Not allowed', 404: 'Not found',
  409: 'Conflicts with the current state', 422: 'Breaks a business rule', 429: 'Rate limited', 500: 'Internal error',
};

/** Drops TypeBox's symbol keys and JSON-Schema-only noise so the document is plain OpenAPI 3.1. */
function plain(schema: TSchema | undefined): object | undefined {
  return schema === undefined ? undefined : JSON.parse(JSON.stringify(schema));
}

function successEnvelope(route: Route): object {
  const base: Record<string, unknown> = { message: { type: 'string' }, success: { type: 'boolean', const: true } };
  if (route.envelope !== 'void') base.data = plain(route.response) ?? {};
  if (route.envelope === 'paginated') {
    for (const k of ['total', 'page', 'limit', 'pages']) base[k] = { type: 'integer', minimum: 0 };
  }
  const required = ['message', 'success', ...(route.envelope === 'void' ? [] : ['data']),
    ...(route.envelope === 'paginated' ? ['total', 'page', 'limit', 'pages'] : [])];
  return { type: 'object', properties: base, required, additionalProperties: true };
}

function parameters(route: Route): object[] {
  const out: object[] = [];
  for (const [where, schema] of [['path', route.params], ['query', route.query]] as const) {
    const s = plain(schema) as { properties?: Record<string, object>; required?: string[] } | undefined;
    for (const [name, prop] of Object.entries(s?.properties ?? {})) {
      out.push({ name, in: where, required: where === 'path' || (s?.required ?? []).includes(name), schema: prop });
    }
  }
  out.push({ name: 'X-Request-Id', in: 'header', required: false, schema: { type: 'string', maxLength: 200 } });
  if (route.method === 'post') {
    out.push({ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 } });
  }
  return out;
}

/** The OpenAPI 3.1 document, built from the very schemas ajv validates requests with. */
export function buildOpenApi(routes: Route[]): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const route of routes) {
    const path = `/v1${openApiPath(route.path)}`;
    const status = String(route.status ?? 200);
    const responses: Record<string, object> = {
      [status]: { description: route.message, content: { 'application/json': { schema: successEnvelope(route) } } },
    };
    for (const s of ERROR_STATUSES) responses[String(s)] = { $ref: `#/components/responses/E${s}` };
    (paths[path] ??= {})[route.method] = {
      operationId: `${route.method}${path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string) => (c ? c.toUpperCase() : ''))}`,
      tags: [route.tag],
      summary: route.summary,
      parameters: parameters(route),
      ...(route.method !== 'get' && route.method !== 'delete'
        ? { requestBody: { required: false, content: { 'application/json': { schema: plain(route.body) ?? { type: 'object', additionalProperties: false } } } } }
        : {}),
      responses,
    };
  }
  const errorEnvelope = {
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
  };
  const responses = Object.fromEntries(ERROR_STATUSES.map((s) => [
    `E${s}`, { description: ERROR_TEXT[s], content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } } },
  ]));
  return {
    openapi: '3.1.0',
    info: { title: 'Switchboard API', version: 'v1', description: 'Payment orchestration: routing, cascading, refunds and signed webhooks.' },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A JWT, a secret key (sk_…) or a publishable key (pk_…).' } },
      schemas: { ErrorEnvelope: errorEnvelope },
      responses,
    },
  };
}
