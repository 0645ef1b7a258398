import type { Knex } from 'knex';

/** A page of a listing as the API asks for it (1-based). */
export interface Page { page: number; limit: number }

/** One page of a listing, newest first (id breaking ties), and how many rows there are in all. */
export async function paged<T extends object>(base: () => Knex.QueryBuilder<T, T[]>, page: Page): Promise<{ rows: T[]; total: number }> {
  const [{ count }] = await base().count<{ count: number }[]>({ count: '*' });
  const rows = await base().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset((page.page - 1) * page.limit);
  return { rows: rows as T[], total: Number(count) };
}
