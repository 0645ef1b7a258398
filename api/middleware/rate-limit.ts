import type Koa from 'koa';
import { BurstyRateLimiter, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { Principal } from '../auth/authenticate';
import { ApiError } from '../errors';
import { rateLimitRejections } from './metrics';

/** 429 `rate_limited`, to retry once `msBeforeNext` is over (whole seconds, at least 1), counted. */
function rateLimited(msBeforeNext: number, headers: Record<string, string> = {}): ApiError {
  rateLimitRejections.inc();
  const retryAfter = Math.max(1, Math.ceil(msBeforeNext / 1000));
  return new ApiError('rate_limited', undefined, { retry_after: retryAfter }, { ...headers, 'Retry-After': String(retryAfter) });
}

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
      throw rateLimited(rejected.msBeforeNext, { ...limit, 'X-RateLimit-Remaining': '0' });
    }
    const reserveLeft = reserve ? ((await reserve.get(key))?.remainingPoints ?? opts.burst) : 0;
    ctx.set({ ...limit, 'X-RateLimit-Remaining': String(res.remainingPoints + reserveLeft) });
    await next();
  };
}

/** The provider-webhook route's two budgets; each method throws 429 `rate_limited` when its budget is spent. */
export interface ProviderWebhookLimits {
  /** Before any work on a request: its source is refused while its failures or the config's budget there are spent. */
  admit(ip: string, configId: string): Promise<void>;
  /** A request refused (a bad signature, an unknown config, a bad body): counted against its source. */
  refused(ip: string): Promise<void>;
  /** A notification verified, counted against its config at its source before anything is done with it. */
  verified(ip: string, configId: string): Promise<void>;
}

/** Spends one point of `key`'s budget; 429 `rate_limited` (with when to retry) when it is spent. No limiter: no limit. */
async function consumeOrRefuse(limiter: RateLimiterMemory | undefined, key: string): Promise<void> {
  try {
    await limiter?.consume(key);
  } catch (rejected) {
    if (!(rejected instanceof RateLimiterRes)) throw rejected;
    throw rateLimited(rejected.msBeforeNext);
  }
}

/**
 * Limits on the processors' unauthenticated notification route (docs/production.md#rate-limits), in
 * memory per instance as the API's limit is. Refusals are counted per source IP and successes per config
 * and source apart, so a flood of bad signatures spends its own sender's budget, never the one the
 * processor's genuine notifications are counted against. A source past its budget is refused before its
 * body is read or its signature checked.
 */
export function providerWebhookLimits(opts: { failuresPerMinute: number; rps: number }): ProviderWebhookLimits {
  const failures = opts.failuresPerMinute > 0 ? new RateLimiterMemory({ keyPrefix: 'pwh_fail', points: opts.failuresPerMinute, duration: 60 }) : undefined;
  const successes = opts.rps > 0 ? new RateLimiterMemory({ keyPrefix: 'pwh_ok', points: opts.rps, duration: 1 }) : undefined;
  const spent = async (limiter: RateLimiterMemory | undefined, key: string) => {
    const res = limiter && (await limiter.get(key));
    if (res && res.remainingPoints <= 0) throw rateLimited(res.msBeforeNext);
  };
  return {
    async admit(ip, configId) {
      await spent(failures, ip);
      await spent(successes, `${configId}|${ip}`);
    },
    async refused(ip) {
      // The refusal is answered as it is; the count only decides the source's next requests.
      await failures?.penalty(ip);
    },
    verified: (ip, configId) => consumeOrRefuse(successes, `${configId}|${ip}`),
  };
}

/** The 3-D Secure return route's budgets (per source IP, per payment); `consume` throws 429 `rate_limited` when one is spent. */
export interface AuthenticationReturnLimits {
  consume(ip: string, paymentId: string): Promise<void>;
}

/**
 * Limits on the customer's unauthenticated return from 3-D Secure (docs/production.md#rate-limits), in
 * memory per instance as the provider webhooks' are: each request counts against its source IP and
 * against the payment it names, so neither a flood from one source nor one aimed at a payment from many
 * reaches Postgres or the payment's workflow. 0 turns either off.
 */
export function authenticationReturnLimits(opts: { perIpPerMinute: number; perPaymentPerMinute: number }): AuthenticationReturnLimits {
  const perIp = opts.perIpPerMinute > 0 ? new RateLimiterMemory({ keyPrefix: 'auth_return_ip', points: opts.perIpPerMinute, duration: 60 }) : undefined;
  const perPayment = opts.perPaymentPerMinute > 0 ? new RateLimiterMemory({ keyPrefix: 'auth_return_pay', points: opts.perPaymentPerMinute, duration: 60 }) : undefined;
  return {
    async consume(ip, paymentId) {
      await consumeOrRefuse(perIp, ip);
      await consumeOrRefuse(perPayment, paymentId);
    },
  };
}
