import type Koa from 'koa';
import coBody from 'co-body';
import { ApiError } from '../errors';

export const BODY_LIMIT = '1mb';

/** Parses JSON bodies (≤ 1 MiB). A missing body counts as `{}`; anything not JSON is refused. */
export function jsonBody(): Koa.Middleware {
  return async (ctx, next) => {
    if (['POST', 'PUT', 'PATCH'].includes(ctx.method)) {
      const length = Number(ctx.get('Content-Length') || 0);
      const chunked = /chunked/i.test(ctx.get('Transfer-Encoding'));
      if (length === 0 && !chunked) {
        ctx.request.body = {};
      } else {
        if (!ctx.is('application/json', '+json')) throw new ApiError('unsupported_media_type');
        ctx.request.body = await coBody.json(ctx, { limit: BODY_LIMIT, strict: true });
      }
    }
    await next();
  };
}

declare module 'koa' {
  interface Request { body?: unknown }
}
