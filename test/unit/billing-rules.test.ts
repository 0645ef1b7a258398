import { describe, expect, it } from 'vitest';
import { addIntervals, periodEndAfter } from '../../lib/billing/periods';
import { prorate, remainingShare, totals, type PricedItem } from '../../lib/billing/proration';
import { DEFAULT_BILLING_SETTINGS, nextDunningStep, parseBillingSettings } from '../../lib/billing/dunning';
import { nextDue } from '../../workflows/billing/due';
import type { SubscriptionClock } from '../../contracts/billing';

const at = (iso: string) => Date.parse(iso);
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe('billing periods', () => {
  it('steps months from the anchor, clamping to short months and coming back to the 31st', () => {
    const anchor = at('2026-01-31T12:00:00Z');
    expect([1, 2, 3, 4, 13].map((n) => day(addIntervals(anchor, 'month', 1, n)))).toEqual(['2026-02-28', '2026-03-31', '2026-04-30', '2026-05-31', '2027-02-28']);
    expect(day(addIntervals(at('2024-02-29T00:00:00Z'), 'year', 1, 1))).toBe('2025-02-28');
    expect(day(addIntervals(anchor, 'week', 2, 1))).toBe('2026-02-14');
    expect(day(addIntervals(anchor, 'day', 1, 30))).toBe('2026-03-02');
  });

  it('finds the end of the period that starts at a renewal, however far from the anchor', () => {
    const anchor = at('2026-01-31T12:00:00Z');
    expect(day(periodEndAfter(anchor, 'month', 1, at('2026-02-28T12:00:00Z')))).toBe('2026-03-31');
    expect(day(periodEndAfter(anchor, 'month', 1, at('2036-01-31T12:00:00Z')))).toBe('2036-02-29');
    expect(day(periodEndAfter(anchor, 'month', 3, anchor))).toBe('2026-04-30');
  });
});

const item = (id: string, price: string, unit: number, quantity = 1): PricedItem => ({ id, price_id: price, quantity, unit_amount: unit, product_name: price });

describe('proration', () => {
  const start = at('2026-04-01T00:00:00Z');
  const end = at('2026-05-01T00:00:00Z');
  it('credits the unused time of what changed and charges the rest of the period of what replaced it', () => {
    const lines = prorate([item('si_1', 'basic', 1000)], [item('si_1', 'pro', 3000)], start, end, at('2026-04-16T00:00:00Z'));
    expect(lines.map((l) => [l.price_id, l.amount])).toEqual([['basic', -500], ['pro', 1500]]);
    expect(totals([...lines]).subtotal).toBe(1000);
  });
  it('leaves unchanged items alone, prorates a quantity change, and bills nothing at the period end', () => {
    const before = [item('si_1', 'seat', 1000, 2), item('si_2', 'addon', 500)];
    const after = [item('si_1', 'seat', 1000, 3), item('si_2', 'addon', 500)];
    expect(prorate(before, after, start, end, at('2026-04-16T00:00:00Z')).map((l) => l.amount)).toEqual([-1000, 1500]);
    expect(prorate(before, after, start, end, end)).toEqual([]);
    expect(remainingShare(start, end, start - 1000)).toBe(1);
  });
  it('never asks for less than nothing', () => {
    expect(totals([{ ...prorate([item('si_1', 'pro', 3000)], [], start, end, at('2026-04-21T00:00:00Z'))[0] }])).toEqual({ subtotal: -1000, amountDue: 0 });
  });
});

describe('dunning', () => {
  const failedAt = at('2026-03-01T00:00:00Z');
  it('retries on days 1, 3, 5 and 7 after the first failure, then stops', () => {
    const steps = [1, 2, 3, 4, 5].map((n) => nextDunningStep(DEFAULT_BILLING_SETTINGS, failedAt, n, 'insufficient_funds'));
    expect(steps.slice(0, 4).map((s) => ('retryAt' in s ? day(s.retryAt) : s))).toEqual(['2026-03-02', '2026-03-04', '2026-03-06', '2026-03-08']);
    expect(steps[4]).toEqual({ exhausted: true, reason: 'retries_exhausted' });
  });
  it('stops at once on a decline no retry changes', () => {
    for (const code of ['stolen_card', 'lost_card', 'fraudulent', 'invalid_number']) {
      expect(nextDunningStep(DEFAULT_BILLING_SETTINGS, failedAt, 1, code)).toEqual({ exhausted: true, reason: 'final_decline' });
    }
    expect('retryAt' in nextDunningStep(DEFAULT_BILLING_SETTINGS, failedAt, 1, 'do_not_honor')).toBe(true);
  });
  it('reads the account setting, falling back to the defaults', () => {
    expect(parseBillingSettings(JSON.stringify({ retry_days: [2], when_exhausted: 'CANCELED' }))).toEqual({ retry_days: [2], when_exhausted: 'CANCELED' });
    expect(parseBillingSettings('not json')).toEqual(DEFAULT_BILLING_SETTINGS);
  });
});

describe('what a subscription does next', () => {
  const base: SubscriptionClock = {
    status: 'ACTIVE', currentPeriodEnd: at('2026-03-01T00:00:00Z'), trialEnd: null, cancelAtPeriodEnd: false, paused: false, resumesAt: null,
    createdAt: at('2026-02-01T00:00:00Z'), testClockId: null, collecting: null, noticesSent: [],
  };
  it('announces a renewal three days before it, then renews', () => {
    expect(nextDue(base)).toEqual({ kind: 'notice', at: at('2026-02-26T00:00:00Z'), notice: 'invoice.upcoming' });
    expect(nextDue({ ...base, noticesSent: ['invoice.upcoming'] })).toEqual({ kind: 'renew', at: base.currentPeriodEnd });
  });
  it('takes a dunning retry due before the renewal first, and waits for a payment under way', () => {
    const collecting = { invoiceId: 'in_1', attemptCount: 1, nextAttemptAt: at('2026-02-10T00:00:00Z'), paymentId: 'pay_1', waiting: false };
    expect(nextDue({ ...base, status: 'PAST_DUE', collecting })?.kind).toBe('pay');
    expect(nextDue({ ...base, status: 'PAST_DUE', noticesSent: ['invoice.upcoming'], collecting: { ...collecting, nextAttemptAt: null, waiting: true } })?.kind).toBe('renew');
  });
  it('expires an incomplete subscription 23 hours after it was made', () => {
    expect(nextDue({ ...base, status: 'INCOMPLETE' })).toEqual({ kind: 'expire', at: base.createdAt + 23 * 3_600_000 });
  });
});
