import type { Client } from '../api';
import { Id, Link, Status, statusLabel, Time, useResource } from '../components';
import { money } from '../format';
import { EmptyList, FilterPills, LIST_LIMIT, ListBody, ListHeader, listPlace, statusOptions } from '../list';
import { navigate } from '../router';

const STATUSES = statusOptions(['PROCESSING', 'SUCCEEDED', 'AUTHORIZED', 'FAILED', 'CANCELED', 'CREATED', 'PARTIALLY_REFUNDED', 'REFUNDED']);

export function PaymentList({ api, query, onUnauthorized }: { api: Client; query: URLSearchParams; onUnauthorized: () => void }) {
  const { filters: { status }, page, go } = listPlace('/payments', query, ['status']);
  const res = useResource(() => api.payments({ status: status || undefined, page, limit: LIST_LIMIT, include_charges: true }), [api.accountId, status, page], onUnauthorized);

  return (
    <div class="page">
      <ListHeader title="Payments" onRefresh={res.reload} />
      <FilterPills label="Filter by status" options={STATUSES} current={status} onSelect={(s) => go({ status: s })} />
      <ListBody res={res} onPage={(p) => go({ page: p })} empty={(
        <EmptyList filtered={status && `No ${statusLabel(status).toLowerCase()} payments`} title="No payments yet" noun="payments" onShowAll={() => go({ status: '' })}>
          Payments created through the API show up here.
        </EmptyList>
      )}>
        {(payments) => (
          <table class="table" data-testid="payments-table">
            <thead><tr><th>Amount</th><th>Status</th><th>Payment</th><th>Attempts</th><th>Last error</th><th>Created</th></tr></thead>
            <tbody>
              {payments.map((p) => (
                <tr key={p.id} class="row-link" onClick={() => navigate(`/payments/${p.id}`)}>
                  <td class="amount"><Link to={`/payments/${p.id}`}>{money(p.amount, p.currency)}</Link></td>
                  <td><Status value={p.status} /></td>
                  <td><Id value={p.id} /></td>
                  <td class="num">{p.charges?.length ?? 0}</td>
                  <td>{p.last_error ? <span class="decline">{p.last_error.decline_code ?? p.last_error.code ?? 'error'}</span> : <span class="muted">—</span>}</td>
                  <td><Time value={p.created_at} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </ListBody>
    </div>
  );
}
