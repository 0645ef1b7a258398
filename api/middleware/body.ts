import type Koa from 'koa';
import coBody from 'co-body';
import { ApiError } from '../errors';
import { MAX_BODY_DEPTH } from '../../resources/schemas';

export const BODY_LIMIT = '1mb';

/** Parses JSON bodies (≤ 1 MiB). A missing body counts as `{}`; anything not JSON is refused. */
export function jsonBody(): Koa.Middleware {
  // Other methods pass straight through, without a promise of this middleware's own.
  return (ctx, next) => (BODY_METHODS.has(ctx.method) ? parse(ctx, next) : next());
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

async function parse(ctx: Koa.Context, next: Koa.Next): Promise<void> {
  const length = Number(ctx.get('Content-Length') || 0);
  const chunked = /chunked/i.test(ctx.get('Transfer-Encoding'));
  if (length === 0 && !chunked) {
    ctx.request.body = {};
  } else {
    if (!ctx.is('application/json', '+json')) throw new ApiError('unsupported_media_type');
    ctx.request.body = await coBody.json(ctx, { limit: BODY_LIMIT, strict: true }).catch((err: unknown) => {
      if (!undecodable(err)) throw err;
      throw ApiError.validation([{ path: 'body', message: `could not be decoded as its Content-Encoding (${ctx.get('Content-Encoding')}) says` }]);
    });
    // Before anything walks the body recursively (the Idempotency-Key fingerprint, validation): a
    // body nested thousands deep would overflow the stack there and answer 500.
    if (deeperThan(ctx.request.body, MAX_BODY_DEPTH)) {
      throw ApiError.validation([{ path: 'body', message: `must not nest objects and arrays more than ${MAX_BODY_DEPTH} levels deep` }]);
    }
  }
  await next();
}

/**
 * zlib's and brotli's own failures: a body that is not in the coding its Content-Encoding names, or is
 * cut short (`Z_DATA_ERROR`, `Z_BUF_ERROR`, brotli's `ERR__ERROR_FORMAT_…`). co-body passes them on as
 * they are, with nothing that says they are the client's.
 */
const undecodable = (err: unknown): boolean => /^(Z_|ERR__ERROR_)/.test(String((err as { code?: unknown } | null)?.code ?? ''));

/** Whether objects and arrays nest more than `max` levels (the outermost is level 1); iterative. */
function deeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth > max) return true;
    for (const child of Object.values(item)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}

declare module 'koa' {
  interface Request { body?: unknown }
}
