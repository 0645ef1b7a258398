import type { Client, Price, Subscription } from '../api';
import { Empty, ErrorState, Fact, Id, Link, Loading, Section, Status, Time, useResource } from '../components';
import { date, money, period, when } from '../format';
import { Metadata } from './checkout-session';
import { InvoiceTable } from './invoices';
import { NextRenewal } from './subscriptions';

export function SubscriptionDetail({ api, id, onUnauthorized }: { api: Client; id: string; onUnauthorized: () => void }) {
  const res = useResource(() => api.subscription(id), [api.accountId, id], onUnauthorized);
  const invoices = useResource(() => api.invoices({ subscription_id: id, limit: 100 }), [api.accountId, id, res.data?.updated_at]);
  // What each item costs; the page still works with price ids alone.
  const prices = useResource(async () => {
    const ids = [...new Set(res.data?.items.map((i) => i.price_id) ?? [])];
    const found = await Promise.all(ids.map((p) => api.price(p).catch(() => undefined)));
    return new Map(found.filter((p): p is Price => p !== undefined).map((p) => [p.id, p]));
  }, [api.accountId, res.data?.items.map((i) => i.price_id).join()]);

  if (res.error && !res.data) return <div class="page"><Back /><ErrorState error={res.error} retry={res.reload} /></div>;
  if (!res.data) return <div class="page"><Back /><Loading /></div>;
  const s = res.data;
  const reload = () => { res.reload(); invoices.reload(); };

  return (
    <div class="page">
      <Back />
      <div class="detail-header">
        <div>
          <div class="detail-amount" data-testid="subscription-status">{perPeriod(s, prices.data) ?? 'Subscription'} <Status value={s.status} /></div>
          <div class="detail-sub"><Id value={s.id} /> · customer <code>{s.customer_id}</code> · created <Time value={s.created_at} /></div>
        </div>
        <div class="detail-actions">
          <button type="button" class="btn btn-secondary" onClick={reload}>Refresh</button>
          {s.temporal ? (
            <a class="btn btn-primary" href={s.temporal.ui_url} target="_blank" rel="noopener noreferrer" data-testid="temporal-link"
              title={`Workflow ${s.temporal.workflow_id} in namespace ${s.temporal.namespace}`}>Open workflow in Temporal UI ↗</a>
          ) : null}
        </div>
      </div>

      <StatusCallout sub={s} />

      <div class="facts">
        <Fact label="Current period">{period(s.current_period_start, s.current_period_end)}</Fact>
        <Fact label="Next renewal"><NextRenewal sub={s} /></Fact>
        <Fact label="Trial ends">{s.trial_end ? date(s.trial_end) : <span class="muted">No trial</span>}</Fact>
        <Fact label="Cancel at period end">{s.cancel_at_period_end ? 'Yes' : 'No'}</Fact>
        <Fact label="Collection">{s.pause_collection ? `Paused${s.pause_collection.resumes_at ? ` until ${date(s.pause_collection.resumes_at)}` : ''}` : 'Active'}</Fact>
        <Fact label="Payment method"><Id value={s.default_payment_method_id} /></Fact>
        {s.latest_invoice_id ? <Fact label="Latest invoice"><Link to={`/billing/invoices/${s.latest_invoice_id}`}><code>{s.latest_invoice_id}</code></Link></Fact> : null}
        {s.test_clock_id ? <Fact label="Test clock"><code>{s.test_clock_id}</code></Fact> : null}
        {s.canceled_at ? <Fact label="Canceled"><Time value={s.canceled_at} /></Fact> : null}
        {s.ended_at ? <Fact label="Ended"><Time value={s.ended_at} /></Fact> : null}
        {s.temporal ? <Fact label="Workflow"><code>{s.temporal.workflow_id}</code></Fact> : null}
        <Fact label="Updated"><Time value={s.updated_at} /></Fact>
      </div>

      <Section title="Items" count={s.items.length}>
        <table class="table" data-testid="items-table">
          <thead><tr><th>Item</th><th>Price</th><th class="num">Quantity</th><th class="num">Unit price</th><th class="num">Per period</th></tr></thead>
          <tbody>
            {s.items.map((i) => {
              const price = prices.data?.get(i.price_id);
              return (
                <tr key={i.id} data-item={i.id}>
                  <td><code>{i.id}</code></td>
                  <td><code>{i.price_id}</code>{price ? <div class="muted small">{every(price)}</div> : null}</td>
                  <td class="num">{i.quantity}</td>
                  <td class="num">{price ? money(price.unit_amount, price.currency) : '—'}</td>
                  <td class="num">{price ? money(price.unit_amount * i.quantity, price.currency) : '—'}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </Section>

      <Section title="Invoices" count={invoices.data?.data.length}>
        {invoices.error ? <ErrorState error={invoices.error} retry={invoices.reload} />
          : !invoices.data ? <Loading />
          : invoices.data.data.length === 0 ? <Empty title="No invoices yet">The first is made when the subscription starts (or its trial ends).</Empty>
          : <InvoiceTable invoices={invoices.data.data} />}
      </Section>

      <Metadata metadata={s.metadata} />
    </div>
  );
}

function StatusCallout({ sub: s }: { sub: Subscription }) {
  switch (s.status) {
    case 'INCOMPLETE': return <div class="callout callout-amber">Incomplete: its first invoice is not paid yet. Unpaid 23 hours after creation, it expires.</div>;
    case 'PAST_DUE': return <div class="callout callout-red">Past due: a renewal failed and dunning retries it on schedule; the open invoice says when it tries next.</div>;
    case 'UNPAID': return <div class="callout callout-red">Unpaid: dunning ran out. The subscription is kept but not billed until its invoice is paid.</div>;
    case 'TRIALING': return <div class="notice">Trialing until {when(s.trial_end)}: the first charge is made then.</div>;
    case 'CANCELED': return <div class="callout">Canceled{s.ended_at ? ` on ${when(s.ended_at)}` : ''}: it bills nothing more.</div>;
    case 'INCOMPLETE_EXPIRED': return <div class="callout">Expired: its first invoice was never paid, so it never started.</div>;
    default: return s.cancel_at_period_end ? <div class="notice">Cancels at the end of this period, on {when(s.current_period_end)}.</div> : null;
  }
}

/** What a period costs (`$19.00 / month`), once every item's price is known. */
function perPeriod(s: Subscription, prices: Map<string, Price> | undefined): string | undefined {
  const priced = s.items.map((i) => ({ item: i, price: prices?.get(i.price_id) }));
  if (!priced.length || priced.some((p) => !p.price)) return undefined;
  const total = priced.reduce((sum, p) => sum + p.price!.unit_amount * p.item.quantity, 0);
  const { interval, interval_count: n } = priced[0].price!.recurring;
  return `${money(total, s.currency)} / ${n === 1 ? interval : `${n} ${interval}s`}`;
}

/** `Every month`, `Every 3 months`. */
function every(price: Price): string {
  const { interval, interval_count: n } = price.recurring;
  return n === 1 ? `Every ${interval}` : `Every ${n} ${interval}s`;
}

function Back() {
  return <Link to="/billing" class="back">← Subscriptions</Link>;
}
