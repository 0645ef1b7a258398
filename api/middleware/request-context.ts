import type Koa from 'koa';
import { newUlid } from '../../lib/ids';
import { logRequest } from '../../lib/logger';

/**
 * The request ids the server answers with: a client's X-Request-Id that matches this is echoed, any
 * other value (too long, other characters, empty) is replaced by a generated `req_<ulid>`, which
 * matches it too. A correlation header never fails a request: a proxy that adds ids of another shape
 * must not turn every call into a 400. The OpenAPI document declares exactly this.
 */
export const REQUEST_ID_PATTERN = '^[A-Za-z0-9_.:-]{1,200}$';
const CLIENT_REQUEST_ID = new RegExp(REQUEST_ID_PATTERN);
const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/;

/**
 * Gives every request an id (echoed from X-Request-Id when it matches REQUEST_ID_PATTERN) and a trace id
 * (its span's when tracing is on, else from a W3C traceparent when present), and logs one structured line when the response is done
 * (unless `log` is false: the bench's measure of what the line costs).
 */
export function requestContext({ log = true }: { log?: boolean } = {}): Koa.Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const given = ctx.get('X-Request-Id');
    const requestId = CLIENT_REQUEST_ID.test(given) ? given : `req_${newUlid()}`;
    // With tracing on, the request's span set it; otherwise the caller's traceparent or a fresh one.
    const traceId: string = ctx.state.traceId ?? TRACEPARENT.exec(ctx.get('traceparent'))?.[1] ?? newUlid().toLowerCase();
    ctx.state.requestId = requestId;
    ctx.state.traceId = traceId;
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      if (log) logLine(ctx, requestId, traceId, started);
    }
  };
}

/** The request's one line: its ids, method, path, status, time taken, actor and any error reason. */
function logLine(ctx: Koa.Context, requestId: string, traceId: string, started: bigint): void {
  const principal = ctx.state.principal;
  logRequest({
    request_id: requestId,
    trace_id: traceId,
    method: ctx.method,
    path: ctx.path,
    status: ctx.status,
    duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
    actor: principal ? (principal.kind === 'api_key' ? principal.keyId : principal.userId) : undefined,
    reason: ctx.state.errorReason,
  });
}
