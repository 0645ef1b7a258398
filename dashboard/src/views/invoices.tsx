import type { Client, Invoice } from '../api';
import { Id, Link, Status, statusLabel, Time, useResource } from '../components';
import { humanize, money, period } from '../format';
import { EmptyList, FilterPills, LIST_LIMIT, ListBody, ListHeader, listPlace, statusOptions } from '../list';
import { navigate } from '../router';
import { BillingTabs } from './subscriptions';

const STATUSES = statusOptions(['OPEN', 'PAID', 'UNCOLLECTIBLE', 'VOID', 'DRAFT']);

export function InvoiceList({ api, query, onUnauthorized }: { api: Client; query: URLSearchParams; onUnauthorized: () => void }) {
  const { filters: { status }, page, go } = listPlace('/billing/invoices', query, ['status']);
  const res = useResource(() => api.invoices({ status: status || undefined, page, limit: LIST_LIMIT }), [api.accountId, status, page], onUnauthorized);

  return (
    <div class="page">
      <ListHeader title="Invoices" onRefresh={res.reload} />
      <BillingTabs current="invoices" />
      <FilterPills label="Filter by status" options={STATUSES} current={status} onSelect={(s) => go({ status: s })} />
      <ListBody res={res} onPage={(p) => go({ page: p })} empty={(
        <EmptyList filtered={status && `No ${statusLabel(status).toLowerCase()} invoices`} title="No invoices yet" noun="invoices" onShowAll={() => go({ status: '' })}>
          Each subscription makes an invoice per period; they show up here.
        </EmptyList>
      )}>
        {(invoices) => <InvoiceTable invoices={invoices} withSubscription />}
      </ListBody>
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
