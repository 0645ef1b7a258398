import Koa from 'koa';
import Router from '@koa/router';
import type { ApiDeps } from './deps';
import { ApiError } from './errors';
import { requestContext } from './middleware/request-context';
import { errorHandler } from './middleware/errors';
import { jsonBody } from './middleware/body';
import { rateLimit } from './middleware/rate-limit';
import { requestMetrics, serveMetrics } from './middleware/metrics';
import { traceRequests } from './middleware/tracing';
import { currentTracing } from '../telemetry/tracing';
import { routeMiddleware, Route } from './route';
import { buildOpenApi } from './openapi';
import { ROUTES } from './routes';
import { serveDashboard } from './dashboard';
import { providerWebhooks } from './routes/provider-webhooks';
import { authenticationReturn } from './routes/authentication-return';

export interface AppOptions {
  /** Count and time requests for `/metrics` (default on; the bench turns it off to measure its cost). */
  metrics?: boolean;
}

export function createApp(deps: ApiDeps, routes: Route[] = ROUTES, options: AppOptions = {}): Koa {
  const app = new Koa({ proxy: process.env.TRUST_PROXY === 'true' });
  app.silent = true;
  const openapi = buildOpenApi(routes);

  const open = new Router();
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
  open.get('/metrics', serveMetrics);
  open.get('/v1/openapi.json', (ctx) => {
    ctx.body = openapi;
  });

  const v1 = new Router({ prefix: '/v1' });
  v1.use(async (ctx, next) => {
    ctx.state.principal = await deps.auth.authenticate(ctx.get('Authorization') || undefined, ctx.ip);
    await next();
  });
  v1.use(rateLimit(deps.config.rateLimit));
  // The Idempotency-Key is handled inside each route, once the route has admitted the credential.
  for (const route of routes) v1[route.method](route.path, routeMiddleware(route, deps));

  // Tracing, when on, wraps everything: the request's span is the root of the payment's trace.
  if (currentTracing()) app.use(traceRequests([open, v1]));
  if (options.metrics !== false) app.use(requestMetrics([open, v1]));
  app.use(requestContext());
  app.use(errorHandler());
  app.use(serveDashboard());
  // Processors post here without credentials: the signature is checked over the raw body, before any parsing.
  app.use(providerWebhooks(deps));
  // The customer's browser back from 3-D Secure (no credentials; GET, or POST with a form).
  app.use(authenticationReturn(deps));
  app.use(jsonBody());
  app.use(open.routes());
  app.use(v1.routes());
  app.use(methodNotAllowed(v1));
  return app;
}

/**
 * A known path asked with another method: 405 `method_not_allowed` with `Allow` listing the path's
 * methods (RFC 9110 requires it), in the error envelope. The router's own answer (405, or 501 for a
 * method it does not implement at all, such as TRACE) is only read for its Allow; OPTIONS keeps the
 * router's 200 with Allow. The routers fill `ctx.matched` together, so the open routes count too.
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
