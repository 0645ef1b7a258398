import type { Knex } from 'knex';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { Config } from '../../lib/config';
import { ApiError } from '../errors';

/**
 * Decline budgets of client-side confirmations (a publishable key, the hosted page, the card fields; see
 * docs/security.md#21-a-publishable-key-is-no-card-testing-oracle): declines per card fingerprint an hour,
 * per client IP and per publishable key in 10 minutes. Past one, a confirm is refused 429
 * `too_many_declines` before any processor is called. The counters live in Postgres
 * (`core.checkout_decline_counts`, migration 020), so every API process spends the same budgets; the
 * per-credential request limit stays in memory (rate-limit.ts).
 *
 * Each budget is an account's: a card or an IP is counted per merchant, so one merchant's traffic (or the
 * sandbox test cards every merchant's developers share) never spends another's.
 */

/** Whose budgets a client-side confirm spends. */
export interface DeclineBudgets {
  accountId: string;
  /** The card's keyed fingerprint (lib/vault.ts), computed before the card is vaulted. */
  fingerprint: string;
  ip: string;
  /** The publishable key, when one confirms (the hosted page has none). */
  publishableKeyId?: string;
}

/** The points a confirm holds while it runs: given back unless it declined. */
export interface HeldDeclines {
  settle(declined: boolean): Promise<void>;
}

export interface DeclineLimits {
  /**
   * Holds one decline of each budget for a confirm about to run, so that confirms running side by side
   * cannot overshoot a budget; 429 `too_many_declines` (holding nothing) when one is spent.
   */
  hold(budgets: DeclineBudgets): Promise<HeldDeclines>;
}

/** The table every budget counts in (rate-limiter-flexible's RateLimiterPostgres layout). */
const TABLE = { schemaName: 'core', tableName: 'checkout_decline_counts' };

interface Budget { limiter: RateLimiterPostgres; key: (b: DeclineBudgets) => string | undefined }

function limiter(db: Knex, keyPrefix: string, points: number, duration: number, clearExpired: boolean): RateLimiterPostgres | undefined {
  if (points <= 0) return undefined;
  return new RateLimiterPostgres({
    storeClient: db, storeType: 'knex', ...TABLE, tableCreated: true, keyPrefix, points, duration,
    // One limiter of the three deletes the table's expired rows (every 5 minutes); they share the table.
    clearExpiredByTimeout: clearExpired,
  });
}

/** The budgets `limits` turn on (0 = off), each spent by the key its confirm gives it. */
function budgetsOf(db: Knex, limits: Config['checkoutDeclineLimits']): Budget[] {
  const budgets: (Budget | undefined)[] = [
    wrap(limiter(db, 'card', limits.perCardPerHour, 3600, true), (b) => `${b.accountId}:${b.fingerprint}`),
    wrap(limiter(db, 'ip', limits.perIpPer10Min, 600, limits.perCardPerHour <= 0), (b) => `${b.accountId}:${b.ip}`),
    wrap(limiter(db, 'key', limits.perKeyPer10Min, 600, limits.perCardPerHour <= 0 && limits.perIpPer10Min <= 0), (b) => b.publishableKeyId),
  ];
  return budgets.filter((b): b is Budget => b !== undefined);
}

function wrap(l: RateLimiterPostgres | undefined, key: Budget['key']): Budget | undefined {
  return l && { limiter: l, key };
}

/** 429 `too_many_declines`, to retry once the spent budget's window is over (whole seconds, at least 1). */
function tooManyDeclines(msBeforeNext: number): ApiError {
  const retryAfter = Math.max(1, Math.ceil(msBeforeNext / 1000));
  return new ApiError('too_many_declines', undefined, { retry_after: retryAfter }, { 'Retry-After': String(retryAfter) });
}

/** Gives back the points `held` took (a confirm that did not decline, or one refused before it ran). */
async function giveBack(held: { limiter: RateLimiterPostgres; key: string }[]): Promise<void> {
  await Promise.all(held.map(({ limiter: l, key }) => l.reward(key, 1)));
}

export function createDeclineLimits(db: Knex, limits: Config['checkoutDeclineLimits']): DeclineLimits {
  const budgets = budgetsOf(db, limits);
  return {
    async hold(of) {
      const held: { limiter: RateLimiterPostgres; key: string }[] = [];
      for (const budget of budgets) {
        const key = budget.key(of);
        if (key === undefined) continue;
        try {
          await budget.limiter.consume(key, 1);
          held.push({ limiter: budget.limiter, key });
        } catch (rejected) {
          // A refused consume counted its point too: every point this confirm took goes back.
          if (rejected instanceof RateLimiterRes) await giveBack([...held, { limiter: budget.limiter, key }]);
          else await giveBack(held).catch(() => undefined);
          throw rejected instanceof RateLimiterRes ? tooManyDeclines(rejected.msBeforeNext) : rejected;
        }
      }
      return { settle: (declined) => (declined ? Promise.resolve() : giveBack(held)) };
    },
  };
}
