import type Koa from 'koa';
import { BurstyRateLimiter, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Principal } from '../auth/authenticate';
import { ApiError } from '../errors';
import { rateLimitRejections } from './metrics';

/** How long the burst reserve takes to refill (docs/production.md#rate-limits). */
const BURST_WINDOW_SECONDS = 60;

/** The credential a request is counted against: the API key, or the JWT user. */
export function rateLimitKey(principal: Principal): string {
  return principal.kind === 'api_key' ? `key:${principal.keyId}` : `user:${principal.userId}`;
}

/**
 * Per-credential rate limit on /v1, after authentication (docs/production.md#rate-limits): `rps` requests per
 * second, plus a reserve of `burst` requests per minute above that. In memory, per API instance.
 * Over it → 429 `rate_limited` with `Retry-After`; every counted response carries X-RateLimit-*.
 */
export function rateLimit(opts: { rps: number; burst: number }): Koa.Middleware {
  if (opts.rps <= 0) return (_ctx, next) => next();
  const sustained = new RateLimiterMemory({ keyPrefix: 'rps', points: opts.rps, duration: 1 });
  const reserve = opts.burst > 0 ? new RateLimiterMemory({ keyPrefix: 'burst', points: opts.burst, duration: BURST_WINDOW_SECONDS }) : undefined;
  const limiter = reserve ? new BurstyRateLimiter(sustained, reserve) : sustained;

  return async (ctx, next) => {
    const key = rateLimitKey(ctx.state.principal as Principal);
    const limit = { 'X-RateLimit-Limit': String(opts.rps) };
    let res: RateLimiterRes;
    try {
      res = await limiter.consume(key);
    } catch (rejected) {
      if (!(rejected instanceof RateLimiterRes)) throw rejected;
      rateLimitRejections.inc();
      const retryAfter = Math.max(1, Math.ceil(rejected.msBeforeNext / 1000));
      throw new ApiError('rate_limited', undefined, { retry_after: retryAfter },
        { ...limit, 'X-RateLimit-Remaining': '0', 'Retry-After': String(retryAfter) });
    }
    const reserveLeft = reserve ? ((await reserve.get(key))?.remainingPoints ?? opts.burst) : 0;
    ctx.set({ ...limit, 'X-RateLimit-Remaining': String(res.remainingPoints + reserveLeft) });
    await next();
  };
}
