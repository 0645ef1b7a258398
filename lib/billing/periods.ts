/**
 * Billing periods (docs/billing.md#periods): pure, so the workflow, the activities and the tests share
 * them. A period's end is computed from the subscription's anchor, never from the previous end, so a
 * monthly subscription anchored on the 31st bills on the 30th of April and the 31st of May again, as
 * Stripe does, instead of drifting to the 28th for good after February.
 */
import type { Interval } from './types';

const DAY_MS = 86_400_000;

/** The anchor plus `n` intervals of `count` each, in UTC; a month-end anchor clamps to shorter months. */
export function addIntervals(anchor: number, interval: Interval, count: number, n: number): number {
  const steps = count * n;
  if (interval === 'day') return anchor + steps * DAY_MS;
  if (interval === 'week') return anchor + steps * 7 * DAY_MS;
  const months = interval === 'year' ? steps * 12 : steps;
  const date = new Date(anchor);
  const year = date.getUTCFullYear() + Math.floor((date.getUTCMonth() + months) / 12);
  const month = (((date.getUTCMonth() + months) % 12) + 12) % 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(year, month, Math.min(date.getUTCDate(), lastDay), date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds(), date.getUTCMilliseconds());
}

/** The end of the period that starts at `start`: the first anchor step after it. */
export function periodEndAfter(anchor: number, interval: Interval, count: number, start: number): number {
  // Estimate the step, then walk: months differ in length, so the estimate may be one off either way.
  const approx = { day: DAY_MS, week: 7 * DAY_MS, month: 28 * DAY_MS, year: 365 * DAY_MS }[interval] * count;
  let n = Math.max(1, Math.floor((start - anchor) / approx) - 1);
  while (n > 1 && addIntervals(anchor, interval, count, n - 1) > start) n -= 1;
  while (addIntervals(anchor, interval, count, n) <= start) n += 1;
  return addIntervals(anchor, interval, count, n);
}

/** When a notice goes before a moment (invoice.upcoming, subscription.trial_will_end): three days, as Stripe sends them. */
export const NOTICE_BEFORE_MS = 3 * DAY_MS;

/** How long a subscription whose first invoice is unpaid stays INCOMPLETE before it expires: 23 hours. */
export const INCOMPLETE_EXPIRY_MS = 23 * 3_600_000;

export const daysToMs = (days: number) => days * DAY_MS;
