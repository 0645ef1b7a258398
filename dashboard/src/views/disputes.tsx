import { ANSWERABLE_DISPUTE_STATUSES } from '../../../lib/providers/disputes';
import type { Client, Dispute } from '../api';
import { Id, Link, Status, statusLabel, Time, useResource } from '../components';
import { humanize, money, timeLeft, when } from '../format';
import { EmptyList, FilterPills, LIST_LIMIT, ListBody, ListHeader, listPlace, statusOptions } from '../list';
import { navigate } from '../router';

// Those owing an answer first: they are what an operator opens this page for.
const STATUSES = statusOptions(['NEEDS_RESPONSE', 'WARNING_NEEDS_RESPONSE', 'UNDER_REVIEW', 'WARNING_UNDER_REVIEW', 'WON', 'LOST', 'WARNING_CLOSED']);
/** Under this long left, the deadline shows red: the reminder (3 days before) has gone out by then. */
const URGENT_MS = 3 * 86_400_000;

export function DisputeList({ api, query, onUnauthorized }: { api: Client; query: URLSearchParams; onUnauthorized: () => void }) {
  const { filters: { status }, page, go } = listPlace('/disputes', query, ['status']);
  const res = useResource(() => api.disputes({ status: status || undefined, page, limit: LIST_LIMIT }), [api.accountId, status, page], onUnauthorized);

  return (
    <div class="page">
      <ListHeader title="Disputes" sub="Chargebacks and inquiries from every processor, with the time left to answer each." onRefresh={res.reload} />
      <FilterPills label="Filter by status" options={STATUSES} current={status} onSelect={(s) => go({ status: s })} />
      <ListBody res={res} onPage={(p) => go({ page: p })} empty={(
        <EmptyList filtered={status && `No disputes that are ${statusLabel(status).toLowerCase()}`} title="No disputes" noun="disputes" onShowAll={() => go({ status: '' })}>
          When a cardholder disputes a charge, the processor tells us and it shows up here.
        </EmptyList>
      )}>
        {(disputes) => <DisputeTable disputes={disputes} />}
      </ListBody>
    </div>
  );
}

/** Disputes as rows: amount, status, reason, time left to answer and the disputed payment. */
export function DisputeTable({ disputes }: { disputes: Dispute[] }) {
  return (
    <table class="table" data-testid="disputes-table">
      <thead>
        <tr><th>Amount</th><th>Status</th><th>Reason</th><th>Respond by</th><th>Dispute</th><th>Payment</th><th>Opened</th></tr>
      </thead>
      <tbody>
        {disputes.map((d) => (
          <tr key={d.id} class="row-link" data-dispute={d.id} onClick={() => navigate(`/disputes/${d.id}`)}>
            <td class="amount"><Link to={`/disputes/${d.id}`}>{money(d.amount, d.currency)}</Link></td>
            <td><Status value={d.status} /></td>
            <td>{humanize(d.reason)}{d.is_inquiry ? <span class="muted small"> · inquiry</span> : null}</td>
            <td data-testid="time-left"><TimeLeft dispute={d} /></td>
            <td><Id value={d.id} /></td>
            <td onClick={(e) => e.stopPropagation()}><Link to={`/payments/${d.payment_id}`} class="payment-link"><code>{d.payment_id}</code></Link></td>
            <td><Time value={d.created_at} /></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** How long the merchant has to answer: "overdue" past the deadline; nothing once answered or decided. */
export function TimeLeft({ dispute: d, now = Date.now() }: { dispute: Dispute; now?: number }) {
  const due = d.evidence_due_by;
  if (!due || !ANSWERABLE_DISPUTE_STATUSES.includes(d.status)) return <span class="muted">—</span>;
  if (d.evidence_submitted_at) return <span class="muted">Answered</span>;
  const left = timeLeft(due, now);
  if (!left || d.evidence_details.past_due) return <span class="badge badge-red" data-due="overdue" title={`Was due ${when(due)}`}>Overdue</span>;
  const urgent = new Date(due).getTime() - now < URGENT_MS;
  return <span class={urgent ? 'due due-urgent' : 'due'} data-due={urgent ? 'urgent' : 'open'} title={`Due ${when(due)}`}>{left} left</span>;
}
