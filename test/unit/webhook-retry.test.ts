import { describe, expect, it } from 'vitest';
import {
  classifyResponse, DEFAULT_RETRY_SCHEDULE_MS, jitterBounds, jittered, parseDuration, parseRetryAfter, parseRetrySchedule, retryDelay,
} from '../../lib/webhook-retry';

const S = 1_000;
const M = 60 * S;
const H = 60 * M;

describe('webhook retry rules', () => {
  it.each([
    ['200ms', 200], ['5s', 5 * S], ['5m', 5 * M], ['2h', 2 * H], ['1d', 24 * H], ['0', 0], [' 1.5s ', 1_500],
  ])('parses the duration %s', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '5', 'abc', '5x', '-1s', '1s2s'])('refuses the duration "%s"', (text) => expect(() => parseDuration(text)).toThrow());

  it('has the documented schedule after the immediate first attempt: 5s, 5m, 30m, 2h, 5h, 10h, 14h, 20h, 24h (≈ 3 days)', () => {
    expect(DEFAULT_RETRY_SCHEDULE_MS).toEqual([5 * S, 5 * M, 30 * M, 2 * H, 5 * H, 10 * H, 14 * H, 20 * H, 24 * H]);
    const total = DEFAULT_RETRY_SCHEDULE_MS.reduce((a, b) => a + b, 0);
    expect(total / H).toBeCloseTo(75.58, 1);
  });

  it.each([
    [undefined, DEFAULT_RETRY_SCHEDULE_MS],
    ['', DEFAULT_RETRY_SCHEDULE_MS],
    ['1s,2s,5s', [S, 2 * S, 5 * S]],
    ['200ms, 400ms ,800ms', [200, 400, 800]],
    ['0,1m', [0, M]],
  ])('WEBHOOK_RETRY_SCHEDULE=%j overrides the schedule', (text, expected) => expect(parseRetrySchedule(text)).toEqual(expected));

  it('refuses a malformed WEBHOOK_RETRY_SCHEDULE', () => {
    expect(() => parseRetrySchedule('1s,,2s')).toThrow();
    expect(() => parseRetrySchedule(Array(51).fill('1s').join(','))).toThrow(/50/);
  });

  it.each([
    [5 * S, 0, 4 * S], [5 * S, 0.5, 5 * S], [5 * S, 0.999999, 6 * S], [24 * H, 0, 19.2 * H], [24 * H, 1, 28.8 * H], [0, 0.7, 0],
  ])('jitters %i ms with random %f to %i ms (±20 %%)', (delay, random, expected) => {
    expect(jittered(delay, random)).toBe(Math.round(expected));
  });

  it('keeps every jittered delay within ±20 %', () => {
    for (const delay of DEFAULT_RETRY_SCHEDULE_MS) {
      const [lo, hi] = jitterBounds(delay);
      for (let i = 0; i < 200; i += 1) {
        const d = jittered(delay, Math.random());
        expect(d).toBeGreaterThanOrEqual(lo);
        expect(d).toBeLessThanOrEqual(hi);
      }
    }
  });

  const NOW = Date.parse('2026-01-01T00:00:00Z');
  it.each([
    [undefined, null],
    ['', null],
    ['120', 120 * S],
    ['0', 0],
    [['30', '60'], 30 * S],
    ['Thu, 01 Jan 2026 00:01:00 GMT', 60 * S],
    ['Wed, 31 Dec 2025 23:00:00 GMT', 0],
    ['-5', null],
    ['1.5', null],
    ['soon', null],
  ])('reads Retry-After %j as %j ms', (header, expected) => expect(parseRetryAfter(header as any, NOW)).toBe(expected));

  it.each([
    ['no Retry-After', 10 * S, null, 10 * S],
    ['a shorter Retry-After (never earlier than scheduled)', 10 * S, 2 * S, 10 * S],
    ['a Retry-After within the window', 10 * S, 15 * S, 15 * S],
    ['a Retry-After beyond twice the schedule (clamped)', 10 * S, 3_600 * S, 20 * S],
    ['Retry-After 0', 10 * S, 0, 10 * S],
  ])('waits the right time with %s', (_what, scheduled, retryAfter, expected) => {
    expect(retryDelay(scheduled, retryAfter)).toBe(expected);
  });

  it.each([
    [200, 'succeeded'], [204, 'succeeded'], [299, 'succeeded'],
    [0, 'transient'], [408, 'transient'], [429, 'transient'], [500, 'transient'], [502, 'transient'], [503, 'transient'], [599, 'transient'],
    [410, 'gone'],
    [301, 'permanent'], [302, 'permanent'], [307, 'permanent'], [400, 'permanent'], [401, 'permanent'], [403, 'permanent'],
    [404, 'permanent'], [413, 'permanent'], [422, 'permanent'], [101, 'permanent'],
  ])('classifies HTTP %i as %s', (status, expected) => expect(classifyResponse(status)).toBe(expected));
});
