import type { Knex } from 'knex';
import type { Interval } from '../contracts/billing';
import { envTable, type Environment } from './environments';
import { accountListPage, type KeysetPage, type ListStart } from './page';

/**
 * The catalogue store: each environment's `products` and their recurring `prices` (docs/billing.md).
 * Neither is ever deleted: `active: false` retires one. A price's amount, currency and interval never
 * change once written, so every invoice line is explained by the price it names.
 */

export interface ProductRow {
  id: string;
  account_id: string;
  name: string;
  description: string | null;
  active: boolean;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
}

export interface PriceRow {
  id: string;
  account_id: string;
  product_id: string;
  active: boolean;
  unit_amount: number;
  currency: string;
  interval: Interval;
  interval_count: number;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
}

export type NewProduct = Pick<ProductRow, 'id' | 'account_id' | 'name' | 'description' | 'metadata'>;
export type NewPrice = Pick<PriceRow, 'id' | 'account_id' | 'product_id' | 'unit_amount' | 'currency' | 'interval' | 'interval_count' | 'metadata'>;
export type ProductPatch = Partial<Pick<ProductRow, 'name' | 'description' | 'active' | 'metadata'>>;
export type PricePatch = Partial<Pick<PriceRow, 'active' | 'metadata'>>;

const products = (db: Knex, env: Environment) => db<ProductRow>(envTable(env, 'products'));
const prices = (db: Knex, env: Environment) => db<PriceRow>(envTable(env, 'prices'));

/** bigint comes back from Postgres as text: amounts are answered as numbers. */
const priceOf = (row: PriceRow): PriceRow => ({ ...row, unit_amount: Number(row.unit_amount) });

export async function findProduct(db: Knex, env: Environment, id: string): Promise<ProductRow | undefined> {
  return products(db, env).where({ id }).first();
}

export async function findPrice(db: Knex, env: Environment, id: string): Promise<PriceRow | undefined> {
  const row = await prices(db, env).where({ id }).first();
  return row && priceOf(row);
}

/** The account's prices among `ids` (unknown ids and other accounts' are simply absent). */
export async function pricesOfAccount(db: Knex, env: Environment, accountId: string, ids: string[]): Promise<PriceRow[]> {
  if (!ids.length) return [];
  return (await prices(db, env).where({ account_id: accountId }).whereIn('id', ids)).map(priceOf);
}

/** Writes a new product; a retry with the same id (Idempotency-Key) finds its row and leaves it. */
export async function insertProduct(db: Knex, env: Environment, product: NewProduct): Promise<ProductRow> {
  await products(db, env).insert({ ...product, metadata: JSON.stringify(product.metadata) } as never).onConflict('id').ignore();
  return (await findProduct(db, env, product.id))!;
}

/** Writes a new price; a retry with the same id (Idempotency-Key) finds its row and leaves it. */
export async function insertPrice(db: Knex, env: Environment, price: NewPrice): Promise<PriceRow> {
  await prices(db, env).insert({ ...price, metadata: JSON.stringify(price.metadata) } as never).onConflict('id').ignore();
  return (await findPrice(db, env, price.id))!;
}

function patchColumns(db: Knex, patch: ProductPatch | PricePatch): Record<string, unknown> {
  const columns: Record<string, unknown> = { ...patch, updated_at: db.fn.now() };
  if (patch.metadata) columns.metadata = JSON.stringify(patch.metadata);
  return columns;
}

/** Changes a product's name, description, active flag or metadata; answers the row after. */
export async function updateProduct(db: Knex, env: Environment, id: string, patch: ProductPatch): Promise<ProductRow | undefined> {
  const [row] = await products(db, env).where({ id }).update(patchColumns(db, patch) as never).returning('*');
  return row as ProductRow | undefined;
}

/** Changes a price's active flag or metadata (never its amount); answers the row after. */
export async function updatePrice(db: Knex, env: Environment, id: string, patch: PricePatch): Promise<PriceRow | undefined> {
  const [row] = await prices(db, env).where({ id }).update(patchColumns(db, patch) as never).returning('*');
  return row && priceOf(row as PriceRow);
}

export interface ProductFilter { active?: boolean }
export interface PriceFilter { active?: boolean; product_id?: string }

/**
 * A keyset page of `table`'s rows of the account (newest first, as the payments list); undefined when
 * the cursor is not one of them.
 */
async function listOf<T extends { created_at: Date; id: string }>(
  db: Knex, table: () => Knex.QueryBuilder, accountId: string, filter: Record<string, unknown>, start: ListStart, limit: number,
): Promise<KeysetPage<T> | undefined> {
  const base = () => {
    const q = table().where({ account_id: accountId });
    for (const [column, value] of Object.entries(filter)) if (value !== undefined) void q.where(column, value as string | boolean);
    return q;
  };
  return accountListPage(db, table, accountId, base, start, limit) as Promise<KeysetPage<T> | undefined>;
}

export async function listProducts(
  db: Knex, env: Environment, accountId: string, filter: ProductFilter, start: ListStart, limit: number,
): Promise<KeysetPage<ProductRow> | undefined> {
  return listOf<ProductRow>(db, () => products(db, env), accountId, { active: filter.active }, start, limit);
}

export async function listPrices(
  db: Knex, env: Environment, accountId: string, filter: PriceFilter, start: ListStart, limit: number,
): Promise<KeysetPage<PriceRow> | undefined> {
  const page = await listOf<PriceRow>(db, () => prices(db, env), accountId, { active: filter.active, product_id: filter.product_id }, start, limit);
  return page && { ...page, rows: page.rows.map(priceOf) };
}
