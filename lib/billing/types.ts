/** The shapes billing's rules work on (docs/billing.md); contracts/billing.ts re-exports them for both sides of Temporal. */

export const INTERVALS = ['day', 'week', 'month', 'year'] as const;
export type Interval = typeof INTERVALS[number];

/** One item of a subscription: a price and how many. */
export interface SubscriptionItem { id: string; price_id: string; quantity: number }

/** A line of an invoice: a period of an item, or a proration (credit < 0 for unused time). */
export interface InvoiceLine {
  description: string;
  price_id: string;
  quantity: number;
  amount: number;
  period_start: string;
  period_end: string;
  proration: boolean;
}
