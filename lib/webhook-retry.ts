/**
 * The webhook retry rules (docs/webhooks.md#delivery-and-retries), as pure functions. Imported by the delivery workflow, so this
 * module stays free of Node built-ins, I/O and clocks: callers pass the time and the random source.
 */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `200ms`, `5s`, `5m`, `2h`, `1d`, `0` → milliseconds; anything else throws. */
export function parseDuration(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!match) throw new Error(`not a duration: "${text}" (use e.g. 500ms, 5s, 5m, 2h, 1d)`);
  const value = Number(match[1]);
  if (!match[2] && value !== 0) throw new Error(`a duration needs a unit: "${text}"`);
  return Math.round(value * UNIT_MS[match[2] ?? 'ms']);
}

/**
 * The delays between attempts after the first one, which is immediate (as Svix counts them): attempt 1
 * at once, attempt 2 after 5 s, …, attempt 10 after a further 24 h — about 3 days and 3 hours in all.
 */
export const DEFAULT_RETRY_SCHEDULE_MS: readonly number[] = ['5s', '5m', '30m', '2h', '5h', '10h', '14h', '20h', '24h'].map(parseDuration);

/** WEBHOOK_RETRY_SCHEDULE (`1s,2s,5s`): the delays after the first attempt; unset or blank → the default. */
export function parseRetrySchedule(text: string | undefined): number[] {
  if (text === undefined || text.trim() === '') return [...DEFAULT_RETRY_SCHEDULE_MS];
  const delays = text.split(',').map((part) => parseDuration(part));
  if (delays.length > 50) throw new Error('WEBHOOK_RETRY_SCHEDULE has more than 50 entries');
  return delays;
}

export const JITTER = 0.2;

/** A scheduled delay with ±20 % jitter; `random` is in [0, 1) (the workflow's deterministic Math.random). */
export function jittered(delayMs: number, random: number): number {
  return Math.round(delayMs * (1 - JITTER + 2 * JITTER * random));
}

/** The bounds `jittered` can produce, for tests and for reading histories. */
export function jitterBounds(delayMs: number): [number, number] {
  return [Math.round(delayMs * (1 - JITTER)), Math.round(delayMs * (1 + JITTER))];
}

/**
 * A `Retry-After` header (delta-seconds or an HTTP date) → milliseconds from `nowMs`, or null when absent
 * or unreadable. A date in the past is 0.
 */
export function parseRetryAfter(header: string | string[] | undefined, nowMs: number): number | null {
  const value = (Array.isArray(header) ? header[0] : header)?.trim();
  if (!value) return null;
  if (/^\d+$/.test(value)) return Number(value) * 1_000;
  if (!/[a-z]/i.test(value)) return null;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

/**
 * The wait before the next attempt: the scheduled (jittered) delay, moved later by a `Retry-After`
 * but never beyond twice the scheduled delay — a receiver may slow us down, not park the delivery.
 */
export function retryDelay(scheduledMs: number, retryAfterMs: number | null): number {
  if (retryAfterMs === null) return scheduledMs;
  return Math.min(Math.max(retryAfterMs, scheduledMs), 2 * scheduledMs);
}

export type ResponseClass = 'succeeded' | 'transient' | 'permanent' | 'gone';

/**
 * What one HTTP answer means (0 = no answer: network error or timeout). 2xx delivered; network
 * errors, 408, 429 and 5xx are worth retrying; 410 means the endpoint is gone (disable it); every other
 * answer (3xx — redirects are not followed —, 4xx, 1xx) will not get better by waiting.
 */
export function classifyResponse(statusCode: number): ResponseClass {
  if (statusCode >= 200 && statusCode < 300) return 'succeeded';
  if (statusCode === 0 || statusCode === 408 || statusCode === 429 || statusCode >= 500) return 'transient';
  if (statusCode === 410) return 'gone';
  return 'permanent';
}

/** An endpoint whose every attempt has failed for this long is disabled. */
export const ENDPOINT_FAILING_DISABLE_MS = 5 * 86_400_000;
