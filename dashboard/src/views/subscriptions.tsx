import type { Client, Subscription } from '../api';
import { Id, Link, Status, Time, useResource } from '../components';
import { date } from '../format';
import { EmptyList, FilterPills, LIST_LIMIT, ListBody, ListHeader, listPlace, statusOptions } from '../list';
import { navigate } from '../router';

const STATUSES = statusOptions(['ACTIVE', 'TRIALING', 'PAST_DUE', 'UNPAID', 'INCOMPLETE', 'INCOMPLETE_EXPIRED', 'CANCELED']);

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
  const { filters: { status, customer_id: customer }, page, go } = listPlace('/billing', query, ['status', 'customer_id']);
  const res = useResource(
    () => api.subscriptions({ status: status || undefined, customer_id: customer || undefined, page, limit: LIST_LIMIT }),
    [api.accountId, status, customer, page], onUnauthorized,
  );
  const filterCustomer = (e: Event) => {
    e.preventDefault();
    go({ customer_id: String(new FormData(e.currentTarget as HTMLFormElement).get('customer_id') ?? '').trim() });
  };

  return (
    <div class="page">
      <ListHeader title="Subscriptions" onRefresh={res.reload} />
      <BillingTabs current="subscriptions" />
      <FilterPills label="Filter by status" options={STATUSES} current={status} onSelect={(s) => go({ status: s })} />
      <form class="inline-form filters" aria-label="Filter by customer" onSubmit={filterCustomer}>
        <label>Customer<input name="customer_id" placeholder="cus_…" value={customer} /></label>
        <button type="submit" class="btn btn-secondary">Apply</button>
        {customer ? <button type="button" class="btn btn-ghost" onClick={() => go({ customer_id: '' })}>Clear</button> : null}
      </form>
      <ListBody res={res} onPage={(p) => go({ page: p })} empty={(
        <EmptyList filtered={status || customer ? 'No subscriptions match' : undefined} title="No subscriptions yet" noun="subscriptions" onShowAll={() => go({ status: '', customer_id: '' })}>
          Subscriptions created with <code>POST /v1/subscriptions</code> show up here.
        </EmptyList>
      )}>
        {(subscriptions) => (
          <table class="table" data-testid="subscriptions-table">
            <thead><tr><th>Customer</th><th>Status</th><th>Subscription</th><th class="num">Items</th><th>Next renewal</th><th>Latest invoice</th><th>Created</th></tr></thead>
            <tbody>
              {subscriptions.map((s) => (
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
      </ListBody>
    </div>
  );
}
