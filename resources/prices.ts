import { Static, Type } from '@sinclair/typebox';
import type { PriceRow } from '../db/products';
import { INTERVALS } from '../contracts/billing';
import { iso } from '../lib/timestamps';
import { Resource, Timestamp } from './schemas';

export const IntervalSchema = Type.Union(INTERVALS.map((i) => Type.Literal(i)));

/** A recurring price of a product (docs/billing.md#products-and-prices): its amount never changes; a new amount is a new price. */
export const PriceSchema = Resource('price', {
  id: Type.String(),
  account_id: Type.String(),
  product_id: Type.String(),
  active: Type.Boolean({ description: 'false once retired: it bills the subscriptions already on it, and goes on no new one' }),
  unit_amount: Type.Integer({ description: 'minor units, per unit and period' }),
  currency: Type.String(),
  recurring: Type.Object({ interval: IntervalSchema, interval_count: Type.Integer() }),
  metadata: Type.Record(Type.String(), Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export type Price = Static<typeof PriceSchema>;

export function serializePrice(row: PriceRow): Price {
  return {
    object: 'price',
    id: row.id,
    account_id: row.account_id,
    product_id: row.product_id,
    active: row.active,
    unit_amount: Number(row.unit_amount),
    currency: row.currency,
    recurring: { interval: row.interval, interval_count: row.interval_count },
    metadata: row.metadata ?? {},
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
