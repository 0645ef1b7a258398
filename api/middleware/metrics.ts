import { createHash, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';
import type Router from '@koa/router';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ApiError } from '../errors';

/**
 * The API's Prometheus metrics (docs/observability.md#metrics), served at `GET /metrics`. Requests are
 * labelled by route template (`/v1/payments/:id`), never by path: a path holds ids.
 */
export const apiRegistry = new Registry();
collectDefaultMetrics({ register: apiRegistry });

const httpRequests = new Counter({
  name: 'http_requests_total', help: 'HTTP requests answered, by route template, method and status.',
  labelNames: ['route', 'method', 'status'] as const, registers: [apiRegistry],
});
const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds', help: 'How long the API took to answer, by route template, method and status.',
  labelNames: ['route', 'method', 'status'] as const, registers: [apiRegistry],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
});
export const idempotencyReplays = new Counter({
  name: 'idempotency_replays_total', help: 'Requests answered with the stored response of an earlier one (Idempotent-Replayed).',
  registers: [apiRegistry],
});
export const rateLimitRejections = new Counter({
  name: 'rate_limit_rejections_total', help: 'Requests refused with 429 rate_limited.', registers: [apiRegistry],
});
/**
 * Verified processor events that settle nothing because their mode is not their config's (a test event at
 * a live config, a live one at a sandbox config). Labelled by the provider's adapter and the reason only.
 */
export const providerEventsWrongMode = new Counter({
  name: 'provider_events_wrong_mode_total',
  help: 'Verified processor events refused because their mode (test or live) is not their config\'s environment\'s.',
  labelNames: ['provider', 'reason'] as const, registers: [apiRegistry],
});

/** Changes that took effect but whose audit event could not be appended (logged with the request id): alert on any. */
export const auditAppendFailures = new Counter({
  name: 'audit_append_failures_total', help: 'Audited changes whose audit event could not be written after retries.',
  registers: [apiRegistry],
});

/** Methods outside this list share one label, so a client cannot grow the series. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * Counts and times every request, outermost (so error responses count with their final status). The
 * route is the template of the routers' route for the path and method (asked of the routers, so a
 * request refused before its route ran, e.g. a 429, still gets it), the template a path-matching
 * middleware names in `ctx.state.routeTemplate`, `/dashboard` for the dashboard's files, or `unmatched`.
 */
export function requestMetrics(routers: Router[]): Koa.Middleware {
  // The series of each label set, bound once (prom-client then skips reading the label arguments; each
  // observation still validates and hashes them). The label sets are bounded (route templates × methods × statuses).
  const series = new Map<string, { requests: Counter.Internal; duration: Histogram.Internal<string> }>();
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const route = routeOf(ctx, routers);
      const method = METHODS.has(ctx.method) ? ctx.method : 'OTHER';
      const key = `${route} ${method} ${ctx.status}`;
      let bound = series.get(key);
      if (!bound) {
        const labels = { route, method, status: String(ctx.status) };
        bound = { requests: httpRequests.labels(labels), duration: httpRequestDuration.labels(labels) };
        series.set(key, bound);
      }
      bound.requests.inc();
      bound.duration.observe(Number(process.hrtime.bigint() - started) / 1e9);
    }
  };
}

/** The template of the route that answers this path and method (see requestMetrics). */
export function routeOf(ctx: Koa.Context, routers: Router[]): string {
  // A router that dispatched the request has already matched it: its `_matchedRoute` is the template
  // the loop below would find (the last route layer for the path and method), without matching again.
  // A request a router-level middleware answered (a 429) carries that middleware's pattern instead
  // (`/v1(?:\/|$)`); route templates never hold a parenthesis, so those fall through to the match below.
  const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  if (typeof matched === 'string' && !matched.includes('(')) return matched;
  for (const router of routers) {
    const route = router.match(ctx.path, ctx.method).pathAndMethod.filter((layer) => layer.methods.length > 0).at(-1);
    if (route && typeof route.path === 'string') return route.path;
  }
  if (typeof ctx.state.routeTemplate === 'string') return ctx.state.routeTemplate;
  if (ctx.path === '/dashboard' || ctx.path.startsWith('/dashboard/')) return '/dashboard';
  return 'unmatched';
}

/**
 * `GET /metrics`: the text exposition format. With a token (METRICS_TOKEN), only for `Authorization:
 * Bearer <token>` — the API's port is the public one, and the counters tell every tenant's volume — else
 * 401 as any other credential. Without one it is open: for a deployment whose proxy does not route it.
 */
export function serveMetrics(token: string | undefined): Koa.Middleware {
  const expected = token ? digest(`Bearer ${token}`) : undefined;
  return async (ctx) => {
    if (expected) {
      const given = ctx.get('Authorization');
      if (!given) throw new ApiError('missing_authorization');
      // Compared as digests: in constant time, whatever the lengths.
      if (!timingSafeEqual(digest(given), expected)) throw new ApiError('invalid_token');
    }
    ctx.type = apiRegistry.contentType;
    ctx.body = await apiRegistry.metrics();
  };
}

const digest = (text: string) => createHash('sha256').update(text).digest();
