import type { Client, Subscription } from '../api';
import { Empty, ErrorState, Id, Link, Loading, Pager, Status, Time, useResource } from '../components';
import { date, humanize } from '../format';
import { navigate, qs } from '../router';

const STATUSES = ['ACTIVE', 'TRIALING', 'PAST_DUE', 'UNPAID', 'INCOMPLETE', 'INCOMPLETE_EXPIRED', 'CANCELED'];
const LIMIT = 20;

/** The two lists of the Billing section. */
export function BillingTabs({ current }: { current: 'subscriptions' | 'invoices' }) {
  return (
    <nav class="filters" aria-label="Billing">
      <Link to="/billing" class={`pill ${current === 'subscriptions' ? 'active' : ''}`}>Subscriptions</Link>
      <Link to="/billing/invoices" class={`pill ${current === 'invoices' ? 'active' : ''}`}>Invoices</Link>
    </nav>
  );
}

/** When the subscription next bills, or why it will not. */
export function NextRenewal({ sub }: { sub: Subscription }) {
  if (sub.status === 'CANCELED' || sub.status === 'INCOMPLETE_EXPIRED') return <span class="muted">Ended</span>;
  if (sub.cancel_at_period_end) return <span title="Cancels at the end of this period">Ends {date(sub.current_period_end)}</span>;
  if (sub.status === 'UNPAID') return <span class="muted" title="Dunning ran out: kept, not billed">Not billed</span>;
  return <span title={sub.current_period_end}>{date(sub.current_period_end)}{sub.pause_collection ? <span class="muted small"> · paused</span> : null}</span>;
}

export function SubscriptionList({ api, query, onUnauthorized }: { api: Client; query: URLSearchParams; onUnauthorized: () => void }) {
  const status = query.get('status') ?? '';
  const customer = query.get('customer_id') ?? '';
  const page = Math.max(1, Number(query.get('page')) || 1);
  const go = (next: { status?: string; customer_id?: string; page?: number }) => navigate(`/billing${qs({
    status: next.status ?? status, customer_id: next.customer_id ?? customer, page: next.page && next.page > 1 ? next.page : undefined,
  })}`);
  const res = useResource(
    () => api.subscriptions({ status: status || undefined, customer_id: customer || undefined, page, limit: LIMIT }),
    [api.accountId, status, customer, page], onUnauthorized,
  );
  const filterCustomer = (e: Event) => {
    e.preventDefault();
    go({ customer_id: String(new FormData(e.currentTarget as HTMLFormElement).get('customer_id') ?? '').trim(), page: 1 });
  };

  return (
    <div class="page">
      <div class="page-header">
        <h1>Subscriptions</h1>
        <button type="button" class="btn btn-secondary" onClick={res.reload}>Refresh</button>
      </div>
      <BillingTabs current="subscriptions" />
      <div class="filters" role="group" aria-label="Filter by status">
        <button type="button" class={`pill ${status === '' ? 'active' : ''}`} onClick={() => go({ status: '', page: 1 })}>All</button>
        {STATUSES.map((s) => (
          <button type="button" key={s} class={`pill ${status === s ? 'active' : ''}`} data-status={s} onClick={() => go({ status: s, page: 1 })}>{humanize(s)}</button>
        ))}
      </div>
      <form class="inline-form filters" aria-label="Filter by customer" onSubmit={filterCustomer}>
        <label>Customer<input name="customer_id" placeholder="cus_…" value={customer} /></label>
        <button type="submit" class="btn btn-secondary">Apply</button>
        {customer ? <button type="button" class="btn btn-ghost" onClick={() => go({ customer_id: '', page: 1 })}>Clear</button> : null}
      </form>
      <div class="card">
        {res.error ? <ErrorState error={res.error} retry={res.reload} />
          : !res.data ? <Loading />
          : res.data.data.length === 0 ? (
            <Empty title={status || customer ? 'No subscriptions match' : 'No subscriptions yet'}>
              {status || customer ? <button type="button" class="btn btn-secondary" onClick={() => navigate('/billing')}>Show all subscriptions</button>
                : <>Subscriptions created with <code>POST /v1/subscriptions</code> show up here.</>}
            </Empty>
          ) : (
            <table class="table" data-testid="subscriptions-table">
              <thead><tr><th>Customer</th><th>Status</th><th>Subscription</th><th class="num">Items</th><th>Next renewal</th><th>Latest invoice</th><th>Created</th></tr></thead>
              <tbody>
                {res.data.data.map((s) => (
                  <tr key={s.id} class="row-link" data-subscription={s.id} onClick={() => navigate(`/billing/subscriptions/${s.id}`)}>
                    <td><Link to={`/billing/subscriptions/${s.id}`}><code>{s.customer_id}</code></Link></td>
                    <td><Status value={s.status} /></td>
                    <td><Id value={s.id} /></td>
                    <td class="num">{s.items.reduce((n, i) => n + i.quantity, 0)}</td>
                    <td data-testid="next-renewal"><NextRenewal sub={s} /></td>
                    {/* Its own link: a click here opens the invoice, not the subscription. */}
                    <td onClick={(e) => e.stopPropagation()}>
                      {s.latest_invoice_id ? <Link to={`/billing/invoices/${s.latest_invoice_id}`}><code>{s.latest_invoice_id}</code></Link> : <span class="muted">—</span>}
                    </td>
                    <td><Time value={s.created_at} /></td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
      </div>
      {res.data ? <Pager page={res.data.page} hasMore={res.data.has_more} total={res.data.total} limit={res.data.limit} shown={res.data.data.length} onPage={(p) => go({ page: p })} /> : null}
    </div>
  );
}
