import type { Client, Invoice } from '../api';
import { Empty, ErrorState, Id, Link, Loading, Pager, Status, Time, useResource } from '../components';
import { humanize, money, period } from '../format';
import { navigate, qs } from '../router';
import { BillingTabs } from './subscriptions';

const STATUSES = ['OPEN', 'PAID', 'UNCOLLECTIBLE', 'VOID', 'DRAFT'];
const LIMIT = 20;

export function InvoiceList({ api, query, onUnauthorized }: { api: Client; query: URLSearchParams; onUnauthorized: () => void }) {
  const status = query.get('status') ?? '';
  const page = Math.max(1, Number(query.get('page')) || 1);
  const go = (next: { status?: string; page?: number }) => navigate(`/billing/invoices${qs({ status: next.status ?? status, page: next.page && next.page > 1 ? next.page : undefined })}`);
  const res = useResource(() => api.invoices({ status: status || undefined, page, limit: LIMIT }), [api.accountId, status, page], onUnauthorized);

  return (
    <div class="page">
      <div class="page-header">
        <h1>Invoices</h1>
        <button type="button" class="btn btn-secondary" onClick={res.reload}>Refresh</button>
      </div>
      <BillingTabs current="invoices" />
      <div class="filters" role="group" aria-label="Filter by status">
        <button type="button" class={`pill ${status === '' ? 'active' : ''}`} onClick={() => go({ status: '', page: 1 })}>All</button>
        {STATUSES.map((s) => (
          <button type="button" key={s} class={`pill ${status === s ? 'active' : ''}`} data-status={s} onClick={() => go({ status: s, page: 1 })}>{humanize(s)}</button>
        ))}
      </div>
      <div class="card">
        {res.error ? <ErrorState error={res.error} retry={res.reload} />
          : !res.data ? <Loading />
          : res.data.data.length === 0 ? (
            <Empty title={status ? `No ${humanize(status).toLowerCase()} invoices` : 'No invoices yet'}>
              {status ? <button type="button" class="btn btn-secondary" onClick={() => go({ status: '', page: 1 })}>Show all invoices</button>
                : 'Each subscription makes an invoice per period; they show up here.'}
            </Empty>
          ) : <InvoiceTable invoices={res.data.data} withSubscription />}
      </div>
      {res.data ? <Pager page={res.data.page} hasMore={res.data.has_more} total={res.data.total} limit={res.data.limit} shown={res.data.data.length} onPage={(p) => go({ page: p })} /> : null}
    </div>
  );
}

/** Invoices as rows: amount, status, period, attempts and the payment that paid (or is paying) each. */
export function InvoiceTable({ invoices, withSubscription = false }: { invoices: Invoice[]; withSubscription?: boolean }) {
  return (
    <table class="table" data-testid="invoices-table">
      <thead>
        <tr>
          <th>Amount due</th><th>Status</th><th>Invoice</th>{withSubscription ? <th>Subscription</th> : null}
          <th>Period</th><th>Reason</th><th class="num">Attempts</th><th>Payment</th><th>Created</th>
        </tr>
      </thead>
      <tbody>
        {invoices.map((i) => (
          <tr key={i.id} class="row-link" data-invoice={i.id} onClick={() => navigate(`/billing/invoices/${i.id}`)}>
            <td class="amount"><Link to={`/billing/invoices/${i.id}`}>{money(i.amount_due, i.currency)}</Link></td>
            <td><Status value={i.status} /></td>
            <td><Id value={i.id} /></td>
            {withSubscription ? (
              <td onClick={(e) => e.stopPropagation()}><Link to={`/billing/subscriptions/${i.subscription_id}`}><code>{i.subscription_id}</code></Link></td>
            ) : null}
            <td>{period(i.period_start, i.period_end)}</td>
            <td>{humanize(i.billing_reason)}</td>
            <td class="num">{i.attempt_count}</td>
            <td onClick={(e) => e.stopPropagation()}>
              {i.payment_id ? <Link to={`/payments/${i.payment_id}`} class="payment-link"><code>{i.payment_id}</code></Link> : <span class="muted">—</span>}
            </td>
            <td><Time value={i.created_at} /></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
