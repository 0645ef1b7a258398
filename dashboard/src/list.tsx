import type { ComponentChildren } from 'preact';
import type { Page } from './api';
import { Empty, ErrorState, Loading, Pager, statusLabel, type Resource } from './components';
import { navigate, qs } from './router';

/**
 * The parts every list page is made of: where it is (its filters and page, all in the URL, so that a
 * filtered page can be linked and reloaded), its header, its filter pills, and its rows or the state
 * standing in for them, with the pager under them.
 */

/** Rows a list page shows at once. */
export const LIST_LIMIT = 20;

export interface ListPlace<K extends string> {
  /** Each filter's value from the query, '' when unset. */
  filters: Record<K, string>;
  page: number;
  /** Moves the list: filters not named stay; the page is the one named, else the first. */
  go: (next: Partial<Record<K, string>> & { page?: number }) => void;
}

/** Where a list at `path` is, by its query's filters (`keys`) and page. */
export function listPlace<K extends string>(path: string, query: URLSearchParams, keys: readonly K[]): ListPlace<K> {
  const filters = Object.fromEntries(keys.map((k) => [k, query.get(k) ?? ''])) as Record<K, string>;
  const page = Math.max(1, Number(query.get('page')) || 1);
  const go = (next: Partial<Record<K, string>> & { page?: number }) =>
    navigate(`${path}${qs({ ...filters, ...next, page: next.page && next.page > 1 ? next.page : undefined })}`);
  return { filters, page, go };
}

/** A list page's title (with a line under it, if any) and its Refresh button. */
export function ListHeader({ title, sub, onRefresh }: { title: string; sub?: string; onRefresh: () => void }) {
  return (
    <div class="page-header">
      {sub ? <div><h1>{title}</h1><div class="detail-sub">{sub}</div></div> : <h1>{title}</h1>}
      <button type="button" class="btn btn-secondary" onClick={onRefresh}>Refresh</button>
    </div>
  );
}

export interface FilterOption { value: string; label: string }

/** Statuses as filter options, labelled as their badges are. */
export const statusOptions = (statuses: readonly string[]): FilterOption[] => statuses.map((s) => ({ value: s, label: statusLabel(s) }));

/** Pills that filter a list by one parameter: All, then each option. */
export function FilterPills({ label, options, current, onSelect }: {
  label: string; options: readonly FilterOption[]; current: string; onSelect: (value: string) => void;
}) {
  const pill = (value: string, text: string) => (
    <button type="button" key={value} class={`pill ${current === value ? 'active' : ''}`} data-filter={value || undefined} onClick={() => onSelect(value)}>{text}</button>
  );
  return (
    <div class="filters" role="group" aria-label={label}>
      {pill('', 'All')}
      {options.map((o) => pill(o.value, o.label))}
    </div>
  );
}

/**
 * What a list shows when it has no rows: with a filter on, that nothing matches and the way back to
 * every row; with none, where its rows come from.
 */
export function EmptyList({ filtered, title, noun, onShowAll, children }: {
  /** The title while a filter is on; undefined when none is. */
  filtered?: string; title: string; noun: string; onShowAll: () => void; children: ComponentChildren;
}) {
  if (!filtered) return <Empty title={title}>{children}</Empty>;
  return <Empty title={filtered}><button type="button" class="btn btn-secondary" onClick={onShowAll}>Show all {noun}</button></Empty>;
}

/** A list's rows in a card (or its error, its loading, its empty state), with the pager under them. */
export function ListBody<T>({ res, empty, onPage, card = true, children }: {
  res: Resource<Page<T>>; empty: ComponentChildren; onPage: (page: number) => void;
  /** False inside a section that is its own card. */
  card?: boolean;
  children: (rows: T[]) => ComponentChildren;
}) {
  const body = res.error ? <ErrorState error={res.error} retry={res.reload} />
    : !res.data ? <Loading />
    : res.data.data.length === 0 ? empty
    : children(res.data.data);
  const p = res.data;
  return (
    <>
      {card ? <div class="card">{body}</div> : body}
      {p ? <Pager page={p.page} hasMore={p.has_more} total={p.total} limit={p.limit} shown={p.data.length} onPage={onPage} /> : null}
    </>
  );
}
