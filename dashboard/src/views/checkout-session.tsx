import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import type { CheckoutSession, Client, LineItem } from '../api';
import { type Action, CopyUrl, Empty, ErrorState, Fact, Id, Link, Loading, OutcomeNotice, Section, Status, Time, useAction, useResource } from '../components';
import { money, when } from '../format';

export function CheckoutSessionDetail({ api, id, onUnauthorized }: { api: Client; id: string; onUnauthorized: () => void }) {
  const res = useResource(() => api.checkoutSession(id), [api.accountId, id], onUnauthorized);
  // Its payment's own status; a credential without payment:read still sees the session.
  const payment = useResource(
    () => (res.data ? api.paymentSummary(res.data.payment_id) : Promise.resolve(undefined)),
    [api.accountId, res.data?.payment_id, res.data?.status],
  );
  // Here, not in Expire: the outcome stays on the page once the expired session no longer offers it.
  const expiry = useAction();

  if (res.error && !res.data) return <div class="page"><Back /><ErrorState error={res.error} retry={res.reload} /></div>;
  if (!res.data) return <div class="page"><Back /><Loading /></div>;
  const s = res.data;
  const reload = () => { res.reload(); payment.reload(); };

  return (
    <div class="page">
      <Back />
      <div class="detail-header">
        <div>
          <div class="detail-amount" data-testid="session-status">{money(s.amount, s.currency)} <Status value={s.status} /></div>
          <div class="detail-sub"><Id value={s.id} /> · created <Time value={s.created_at} /></div>
        </div>
        <div class="detail-actions">
          <button type="button" class="btn btn-secondary" onClick={reload}>Refresh</button>
        </div>
      </div>

      <StatusCallout session={s} />
      {s.status === 'OPEN' ? <Expire api={api} session={s} action={expiry} onDone={reload} /> : null}
      <OutcomeNotice outcome={expiry.outcome} />

      <div class="facts">
        <Fact label="Payment">
          <Link to={`/payments/${s.payment_id}`}><code>{s.payment_id}</code></Link>{' '}
          {payment.data ? <Status value={payment.data.status} /> : null}
        </Fact>
        <Fact label="Payment status"><Status value={s.payment_status} /></Fact>
        <Fact label="Customer">{s.customer_id ? <code>{s.customer_id}</code> : <span class="muted">—</span>}</Fact>
        <Fact label="Expiry">{when(s.expires_at)}</Fact>
        <Fact label="Updated"><Time value={s.updated_at} /></Fact>
      </div>

      <Section title="Line items" count={s.line_items?.length}>
        <LineItems items={s.line_items} amount={s.amount} currency={s.currency} />
      </Section>

      <Section title="URLs">
        <dl class="kv" data-testid="session-urls">
          <dt>Payment page</dt><dd><CopyUrl value={s.url} testId="session-url" /></dd>
          <dt>Success URL</dt><dd>{s.success_url ? <span class="url">{s.success_url}</span> : <span class="muted">—</span>}</dd>
          <dt>Cancel URL</dt><dd>{s.cancel_url ? <span class="url">{s.cancel_url}</span> : <span class="muted">—</span>}</dd>
        </dl>
      </Section>

      <Metadata metadata={s.metadata} />
    </div>
  );
}

function StatusCallout({ session: s }: { session: CheckoutSession }) {
  if (s.status === 'COMPLETE') return <div class="notice notice-ok">Complete: the customer paid; the payment below holds the charge.</div>;
  if (s.status === 'EXPIRED') return <div class="callout">Expired: the customer can no longer pay on its page, and its payment was canceled.</div>;
  return <div class="notice">Open: the customer can pay on its page until {when(s.expires_at)} (<Time value={s.expires_at} />).</div>;
}

/** "Expire session", confirmed first: the customer's page closes and the payment is canceled. */
function Expire({ api, session, action, onDone }: { api: Client; session: CheckoutSession; action: Action; onDone: () => void }) {
  const [asking, setAsking] = useState(false);
  const allowed = api.mayHave('checkout:write');
  const expire = () => action.run(async () => {
    setAsking(false);
    try {
      const after = await api.expireCheckoutSession(session.id);
      return after.status === 'EXPIRED' ? 'Session expired: its payment is canceled.' : `The session is ${after.status.toLowerCase()} and stays so.`;
    } finally {
      onDone();
    }
  });

  return (
    <div class="inline-form" data-testid="expire">
      {!asking ? (
        <button type="button" class="btn btn-secondary" disabled={!allowed || action.busy} onClick={() => setAsking(true)}
          title={allowed ? 'Close the payment page and cancel its payment' : 'Your credential lacks checkout:write'}>
          {action.busy ? 'Expiring…' : 'Expire session'}
        </button>
      ) : (
        <>
          <span>Expire this session? The customer can no longer pay, and its payment is canceled.</span>
          <button type="button" class="btn btn-primary" onClick={expire}>Expire now</button>
          <button type="button" class="btn btn-ghost" onClick={() => setAsking(false)}>Keep open</button>
        </>
      )}
      {!allowed ? <span class="muted small">Expiring needs the <code>checkout:write</code> permission, which this credential lacks.</span> : null}
    </div>
  );
}

/** What is bought and its total; a session or link made with an amount alone shows that amount. */
export function LineItems({ items, amount, currency }: { items: LineItem[] | null; amount: number; currency: string }) {
  if (!items?.length) return <Empty title="No line items">Created with an amount alone: {money(amount, currency)}.</Empty>;
  return (
    <table class="table" data-testid="line-items">
      <thead><tr><th>Item</th><th class="num">Quantity</th><th class="num">Unit price</th><th class="num">Amount</th></tr></thead>
      <tbody>
        {items.map((i, n) => (
          <tr key={`${i.name}-${n}`}>
            <td>{i.name}</td>
            <td class="num">{i.quantity}</td>
            <td class="num">{money(i.unit_amount, currency)}</td>
            <td class="num">{money(i.quantity * i.unit_amount, currency)}</td>
          </tr>
        ))}
        <tr><td colSpan={3}><strong>Total</strong></td><td class="num amount" data-testid="line-items-total">{money(amount, currency)}</td></tr>
      </tbody>
    </table>
  );
}

export function Metadata({ metadata }: { metadata: Record<string, string> }) {
  if (!Object.keys(metadata ?? {}).length) return null;
  return (
    <Section title="Metadata">
      <dl class="kv">{Object.entries(metadata).map(([k, v]) => <Fragment key={k}><dt>{k}</dt><dd>{String(v)}</dd></Fragment>)}</dl>
    </Section>
  );
}

function Back() {
  return <Link to="/checkout" class="back">← Checkout sessions</Link>;
}
