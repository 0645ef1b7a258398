import type { Client } from '../api';
import { Empty, ErrorState, Id, Link, Loading, Pager, Status, Time, useResource } from '../components';
import { humanize, money } from '../format';
import { navigate, qs } from '../router';

const STATUSES = ['PROCESSING', 'SUCCEEDED', 'AUTHORIZED', 'FAILED', 'CANCELED', 'CREATED', 'PARTIALLY_REFUNDED', 'REFUNDED'];
const LIMIT = 20;

export function PaymentList({ api, query, onUnauthorized }: { api: Client; query: URLSearchParams; onUnauthorized: () => void }) {
  const status = query.get('status') ?? '';
  const page = Math.max(1, Number(query.get('page')) || 1);
  const go = (next: { status?: string; page?: number }) => navigate(`/payments${qs({ status: next.status ?? status, page: next.page && next.page > 1 ? next.page : undefined })}`);
  const res = useResource(() => api.payments({ status: status || undefined, page, limit: LIMIT, include_charges: true }), [api.accountId, status, page], onUnauthorized);

  return (
    <div class="page">
      <div class="page-header">
        <h1>Payments</h1>
        <button type="button" class="btn btn-secondary" onClick={res.reload}>Refresh</button>
      </div>
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
            <Empty title={status ? `No ${humanize(status).toLowerCase()} payments` : 'No payments yet'}>
              {status ? <button type="button" class="btn btn-secondary" onClick={() => go({ status: '', page: 1 })}>Show all payments</button>
                : 'Payments created through the API show up here.'}
            </Empty>
          ) : (
            <table class="table" data-testid="payments-table">
              <thead><tr><th>Amount</th><th>Status</th><th>Payment</th><th>Attempts</th><th>Last error</th><th>Created</th></tr></thead>
              <tbody>
                {res.data.data.map((p) => (
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
      </div>
      {res.data ? <Pager page={res.data.page} hasMore={res.data.has_more} total={res.data.total} limit={res.data.limit} shown={res.data.data.length} onPage={(p) => go({ page: p })} /> : null}
    </div>
  );
}
