import Koa from 'koa';
import Router from '@koa/router';
import type { ApiDeps } from './deps';
import { ApiError } from './errors';
import { requestContext } from './middleware/request-context';
import { errorHandler } from './middleware/errors';
import { jsonBody } from './middleware/body';
import { rateLimit } from './middleware/rate-limit';
import { requestMetrics, serveMetrics } from './middleware/metrics';
import { continueCallerTrace, traceRequests } from './middleware/tracing';
import { currentTracing } from '../telemetry/tracing';
import { routeMiddleware, Route } from './route';
import { buildOpenApi } from './openapi';
import { ROUTES } from './routes';
import { serveDashboard } from './dashboard';
import { providerWebhooks } from './routes/provider-webhooks';
import { authenticationReturn } from './routes/authentication-return';
import { paymentLinkPage } from './routes/payment-link-page';
import { checkoutPages } from './checkout-page';

export interface AppOptions {
  /** Count and time requests for `/metrics` (default on; the bench turns it off to measure its cost). */
  metrics?: boolean;
  /** Log one line per request at `info` (default on, following LOG_LEVEL; the bench turns it off to measure its cost). */
  requestLog?: boolean;
}

export function createApp(deps: ApiDeps, routes: Route[] = ROUTES, options: AppOptions = {}): Koa {
  const app = new Koa({ proxy: process.env.TRUST_PROXY === 'true' });
  app.silent = true;
  const openapi = buildOpenApi(routes);

  // Paths are matched with their case (a router's default is without, which its prefix middleware
  // did not follow: /V1/… reached a route without authentication and answered 500).
  const open = new Router({ sensitive: true });
  open.get('/healthz', (ctx) => {
    ctx.body = { message: 'ok', success: true, data: { status: 'ok' } };
  });
  open.get('/readyz', async (ctx) => {
    const [database, temporal] = await Promise.all([
      deps.db.raw('SELECT 1').then(() => true, () => false),
      deps.temporal().then((c) => c.connection.workflowService.getSystemInfo({})).then(() => true, () => false),
    ]);
    const ready = database && temporal;
    ctx.status = ready ? 200 : 503;
    ctx.body = ready
      ? { message: 'ready', success: true, data: { database, temporal } }
      : { message: 'not ready', success: false, error: { code: 503, message: 'not ready', details: { reason: database ? 'temporal_unavailable' : 'database_unavailable', database, temporal } } };
  });
  open.get('/metrics', serveMetrics(deps.config.metricsToken));
  open.get('/v1/openapi.json', (ctx) => {
    ctx.body = openapi;
  });

  // One router per resource (the path's first segment below /v1), chosen by `dispatch`: a request is
  // matched against its resource's few routes, not all of them, and the other routers never run.
  const authenticate: Koa.Middleware = async (ctx, next) => {
    ctx.state.principal = await deps.auth.authenticate(ctx.get('Authorization') || undefined, ctx.ip);
    // A verified caller's trace context is honoured from here on (api/middleware/tracing.ts).
    await continueCallerTrace(ctx, next);
  };
  const limit = rateLimit(deps.config.rateLimit);
  const v1 = new Map<string, Router>();
  for (const route of routes) {
    const segment = resourceOf(route.path);
    let router = v1.get(segment);
    if (!router) {
      router = new Router({ prefix: '/v1', sensitive: true });
      router.use(authenticate);
      router.use(limit);
      v1.set(segment, router);
    }
    // The Idempotency-Key is handled inside each route, once the route has admitted the credential.
    router[route.method](route.path, routeMiddleware(route, deps));
  }
  const routers = [open, ...v1.values()];

  // Tracing, when on, wraps everything: the request's span is the root of the payment's trace.
  if (currentTracing()) app.use(traceRequests(routers));
  if (options.metrics !== false) app.use(requestMetrics(routers));
  app.use(requestContext({ log: options.requestLog !== false }));
  app.use(errorHandler());
  app.use(serveDashboard());
  // Processors post here without credentials: the signature is checked over the raw body, before any parsing.
  app.use(providerWebhooks(deps));
  // The customer's browser back from 3-D Secure (no credentials; GET, or POST with a form).
  app.use(authenticationReturn(deps));
  // The hosted checkout page and the card fields' files (/checkout/…, /js/v1/…); its form is not JSON.
  app.use(checkoutPages(deps));
  // Payment links' public URL (/pay/{id}): each visit opens a new checkout session.
  app.use(paymentLinkPage(deps));
  app.use(jsonBody());
  app.use(dispatch(open, v1));
  app.use(methodNotAllowed(open));
  return app;
}

/** `/payments/:id/refunds` → `payments`: the resource a route belongs to (its router). */
function resourceOf(path: string): string {
  const segment = path.split('/')[1] ?? '';
  if (!segment || segment.startsWith(':')) throw new Error(`${path}: a route's path starts with its resource's name`);
  return segment;
}

/**
 * Hands a request to the router of its resource (`/v1/<resource>/…`), or to the open routes (health,
 * metrics, the OpenAPI document) when no resource router has that name.
 */
function dispatch(open: Router, v1: Map<string, Router>): Koa.Middleware {
  // Koa runs router middleware as any other (app.use takes them so).
  const openRoutes = open.routes() as unknown as Koa.Middleware;
  const resources = new Map([...v1].map(([segment, router]) => [segment, router.routes() as unknown as Koa.Middleware]));
  return (ctx, next) => {
    const path = ctx.path;
    if (path.startsWith('/v1/')) {
      const end = path.indexOf('/', 4);
      const resource = resources.get(path.slice(4, end === -1 ? undefined : end));
      if (resource) return resource(ctx, next);
    }
    return openRoutes(ctx, next);
  };
}

/**
 * A known path asked with another method: 405 `method_not_allowed` with `Allow` listing the path's
 * methods (RFC 9110 requires it), in the error envelope. The router's own answer (405, or 501 for a
 * method it does not implement at all, such as TRACE) is only read for its Allow; OPTIONS keeps the
 * router's 200 with Allow. Whichever router ran filled `ctx.matched`; any router's allowedMethods reads it.
 */
function methodNotAllowed(router: Router): Koa.Middleware {
  const allowedMethods = router.allowedMethods() as unknown as Koa.Middleware;
  return async (ctx, next) => {
    await allowedMethods(ctx, next);
    if (ctx.status !== 405 && ctx.status !== 501) return;
    const allow = ctx.response.get('Allow');
    if (allow) throw new ApiError('method_not_allowed', undefined, {}, { Allow: allow });
    // No route has this path: the 404 route_not_found the error handler gives any unknown path.
    ctx.remove('Allow');
    ctx.status = 404;
  };
}
