import type Koa from 'koa';
import { logger } from '../../lib/logger';
import { ApiError, errorBody } from '../errors';
import { temporalUnavailableError } from '../../workflows/client';

/**
 * Postgres out of reach or out of room: the connection refused, cut or timed out, the server shutting
 * down (57P0x), a connection failure (08xxx), or every connection slot taken (53300 too_many_connections).
 */
const PG_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08006', '53300']);

/** Maps anything thrown below to an ApiError; unknown errors become a logged 500 with no internals. */
export function toApiError(err: unknown, requestId?: string): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { status?: number; type?: string; code?: string; name?: string; message?: string; details?: unknown };
  if (e?.type === 'entity.too.large' || e?.status === 413) return new ApiError('payload_too_large');
  if (e?.type === 'entity.parse.failed' || err instanceof SyntaxError || (e?.status === 400 && 'body' in (e as object))) return new ApiError('invalid_json');
  if (e?.status === 415) return new ApiError('unsupported_media_type');
  if (e?.status === 400 || e?.type === 'request.aborted' || e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new ApiError('validation_failed', 'The request body could not be read.');
  }
  if ((e?.code && PG_UNAVAILABLE.has(e.code)) || /Knex: Timeout acquiring a connection|Connection terminated/i.test(e?.message ?? '')) {
    return new ApiError('database_unavailable', undefined, {}, { 'Retry-After': '5' });
  }
  const temporalDown = temporalUnavailableError(err);
  if (temporalDown) return temporalDown;
  logger.error({ err, request_id: requestId }, 'unhandled error');
  return new ApiError('internal_error');
}

/** The one place errors become responses. */
export function errorHandler(): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new ApiError('route_not_found');
    } catch (err) {
      const apiError = toApiError(err, ctx.state.requestId);
      ctx.state.errorReason = apiError.reason;
      ctx.status = apiError.status;
      ctx.set(apiError.headers);
      ctx.body = errorBody(apiError);
    }
  };
}
