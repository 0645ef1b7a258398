import Koa from 'koa';
import Router from '@koa/router';
import type { ApiDeps } from './deps';
import { ApiError } from './errors';
import { requestContext } from './middleware/request-context';
import { errorHandler } from './middleware/errors';
import { jsonBody } from './middleware/body';
import { rateLimit } from './middleware/rate-limit';
import { routeMiddleware, Route } from './route';
import { buildOpenApi } from './openapi';
import { ROUTES } from './routes';
import { serveDashboard } from './dashboard';

export function createApp(deps: ApiDeps, routes: Route[] = ROUTES): Koa {
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

  app.use(requestContext());
  app.use(errorHandler());
  app.use(serveDashboard());
  app.use(jsonBody());
  app.use(open.routes());
  app.use(v1.routes());
  app.use(v1.allowedMethods({ throw: true, methodNotAllowed: () => new ApiError('method_not_allowed'), notImplemented: () => new ApiError('method_not_allowed') }));
  return app;
}
