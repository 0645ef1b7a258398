import type { Client, Invoice } from '../api';
import { type Action, CopyUrl, Empty, ErrorState, Fact, Id, Link, Loading, OutcomeNotice, Section, Status, Time, useAction, useResource } from '../components';
import { humanize, money, period, when } from '../format';

export function InvoiceDetail({ api, id, onUnauthorized }: { api: Client; id: string; onUnauthorized: () => void }) {
  const res = useResource(() => api.invoice(id), [api.accountId, id], onUnauthorized);
  // Its payment's own status; a credential without payment:read still sees the invoice.
  const payment = useResource(
    () => (res.data?.payment_id ? api.paymentSummary(res.data.payment_id) : Promise.resolve(undefined)),
    [api.accountId, res.data?.payment_id, res.data?.updated_at],
  );
  const permissions = useResource(() => api.permissions().catch(() => null), [api.accountId]);
  // Here, not in Retry: the outcome stays on the page once the paid invoice no longer offers it.
  const retry = useAction();

  if (res.error && !res.data) return <div class="page"><Back /><ErrorState error={res.error} retry={res.reload} /></div>;
  if (!res.data) return <div class="page"><Back /><Loading /></div>;
  const i = res.data;
  const reload = () => { res.reload(); payment.reload(); };
  // Offered only to a credential the API says may pay invoices; if it cannot say, until the API refuses.
  const mayRetry = permissions.loading ? false
    : permissions.data ? permissions.data.includes('billing:write') : api.mayHave('billing:write');

  return (
    <div class="page">
      <Back />
      <div class="detail-header">
        <div>
          <div class="detail-amount" data-testid="invoice-status">{money(i.amount_due, i.currency)} <Status value={i.status} /></div>
          <div class="detail-sub"><Id value={i.id} /> · created <Time value={i.created_at} /></div>
        </div>
        <div class="detail-actions">
          <button type="button" class="btn btn-secondary" onClick={reload}>Refresh</button>
          {i.status === 'OPEN' && mayRetry ? <RetryNow api={api} invoice={i} action={retry} onDone={reload} /> : null}
        </div>
      </div>

      <StatusCallout invoice={i} />
      <OutcomeNotice outcome={retry.outcome} />

      <div class="facts">
        <Fact label="Subscription"><Link to={`/billing/subscriptions/${i.subscription_id}`}><code>{i.subscription_id}</code></Link></Fact>
        <Fact label="Customer"><code>{i.customer_id}</code></Fact>
        <Fact label="Period">{period(i.period_start, i.period_end)}</Fact>
        <Fact label="Reason">{humanize(i.billing_reason)}</Fact>
        <Fact label="Payment">
          {i.payment_id ? <><Link to={`/payments/${i.payment_id}`}><code>{i.payment_id}</code></Link>{' '}{payment.data ? <Status value={payment.data.status} /> : null}</>
            : <span class="muted">—</span>}
        </Fact>
        <Fact label="Next payment attempt">{i.next_payment_attempt ? <Time value={i.next_payment_attempt} /> : <span class="muted">—</span>}</Fact>
        {i.finalized_at ? <Fact label="Finalized"><Time value={i.finalized_at} /></Fact> : null}
        {i.paid_at ? <Fact label="Paid"><Time value={i.paid_at} /></Fact> : null}
        {i.voided_at ? <Fact label="Voided"><Time value={i.voided_at} /></Fact> : null}
      </div>

      <Section title="Amounts">
        <dl class="kv" data-testid="invoice-amounts">
          <dt>Subtotal</dt><dd>{money(i.subtotal, i.currency)}</dd>
          <dt>Amount due</dt><dd>{money(i.amount_due, i.currency)}</dd>
          <dt>Amount paid</dt><dd>{money(i.amount_paid, i.currency)}</dd>
          <dt>Amount remaining</dt><dd>{money(i.amount_remaining, i.currency)}</dd>
          {i.hosted_payment_url ? <><dt>Hosted payment page</dt><dd><CopyUrl value={i.hosted_payment_url} testId="hosted-payment-url" /></dd></> : null}
        </dl>
      </Section>

      <Lines invoice={i} />
      <Attempts invoice={i} />
    </div>
  );
}

/** What the invoice bills: a line per item and period, prorations marked. */
function Lines({ invoice: i }: { invoice: Invoice }) {
  return (
    <Section title="Lines" count={i.lines.length}>
      {!i.lines.length ? <Empty title="No lines" /> : (
        <table class="table" data-testid="invoice-lines">
          <thead><tr><th>Description</th><th>Price</th><th class="num">Quantity</th><th>Period</th><th class="num">Amount</th></tr></thead>
          <tbody>
            {i.lines.map((l, n) => (
              <tr key={`${l.price_id}-${n}`}>
                <td>{l.description}{l.proration ? <> <span class="badge badge-purple">proration</span></> : null}</td>
                <td><code>{l.price_id}</code></td>
                <td class="num">{l.quantity}</td>
                <td>{period(l.period_start, l.period_end)}</td>
                <td class="num">{money(l.amount, i.currency)}</td>
              </tr>
            ))}
            <tr><td colSpan={4}><strong>Total</strong></td><td class="num amount">{money(i.subtotal, i.currency)}</td></tr>
          </tbody>
        </table>
      )}
    </Section>
  );
}

/** Each try at paying the invoice, each linking to its payment. */
function Attempts({ invoice: i }: { invoice: Invoice }) {
  return (
    <Section title="Payment attempts" count={i.attempts.length}>
      {!i.attempts.length ? <Empty title="No attempts yet">An invoice is paid by a payment on the subscription's saved card once it is finalized.</Empty> : (
        <table class="table" data-testid="invoice-attempts">
          <thead><tr><th>Attempt</th><th>Payment</th><th>Status</th><th>Decline code</th><th>When</th></tr></thead>
          <tbody>
            {i.attempts.map((a, n) => (
              <tr key={a.payment_id} data-attempt={a.payment_id}>
                <td class="num">#{n + 1}</td>
                <td><Link to={`/payments/${a.payment_id}`}><code>{a.payment_id}</code></Link></td>
                <td><Status value={a.status} /></td>
                <td>{a.decline_code ? <span class="decline">{a.decline_code}</span> : <span class="muted">—</span>}</td>
                <td><Time value={a.at} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </Section>
  );
}

function StatusCallout({ invoice: i }: { invoice: Invoice }) {
  if (i.status === 'PAID') return <div class="notice notice-ok">Paid {when(i.paid_at)}: the payment below holds the charge.</div>;
  if (i.status === 'VOID') return <div class="callout">Void: nothing is owed and nothing more is tried.</div>;
  if (i.status === 'UNCOLLECTIBLE') return <div class="callout callout-red">Uncollectible: written off; nothing more is tried.</div>;
  if (i.status === 'DRAFT') return <div class="notice">Draft: it is finalized and paid when its period's renewal runs.</div>;
  return (
    <div class="callout callout-amber" data-testid="open-callout">
      Open: {i.attempt_count ? `${i.attempt_count} attempt${i.attempt_count === 1 ? '' : 's'} so far. ` : ''}
      {i.next_payment_attempt ? <>Dunning tries again {when(i.next_payment_attempt)} (<Time value={i.next_payment_attempt} />).</> : 'Its payment is under way or waits for the customer.'}
    </div>
  );
}

/** "Retry now": asks the subscription to pay the invoice at once instead of at its next scheduled attempt. */
function RetryNow({ api, invoice, action, onDone }: { api: Client; invoice: Invoice; action: Action; onDone: () => void }) {
  const run = () => action.run(async () => {
    try {
      const after = await api.payInvoice(invoice.id);
      return after.status === 'PAID' ? 'Paid: the retry succeeded.' : `Retried: the invoice is ${after.status.toLowerCase()} (attempt ${after.attempt_count}).`;
    } finally {
      onDone();
    }
  });
  return (
    <button type="button" class="btn btn-primary" disabled={action.busy} onClick={run} title="Pay this invoice now with the subscription's card">
      {action.busy ? 'Retrying…' : 'Retry now'}
    </button>
  );
}

function Back() {
  return <Link to="/billing/invoices" class="back">← Invoices</Link>;
}
