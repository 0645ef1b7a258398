import type { Client } from '../api';
import { Id, Link, Status, statusLabel, Time, useResource } from '../components';
import { lineSummary, money } from '../format';
import { EmptyList, FilterPills, LIST_LIMIT, ListBody, ListHeader, listPlace, statusOptions } from '../list';
import { navigate } from '../router';

const STATUSES = statusOptions(['OPEN', 'COMPLETE', 'EXPIRED']);

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
  const { filters: { status }, page, go } = listPlace('/checkout', query, ['status']);
  const res = useResource(() => api.checkoutSessions({ status: status || undefined, page, limit: LIST_LIMIT }), [api.accountId, status, page], onUnauthorized);

  return (
    <div class="page">
      <ListHeader title="Checkout sessions" onRefresh={res.reload} />
      <CheckoutTabs current="sessions" />
      <FilterPills label="Filter by status" options={STATUSES} current={status} onSelect={(s) => go({ status: s })} />
      <ListBody res={res} onPage={(p) => go({ page: p })} empty={(
        <EmptyList filtered={status && `No ${statusLabel(status).toLowerCase()} sessions`} title="No checkout sessions yet" noun="sessions" onShowAll={() => go({ status: '' })}>
          Sessions created with <code>POST /v1/checkout-sessions</code> or opened through a payment link show up here.
        </EmptyList>
      )}>
        {(sessions) => (
          <table class="table" data-testid="sessions-table">
            <thead><tr><th>Amount</th><th>Status</th><th>Session</th><th>Payment</th><th>Items</th><th>Created</th><th>Expires</th></tr></thead>
            <tbody>
              {sessions.map((s) => (
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
      </ListBody>
    </div>
  );
}

