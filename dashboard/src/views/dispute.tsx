import { ANSWERABLE_DISPUTE_STATUSES } from '../../../lib/providers/disputes';
import type { Client, Dispute } from '../api';
import { Empty, ErrorState, Fact, Id, Link, Loading, OutcomeNotice, Section, Status, Time, useAction, useResource } from '../components';
import { humanize, money, when } from '../format';
import { EvidenceForm, SavedEvidence } from './dispute-evidence';
import { TimeLeft } from './disputes';

export function DisputeDetail({ api, id, onUnauthorized }: { api: Client; id: string; onUnauthorized: () => void }) {
  const res = useResource(() => api.dispute(id), [api.accountId, id], onUnauthorized);
  // The payment's own status; a credential without payment:read still sees the dispute.
  const payment = useResource(
    () => (res.data ? api.paymentSummary(res.data.payment_id) : Promise.resolve(undefined)),
    [api.accountId, res.data?.payment_id],
  );
  const permissions = useResource(() => api.permissions().catch(() => null), [api.accountId]);
  // Here, not in the form: the outcome stays once the answered dispute no longer shows the form.
  const answer = useAction();

  if (res.error && !res.data) return <div class="page"><Back /><ErrorState error={res.error} retry={res.reload} /></div>;
  if (!res.data) return <div class="page"><Back /><Loading /></div>;
  const d = res.data;
  // Offered only to a credential the API says may answer; if it cannot say, until the API refuses.
  const mayWrite = permissions.loading ? false
    : permissions.data ? permissions.data.includes('dispute:write') : api.mayHave('dispute:write');
  const answerable = ANSWERABLE_DISPUTE_STATUSES.includes(d.status) && !d.evidence_submitted_at && !d.evidence_details.past_due;

  return (
    <div class="page">
      <Back />
      <div class="detail-header">
        <div>
          <div class="detail-amount" data-testid="dispute-status">{money(d.amount, d.currency)} <Status value={d.status} /></div>
          <div class="detail-sub"><Id value={d.id} /> · {d.is_inquiry ? 'inquiry' : 'chargeback'} opened <Time value={d.created_at} /></div>
        </div>
        <div class="detail-actions">
          <button type="button" class="btn btn-secondary" onClick={res.reload}>Refresh</button>
          {d.temporal ? (
            <a class="btn btn-secondary" href={d.temporal.ui_url} target="_blank" rel="noopener noreferrer" data-testid="temporal-link"
              title={`Workflow ${d.temporal.workflow_id} in namespace ${d.temporal.namespace}`}>Open workflow in Temporal UI ↗</a>
          ) : null}
        </div>
      </div>

      <StatusCallout dispute={d} />
      <OutcomeNotice outcome={answer.outcome} />

      <div class="facts">
        <Fact label="Payment">
          <Link to={`/payments/${d.payment_id}`}><code>{d.payment_id}</code></Link>{' '}
          {payment.data ? <Status value={payment.data.status} /> : null}
        </Fact>
        <Fact label="Reason">{humanize(d.reason)}</Fact>
        <Fact label="Respond by">{d.evidence_due_by ? <><TimeLeft dispute={d} /><div class="muted small">{when(d.evidence_due_by)}</div></> : <span class="muted">—</span>}</Fact>
        <Fact label="Evidence submitted">{d.evidence_submitted_at ? <Time value={d.evidence_submitted_at} /> : <span class="muted">Not yet</span>}</Fact>
        <Fact label="Charge"><code>{d.charge_id}</code></Fact>
        <Fact label="Provider config"><code>{d.payment_provider_config_id}</code></Fact>
        <Fact label="Processor's dispute id"><Id value={d.processor_dispute_id} /></Fact>
        {d.temporal ? <Fact label="Workflow"><code>{d.temporal.workflow_id}</code></Fact> : null}
        <Fact label="Updated"><Time value={d.updated_at} /></Fact>
      </div>

      <BalanceTransactions dispute={d} />
      {answerable && mayWrite
        ? <EvidenceForm key={d.updated_at} api={api} dispute={d} action={answer} onDone={res.reload} />
        : <SavedEvidence dispute={d} />}
    </div>
  );
}

/** What the dispute took from the balance and gave back, fees included. */
function BalanceTransactions({ dispute: d }: { dispute: Dispute }) {
  const net = d.balance_transactions.reduce((sum, t) => sum + (t.kind === 'withdrawn' ? -(t.amount + t.fee) : t.amount), 0);
  return (
    <Section title="Balance transactions" count={d.balance_transactions.length}>
      {!d.balance_transactions.length ? <Empty title="No money has moved">A chargeback withdraws the amount and a fee; winning it gives the amount back.</Empty> : (
        <table class="table" data-testid="balance-transactions">
          <thead><tr><th>Kind</th><th class="num">Amount</th><th class="num">Fee</th><th class="num">Net</th><th>When</th></tr></thead>
          <tbody>
            {d.balance_transactions.map((t, n) => (
              <tr key={`${t.kind}-${t.at}-${n}`} data-kind={t.kind}>
                <td><span class={`badge badge-${t.kind === 'withdrawn' ? 'red' : 'green'}`}>{humanize(t.kind)}</span></td>
                <td class="num">{money(t.kind === 'withdrawn' ? -t.amount : t.amount, t.currency)}</td>
                <td class="num">{t.fee ? money(-t.fee, t.currency) : '—'}</td>
                <td class="num amount">{money(t.kind === 'withdrawn' ? -(t.amount + t.fee) : t.amount, t.currency)}</td>
                <td><Time value={t.at} /></td>
              </tr>
            ))}
            <tr><td colSpan={3}><strong>Net</strong></td><td class="num amount" data-testid="balance-net">{money(net, d.currency)}</td><td /></tr>
          </tbody>
        </table>
      )}
    </Section>
  );
}

function StatusCallout({ dispute: d }: { dispute: Dispute }) {
  switch (d.status) {
    case 'WON': return <div class="notice notice-ok">Won: the processor decided for you{d.balance_transactions.some((t) => t.kind === 'reinstated') ? ' and the amount was given back' : ''}.</div>;
    case 'LOST': return <div class="callout callout-red">Lost: the cardholder keeps the amount, and the dispute fee is not returned.</div>;
    case 'WARNING_CLOSED': return <div class="callout">Inquiry closed: it ended without a chargeback; no money moved.</div>;
    case 'UNDER_REVIEW':
    case 'WARNING_UNDER_REVIEW': return <div class="notice">Under review: the evidence is with the processor, which decides the dispute.</div>;
    default: break;
  }
  if (d.evidence_details.past_due) {
    return <div class="callout callout-red" data-testid="overdue-callout">Overdue: the deadline passed {when(d.evidence_due_by)} without evidence; the processor takes no more answers.</div>;
  }
  return (
    <div class="callout callout-amber" data-testid="respond-callout">
      {d.is_inquiry ? 'The card issuer asks about this charge. Answering may keep it from becoming a chargeback. '
        : 'The cardholder disputed this charge and the amount was withdrawn. Submit evidence to contest it, or accept it. '}
      {d.evidence_due_by ? <>Answer by {when(d.evidence_due_by)}.</> : null}
    </div>
  );
}

function Back() {
  return <Link to="/disputes" class="back">← Disputes</Link>;
}
