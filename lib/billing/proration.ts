/**
 * Proration (docs/billing.md#proration): when items change mid-period, the unused time of the old items
 * is credited and the rest of the period of the new items charged, as lines for the next invoice. Pure;
 * amounts are rounded to the minor unit per line, as Stripe rounds each proration line.
 */
import type { InvoiceLine, SubscriptionItem } from './types';

export interface PricedItem extends SubscriptionItem { unit_amount: number; product_name: string }

/** What is left of the period at `at`, as a fraction of it (0 at or past its end). */
export function remainingShare(periodStart: number, periodEnd: number, at: number): number {
  if (at >= periodEnd) return 0;
  return (periodEnd - Math.max(at, periodStart)) / (periodEnd - periodStart);
}

/** One item's line for part of a period: negative (a credit) for unused time given back. */
function prorationLine(item: PricedItem, share: number, sign: 1 | -1, at: number, periodEnd: number): InvoiceLine {
  const whole = item.unit_amount * item.quantity;
  return {
    description: `${sign < 0 ? 'Unused time on' : 'Remaining time on'} ${item.quantity} × ${item.product_name}`,
    price_id: item.price_id, quantity: item.quantity, amount: sign * Math.round(whole * share),
    period_start: new Date(at).toISOString(), period_end: new Date(periodEnd).toISOString(), proration: true,
  };
}

/**
 * The proration lines of a change from `before` to `after` at `at`: the items that changed (price or
 * quantity), were added or removed; an item the same before and after yields nothing.
 */
export function prorate(before: PricedItem[], after: PricedItem[], periodStart: number, periodEnd: number, at: number): InvoiceLine[] {
  const share = remainingShare(periodStart, periodEnd, at);
  if (share === 0) return [];
  const same = (a: PricedItem, b: PricedItem) => a.id === b.id && a.price_id === b.price_id && a.quantity === b.quantity;
  const credits = before.filter((old) => !after.some((now) => same(old, now))).map((old) => prorationLine(old, share, -1, at, periodEnd));
  const charges = after.filter((now) => !before.some((old) => same(old, now))).map((now) => prorationLine(now, share, 1, at, periodEnd));
  return [...credits, ...charges].filter((line) => line.amount !== 0);
}

/** A period's line for one item, billed in advance. */
export function periodLine(item: PricedItem, periodStart: number, periodEnd: number): InvoiceLine {
  return {
    description: `${item.quantity} × ${item.product_name}`, price_id: item.price_id, quantity: item.quantity, amount: item.unit_amount * item.quantity,
    period_start: new Date(periodStart).toISOString(), period_end: new Date(periodEnd).toISOString(), proration: false,
  };
}

/** An invoice's total from its lines; what is due never goes below zero (a credit larger than the charge is not paid out). */
export function totals(lines: InvoiceLine[]): { subtotal: number; amountDue: number } {
  const subtotal = lines.reduce((sum, line) => sum + line.amount, 0);
  return { subtotal, amountDue: Math.max(0, subtotal) };
}
