import type { Knex } from 'knex';
import type { Interval, InvoiceLine, PauseCollection, SubscriptionItem, SubscriptionStatus } from '../contracts/billing';
import { envTable, type Environment } from './environments';
import { accountListPage, type KeysetPage, type ListStart } from './page';

/**
 * The subscriptions store: each environment's `subscriptions` (docs/billing.md). Only the subscription's
 * workflow writes a row after it is made (through activities/billing/), so its changes are serial; the
 * API reads.
 */

export interface SubscriptionRow {
  id: string;
  account_id: string;
  customer_id: string;
  status: SubscriptionStatus;
  currency: string;
  interval: Interval;
  interval_count: number;
  items: SubscriptionItem[];
  default_payment_method_id: string;
  billing_cycle_anchor: Date;
  current_period_start: Date;
  current_period_end: Date;
  trial_end: Date | null;
  cancel_at_period_end: boolean;
  canceled_at: Date | null;
  ended_at: Date | null;
  pause_collection: PauseCollection | null;
  pending_lines: InvoiceLine[];
  notices_sent: string[];
  latest_invoice_id: string | null;
  test_clock_id: string | null;
  clock_caught_up_to: Date | null;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
}

const subscriptions = (db: Knex, env: Environment) => db<SubscriptionRow>(envTable(env, 'subscriptions'));

export async function findSubscription(db: Knex, env: Environment, id: string): Promise<SubscriptionRow | undefined> {
  return subscriptions(db, env).where({ id }).first();
}

/** The row, locked for the rest of the transaction: a step reads and writes it as one. */
export async function lockSubscription(trx: Knex.Transaction, env: Environment, id: string): Promise<SubscriptionRow | undefined> {
  return subscriptions(trx, env).where({ id }).forUpdate().first();
}

/** Writes a new subscription; a retry with the same id finds its row and leaves it. Answers whether this call wrote it. */
export async function insertSubscription(db: Knex, env: Environment, row: Omit<SubscriptionRow, 'created_at' | 'updated_at'>): Promise<boolean> {
  const written = await subscriptions(db, env).insert({
    ...row, items: JSON.stringify(row.items), pending_lines: JSON.stringify(row.pending_lines), metadata: JSON.stringify(row.metadata),
    notices_sent: JSON.stringify(row.notices_sent),
    pause_collection: row.pause_collection ? JSON.stringify(row.pause_collection) : null,
  } as never).onConflict('id').ignore().returning('id');
  return written.length > 0;
}

export type SubscriptionPatch = Partial<Omit<SubscriptionRow, 'id' | 'account_id' | 'created_at' | 'updated_at'>>;

/** Writes a change to the row (JSON columns serialized); answers the row after. */
export async function updateSubscription(db: Knex, env: Environment, id: string, patch: SubscriptionPatch): Promise<SubscriptionRow> {
  const json: Record<string, unknown> = { ...patch, updated_at: db.fn.now() };
  for (const key of ['items', 'pending_lines', 'metadata', 'pause_collection', 'notices_sent'] as const) {
    if (key in patch) json[key] = patch[key] === null ? null : JSON.stringify(patch[key]);
  }
  const [row] = await subscriptions(db, env).where({ id }).update(json as never).returning('*');
  return row as SubscriptionRow;
}

/** The subscriptions on a test clock, for its advance to wake and to know when all have caught up. */
export async function subscriptionsOnClock(db: Knex, env: Environment, clockId: string): Promise<Pick<SubscriptionRow, 'id' | 'status' | 'clock_caught_up_to'>[]> {
  return subscriptions(db, env).where({ test_clock_id: clockId }).select('id', 'status', 'clock_caught_up_to');
}

export interface SubscriptionFilter { status?: SubscriptionStatus; customer_id?: string; test_clock_id?: string }

/** An account's subscriptions, newest first, by keyset (as the payments list); undefined when the cursor is not one of them. */
export async function listSubscriptions(
  db: Knex, env: Environment, accountId: string, filter: SubscriptionFilter, start: ListStart, limit: number,
): Promise<KeysetPage<SubscriptionRow> | undefined> {
  const base = () => {
    const q = subscriptions(db, env).where({ account_id: accountId });
    if (filter.status) void q.where({ status: filter.status });
    if (filter.customer_id) void q.where({ customer_id: filter.customer_id });
    if (filter.test_clock_id) void q.where({ test_clock_id: filter.test_clock_id });
    return q;
  };
  return accountListPage(db, () => subscriptions(db, env), accountId, base, start, limit);
}

/** A subscription item with what its price says: the amount per unit and the product's name (for invoice lines). */
export interface PricedItemRow { id: string; price_id: string; quantity: number; unit_amount: number; product_name: string; currency: string; interval: Interval; interval_count: number; active: boolean }

/**
 * The items priced as their prices are now (a price's amount never changes: a new amount is a new price).
 * Reads the catalogue's tables for the subscription's own lines, so a step needs no second store.
 */
export async function pricedItems(db: Knex, env: Environment, items: SubscriptionItem[]): Promise<PricedItemRow[]> {
  const rows = await db(envTable(env, 'prices')).join(envTable(env, 'products'), `${envTable(env, 'products')}.id`, `${envTable(env, 'prices')}.product_id`)
    .whereIn(`${envTable(env, 'prices')}.id`, items.map((i) => i.price_id))
    .select(`${envTable(env, 'prices')}.id as price_id`, 'unit_amount', 'currency', 'interval', 'interval_count', `${envTable(env, 'prices')}.active as active`, `${envTable(env, 'products')}.name as product_name`);
  const byId = new Map(rows.map((r: Record<string, unknown>) => [r.price_id as string, r]));
  return items.map((item) => {
    const price = byId.get(item.price_id);
    if (!price) throw new Error(`price ${item.price_id} of a subscription item has no row`);
    return {
      ...item, unit_amount: Number(price.unit_amount), product_name: String(price.product_name), currency: String(price.currency),
      interval: price.interval as Interval, interval_count: Number(price.interval_count), active: Boolean(price.active),
    };
  });
}
