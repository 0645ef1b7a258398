import type { Client } from '../api';
import { Empty, ErrorState, Id, Link, Loading, Pager, Status, Time, useResource } from '../components';
import { humanize, lineSummary, money } from '../format';
import { navigate, qs } from '../router';

const STATUSES = ['OPEN', 'COMPLETE', 'EXPIRED'];
const LIMIT = 20;

/** The two lists of the Checkout section. */
export function CheckoutTabs({ current }: { current: 'sessions' | 'links' }) {
  return (
    <nav class="filters" aria-label="Checkout">
      <Link to="/checkout" class={`pill ${current === 'sessions' ? 'active' : ''}`}>Sessions</Link>
      <Link to="/checkout/links" class={`pill ${current === 'links' ? 'active' : ''}`}>Payment links</Link>
    </nav>
  );
}

export function CheckoutSessionList({ api, query, onUnauthorized }: { api: Client; query: URLSearchParams; onUnauthorized: () => void }) {
  const status = query.get('status') ?? '';
  const page = Math.max(1, Number(query.get('page')) || 1);
  const go = (next: { status?: string; page?: number }) => navigate(`/checkout${qs({ status: next.status ?? status, page: next.page && next.page > 1 ? next.page : undefined })}`);
  const res = useResource(() => api.checkoutSessions({ status: status || undefined, page, limit: LIMIT }), [api.accountId, status, page], onUnauthorized);

  return (
    <div class="page">
      <div class="page-header">
        <h1>Checkout sessions</h1>
        <button type="button" class="btn btn-secondary" onClick={res.reload}>Refresh</button>
      </div>
      <CheckoutTabs current="sessions" />
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
            <Empty title={status ? `No ${humanize(status).toLowerCase()} sessions` : 'No checkout sessions yet'}>
              {status ? <button type="button" class="btn btn-secondary" onClick={() => go({ status: '', page: 1 })}>Show all sessions</button>
                : <>Sessions created with <code>POST /v1/checkout-sessions</code> or opened through a payment link show up here.</>}
            </Empty>
          ) : (
            <table class="table" data-testid="sessions-table">
              <thead><tr><th>Amount</th><th>Status</th><th>Session</th><th>Payment</th><th>Items</th><th>Created</th><th>Expires</th></tr></thead>
              <tbody>
                {res.data.data.map((s) => (
                  <tr key={s.id} class="row-link" data-session={s.id} onClick={() => navigate(`/checkout/sessions/${s.id}`)}>
                    <td class="amount"><Link to={`/checkout/sessions/${s.id}`}>{money(s.amount, s.currency)}</Link></td>
                    <td><Status value={s.status} /></td>
                    <td><Id value={s.id} /></td>
                    {/* Its own link: a click here opens the payment, not the session. */}
                    <td onClick={(e) => e.stopPropagation()}>
                      <Link to={`/payments/${s.payment_id}`} class="payment-link"><code>{s.payment_id}</code></Link>
                      <div><Status value={s.payment_status} /></div>
                    </td>
                    <td>{lineSummary(s.line_items)}</td>
                    <td><Time value={s.created_at} /></td>
                    <td>{s.status === 'OPEN' ? <Time value={s.expires_at} /> : <span class="muted">—</span>}</td>
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

