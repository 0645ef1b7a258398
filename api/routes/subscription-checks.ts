import { Type } from '@sinclair/typebox';
import type { Environment } from '../../db/environments';
import { findAccountCustomer } from '../../db/customers';
import { paymentMethodsByCustomer } from '../../db/payment-methods';
import { pricesOfAccount, type PriceRow } from '../../db/products';
import type { SubscriptionRow } from '../../db/subscriptions';
import { findTestClock, type TestClockRow } from '../../db/test-clocks';
import { newId } from '../../lib/ids';
import type { SubscriptionItem } from '../../contracts/billing';
import type { ApiDeps } from '../deps';
import { ApiError, type FieldError } from '../errors';
import { Id, Obj } from '../../resources/schemas';

/**
 * The rules of a subscription's facts that depend on stored data (docs/billing.md#subscriptions), each a
 * 400 at its field: the customer and the saved card, the prices and what they must share, the test clock.
 */

export const MAX_ITEMS = 20;
/** The most one invoice's period lines may add up to: what one payment may be (resources/schemas.ts Amount). */
const MAX_INVOICE_AMOUNT = 99_999_999;

export const Quantity = Type.Integer({ minimum: 1, maximum: 10_000, description: 'default 1' });

/** Stripe's form of a change to the items: `id` changes or (deleted) removes that item; without `id`, a new item. */
export const ItemChanges = Type.Array(Obj({
  id: Type.Optional(Id('si')),
  price_id: Type.Optional(Id('price')),
  quantity: Type.Optional(Quantity),
  deleted: Type.Optional(Type.Boolean()),
}), { minItems: 1, maxItems: MAX_ITEMS * 2 });

const invalid = (path: string, message: string) => ApiError.validation([{ path, message }]);

/** The test clocks rule: they exist in sandboxes only (Stripe's too), where real time cannot be waited for. */
export function sandboxOnly(env: Environment, path: string): void {
  if (env !== 'sandbox') throw invalid(path, 'test clocks exist only in sandbox');
}

/** The customer, a live customer of the account: 400 at body/customer_id otherwise. */
export async function checkCustomer(deps: Pick<ApiDeps, 'db'>, env: Environment, accountId: string, customerId: string): Promise<void> {
  if (!(await findAccountCustomer(deps.db, env, accountId, customerId))) throw invalid('body/customer_id', 'is not a customer of this account');
}

/**
 * A card saved to the customer (not deleted, its number not erased), as a confirm with a saved card
 * checks one; one message whatever the reason, so ids of other customers' cards are never confirmed.
 */
export async function checkSavedCard(deps: Pick<ApiDeps, 'db'>, env: Environment, accountId: string, customerId: string, pmId: string): Promise<void> {
  const cards = await paymentMethodsByCustomer(deps.db, env, customerId);
  const card = cards.find((c) => c.id === pmId && c.account_id === accountId && c.type === 'CARD' && c.pan_encrypted !== '');
  if (!card) throw invalid('body/default_payment_method_id', 'is not a card saved to this customer');
}

/** The clock: the account's own, in a sandbox. */
export async function checkTestClock(deps: Pick<ApiDeps, 'db'>, env: Environment, accountId: string, clockId: string): Promise<TestClockRow> {
  sandboxOnly(env, 'body/test_clock_id');
  const clock = await findTestClock(deps.db, env, clockId);
  if (!clock || clock.account_id !== accountId) throw invalid('body/test_clock_id', 'is not a test clock of this account');
  return clock;
}

/** What every item of one subscription shares: it is billed as one invoice per period. */
export interface Billing { currency: string; interval: string; interval_count: number }
const cadence = (b: Billing) => `${b.currency} every ${b.interval_count} ${b.interval}${b.interval_count === 1 ? '' : 's'}`;

/**
 * Checks `items` (each at `body/items/<index>` as `pathOf` says) against the account's prices: each a
 * price of the account, active unless `kept` (a retired price still bills the subscriptions already on
 * it), no price twice, all billed as `billing` (the first item's when not given). Answers the shared billing.
 */
export async function checkPrices(
  deps: Pick<ApiDeps, 'db'>, env: Environment, accountId: string,
  items: { price_id: string; quantity: number; path: string }[], opts: { billing?: Billing; kept?: ReadonlySet<string> } = {},
): Promise<Billing> {
  const prices = new Map((await pricesOfAccount(deps.db, env, accountId, items.map((i) => i.price_id))).map((p) => [p.id, p]));
  const problems: FieldError[] = [];
  const seen = new Set<string>();
  let billing = opts.billing;
  let total = 0;
  for (const item of items) {
    const price: PriceRow | undefined = prices.get(item.price_id);
    const path = `${item.path}/price_id`;
    if (!price) { problems.push({ path, message: 'is not a price of this account' }); continue; }
    if (!price.active && !opts.kept?.has(price.id)) problems.push({ path, message: 'is a retired price (active: false)' });
    if (seen.has(price.id)) problems.push({ path, message: 'is the price of another item: give each price once, with its quantity' });
    seen.add(price.id);
    billing ??= price;
    if (price.currency !== billing.currency || price.interval !== billing.interval || price.interval_count !== billing.interval_count) {
      problems.push({ path, message: `bills ${cadence(price)}; every item must bill ${cadence(billing)}` });
    }
    total += price.unit_amount * item.quantity;
  }
  if (problems.length) throw ApiError.validation(problems);
  if (total > MAX_INVOICE_AMOUNT) throw new ApiError('amount_too_large', `The items add up to ${total} a period, more than one payment may be (${MAX_INVOICE_AMOUNT}).`);
  return { currency: billing!.currency, interval: billing!.interval, interval_count: billing!.interval_count };
}

export type ItemChange = { id?: string; price_id?: string; quantity?: number; deleted?: boolean };

/**
 * The subscription's complete new item list after Stripe-form changes (an entry with `id` changes or
 * deletes that item, one without adds one), checked: ids of this subscription, each once, at least one
 * item left, at most MAX_ITEMS, and the prices as `checkPrices` wants them.
 */
export async function applyItemChanges(deps: Pick<ApiDeps, 'db'>, env: Environment, sub: SubscriptionRow, changes: ItemChange[]): Promise<SubscriptionItem[]> {
  const items = new Map(sub.items.map((i) => [i.id, { ...i }]));
  const paths = new Map<string, string>();
  const touched = new Set<string>();
  changes.forEach((change, n) => {
    const path = `body/items/${n}`;
    if (change.id === undefined) {
      if (change.deleted) throw invalid(`${path}/deleted`, 'is only for an item given by id');
      if (!change.price_id) throw invalid(`${path}/price_id`, 'is required to add an item (an entry without id)');
      const id = newId('si');
      items.set(id, { id, price_id: change.price_id, quantity: change.quantity ?? 1 });
      paths.set(id, path);
      return;
    }
    const item = items.get(change.id);
    if (!item || touched.has(change.id)) throw invalid(`${path}/id`, item ? 'names an item changed earlier in this list' : 'is not an item of this subscription');
    touched.add(change.id);
    if (change.deleted) {
      if (change.price_id !== undefined || change.quantity !== undefined) throw invalid(`${path}/deleted`, 'takes no price_id or quantity');
      items.delete(change.id);
      return;
    }
    items.set(change.id, { ...item, price_id: change.price_id ?? item.price_id, quantity: change.quantity ?? item.quantity });
    paths.set(change.id, path);
  });
  const after = [...items.values()];
  if (!after.length) throw invalid('body/items', 'must leave at least one item: cancel the subscription to end it');
  if (after.length > MAX_ITEMS) throw invalid('body/items', `must leave at most ${MAX_ITEMS} items`);
  const kept = new Set(sub.items.map((i) => i.price_id));
  await checkPrices(deps, env, sub.account_id, after.map((i) => ({ ...i, path: paths.get(i.id) ?? 'body/items' })), { billing: sub, kept });
  return after;
}
