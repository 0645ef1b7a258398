import type { Knex } from 'knex';

/** A page of a listing as the API asks for it (1-based; at most MAX_PAGE, resources/schemas.ts, so the offset is a safe integer). */
export interface Page { page: number; limit: number }

/** One page of a listing, newest first (id breaking ties), and how many rows there are in all. */
export async function paged<T extends object>(base: () => Knex.QueryBuilder<T, T[]>, page: Page): Promise<{ rows: T[]; total: number }> {
  const [{ count }] = await base().count<{ count: number }[]>({ count: '*' });
  const rows = await base().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset((page.page - 1) * page.limit);
  return { rows: rows as T[], total: Number(count) };
}

/**
 * A row's place in a listing ordered newest first, (created_at, id), a total order: a query selecting
 * those two columns of the cursor row, run as part of the page's own query (one round trip). When it
 * finds no row the page is empty.
 */
export type Cursor = Knex.QueryBuilder;

/**
 * Where a keyset listing starts: right after a row (older ones), right before a row (newer ones), or
 * at a page number (an offset, for clients that page by number).
 */
export type KeysetRequest =
  | { limit: number; startingAfter: Cursor }
  | { limit: number; endingBefore: Cursor }
  | { limit: number; page: number };

/** A listing's page: `hasMore` says whether rows lie beyond it in the direction walked. */
export interface KeysetPage<T> { rows: T[]; hasMore: boolean; total: number | null }

/**
 * Matching rows are counted up to this many; beyond it `total` is null. An exact count over a big
 * account reads every matching index entry, on every page (docs/api-conventions.md#pagination).
 */
export const COUNTED_UP_TO = 10_000;

/**
 * One page of a listing, newest first, by keyset: `(created_at, id)` compared as a row, which the
 * (…, created_at, id) indexes answer by seeking, however deep the page. A page number still works
 * (an offset, read past row by row); only it comes with a `total`, a cursor page does not.
 */
export async function keysetPage<T extends object, R extends object = T>(
  db: Knex, base: () => Knex.QueryBuilder<R, T[]>, request: KeysetRequest,
): Promise<KeysetPage<T>> {
  const { limit } = request;
  if ('endingBefore' in request) {
    // Walked oldest first from the cursor, so the page is the one right before it; shown newest first.
    const rows = await base().where(db.raw('(created_at, id)'), '>', request.endingBefore)
      .orderBy('created_at', 'asc').orderBy('id', 'asc').limit(limit + 1);
    return { rows: (rows.slice(0, limit) as T[]).reverse(), hasMore: rows.length > limit, total: null };
  }
  const newestFirst = () => base().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit + 1);
  if ('startingAfter' in request) {
    const rows = await newestFirst().where(db.raw('(created_at, id)'), '<', request.startingAfter);
    return { rows: rows.slice(0, limit) as T[], hasMore: rows.length > limit, total: null };
  }
  const [rows, [{ count }]] = await Promise.all([
    newestFirst().offset((request.page - 1) * limit),
    // In the list's order, so the planner counts along the same index (an index-only scan of at most
    // COUNTED_UP_TO entries) rather than a sequential scan it hopes to stop early. Whatever columns the
    // page selects are cleared, so the scan stays index-only.
    db.from(base().clearSelect().select(db.raw('1')).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(COUNTED_UP_TO + 1).as('matching'))
      .count<{ count: string }[]>({ count: '*' }),
  ]);
  const total = Number(count);
  return { rows: rows.slice(0, limit) as T[], hasMore: rows.length > limit, total: total > COUNTED_UP_TO ? null : total };
}

/** Where a keyset list starts: after or before one of its rows, or at a page number. */
export type ListStart = { startingAfter: string } | { endingBefore: string } | { page: number };

/**
 * One page of an account's keyset list (`base`: its rows, filtered), from wherever `start` says. A
 * cursor is looked up among the account's rows of `table` (all of them, filters aside, as Stripe's are):
 * undefined when it is not one of them, so the caller answers 422 rather than an empty page.
 */
export async function accountListPage<T extends object>(
  db: Knex, table: () => Knex.QueryBuilder, accountId: string, base: () => Knex.QueryBuilder<T, T[]>, start: ListStart, limit: number,
): Promise<KeysetPage<T> | undefined> {
  if ('page' in start) return keysetPage(db, base, { page: start.page, limit });
  const cursorRow = () => table().where({ id: 'startingAfter' in start ? start.startingAfter : start.endingBefore, account_id: accountId });
  const cursor: Cursor = cursorRow().select('created_at', 'id');
  const page = await keysetPage(db, base, 'startingAfter' in start ? { startingAfter: cursor, limit } : { endingBefore: cursor, limit });
  if (!page.rows.length && !(await cursorRow().first('id'))) return undefined;
  return page;
}
