import { Static, Type } from '@sinclair/typebox';
import type { ProductRow } from '../db/products';
import { iso } from '../lib/timestamps';
import { Resource, Timestamp } from './schemas';

/** A product (docs/billing.md#products-and-prices): what is sold; its prices say for how much and how often. */
export const ProductSchema = Resource('product', {
  id: Type.String(),
  account_id: Type.String(),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  active: Type.Boolean({ description: 'false once retired: its prices then go on no new subscription' }),
  metadata: Type.Record(Type.String(), Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});

export type Product = Static<typeof ProductSchema>;

export function serializeProduct(row: ProductRow): Product {
  return {
    object: 'product',
    id: row.id,
    account_id: row.account_id,
    name: row.name,
    description: row.description ?? null,
    active: row.active,
    metadata: row.metadata ?? {},
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
