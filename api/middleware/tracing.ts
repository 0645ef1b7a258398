import type Koa from 'koa';
import type Router from '@koa/router';
import { context, type Context, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { routeOf } from './metrics';

/**
 * The root span of every request (docs/observability.md#traces), outermost so it covers the whole
 * answer: `GET /v1/payments/:id` by route template, with the request id, method, route and status.
 * Never the path, query, headers or body: they hold ids, keys and card data. Installed only when
 * tracing is on.
 *
 * A caller's W3C `traceparent` and `baggage` are honoured only once its credential has been verified
 * (`continueCallerTrace`, right after authentication on /v1): anyone may call the health checks,
 * `/metrics`, the processors' notifications and the 3-D Secure return, and must not attach spans to
 * our traces or carry baggage into them. Until then the span waits; a request that never authenticates
 * gets a trace of its own, started when the request arrived.
 */
export function traceRequests(routers: Router[]): Koa.Middleware {
  const tracer = trace.getTracer('switchboard-api');
  return async (ctx, next) => {
    const caller = propagation.extract(ROOT_CONTEXT, ctx.headers);
    const callerSent = trace.getSpanContext(caller) !== undefined || propagation.getBaggage(caller) !== undefined;
    const arrived = Date.now();
    let span: Span | undefined;
    const start = (parent: Context): Span => {
      span = tracer.startSpan(ctx.method, {
        kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method }, ...(callerSent ? { startTime: arrived } : {}),
      }, parent);
      // The request's log line and the events it writes carry this trace's id; the events' fan-out continues it from this span.
      ctx.state.traceId = span.spanContext().traceId;
      ctx.state.spanId = span.spanContext().spanId;
      return span;
    };
    try {
      if (!callerSent) {
        await context.with(trace.setSpan(ROOT_CONTEXT, start(ROOT_CONTEXT)), next);
      } else {
        ctx.state.continueCallerTrace = (inner: Koa.Next) => context.with(trace.setSpan(caller, start(caller)), inner);
        await next();
      }
    } finally {
      end(span ?? start(ROOT_CONTEXT), ctx, routers);
    }
  };
}

/**
 * The authenticated part of a request: with tracing on and a caller that sent a trace context, its
 * span starts here as the caller's child (traceRequests); otherwise this is `next()`.
 */
export function continueCallerTrace(ctx: Koa.Context, next: Koa.Next): Promise<unknown> {
  const continued: unknown = ctx.state.continueCallerTrace;
  if (typeof continued !== 'function') return next();
  delete ctx.state.continueCallerTrace;
  return (continued as (inner: Koa.Next) => Promise<unknown>)(next);
}

function end(span: Span, ctx: Koa.Context, routers: Router[]): void {
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
