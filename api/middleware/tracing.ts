import type Koa from 'koa';
import type Router from '@koa/router';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { routeOf } from './metrics';

/**
 * The root span of every request (docs/observability.md#traces), outermost so it covers the whole
 * answer: `GET /v1/payments/:id` by route template, with the request id, method, route and status.
 * A caller's W3C `traceparent` makes it a child of the caller's trace. Never the path, query, headers
 * or body: they hold ids, keys and card data. Installed only when tracing is on.
 */
export function traceRequests(routers: Router[]): Koa.Middleware {
  const tracer = trace.getTracer('switchboard-api');
  return async (ctx, next) => {
    const parent = propagation.extract(ROOT_CONTEXT, ctx.headers);
    const span = tracer.startSpan(ctx.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method } }, parent);
    // The request's log line and the events it writes carry this trace's id.
    ctx.state.traceId = span.spanContext().traceId;
    try {
      await context.with(trace.setSpan(parent, span), next);
    } finally {
      const route = routeOf(ctx, routers);
      span.updateName(`${ctx.method} ${route}`);
      span.setAttributes({
        'http.route': route,
        'http.response.status_code': ctx.status,
        'switchboard.request_id': typeof ctx.state.requestId === 'string' ? ctx.state.requestId : '',
      });
      if (typeof ctx.state.errorReason === 'string') span.setAttribute('switchboard.error_reason', ctx.state.errorReason);
      if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
  };
}
