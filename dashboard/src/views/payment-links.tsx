import type { Client, PaymentLink } from '../api';
import { CopyUrl, ErrorState, Fact, Id, Link, Loading, OutcomeNotice, Section, Status, Time, useAction, useResource } from '../components';
import { lineSummary, money } from '../format';
import { EmptyList, FilterPills, LIST_LIMIT, ListBody, ListHeader, listPlace, type FilterOption } from '../list';
import { navigate } from '../router';
import { CheckoutTabs } from './checkout-sessions';
import { LineItems, Metadata } from './checkout-session';

const FILTERS: FilterOption[] = [{ value: 'true', label: 'Active' }, { value: 'false', label: 'Inactive' }];

const linkStatus = (l: PaymentLink) => (l.active ? 'active' : 'inactive');

export function PaymentLinkList({ api, query, onUnauthorized }: { api: Client; query: URLSearchParams; onUnauthorized: () => void }) {
  const { filters: { active }, page, go } = listPlace('/checkout/links', query, ['active']);
  const res = useResource(() => api.paymentLinks({ active: active || undefined, page, limit: LIST_LIMIT }), [api.accountId, active, page], onUnauthorized);

  return (
    <div class="page">
      <ListHeader title="Payment links" onRefresh={res.reload} />
      <CheckoutTabs current="links" />
      <FilterPills label="Filter links" options={FILTERS} current={active} onSelect={(a) => go({ active: a })} />
      <ListBody res={res} onPage={(p) => go({ page: p })} empty={(
        <EmptyList filtered={active && `No ${active === 'true' ? 'active' : 'inactive'} payment links`} title="No payment links yet" noun="links" onShowAll={() => go({ active: '' })}>
          Links created with <code>POST /v1/payment-links</code> show up here.
        </EmptyList>
      )}>
        {(links) => (
          <table class="table" data-testid="links-table">
            <thead><tr><th>Amount</th><th>Status</th><th>URL</th><th>Link</th><th>Items</th><th>Created</th></tr></thead>
            <tbody>
              {links.map((l) => (
                <tr key={l.id} class="row-link" data-link={l.id} onClick={() => navigate(`/checkout/links/${l.id}`)}>
                  <td class="amount"><Link to={`/checkout/links/${l.id}`}>{money(l.amount, l.currency)}</Link></td>
                  <td><Status value={linkStatus(l)} /></td>
                  <td><CopyUrl value={l.url} /></td>
                  <td><Id value={l.id} /></td>
                  <td>{lineSummary(l.line_items)}</td>
                  <td><Time value={l.created_at} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </ListBody>
    </div>
  );
}

export function PaymentLinkDetail({ api, id, onUnauthorized }: { api: Client; id: string; onUnauthorized: () => void }) {
  const res = useResource(() => api.paymentLink(id), [api.accountId, id], onUnauthorized);
  const action = useAction();

  if (res.error && !res.data) return <div class="page"><Back /><ErrorState error={res.error} retry={res.reload} /></div>;
  if (!res.data) return <div class="page"><Back /><Loading /></div>;
  const l = res.data;
  const allowed = api.mayHave('checkout:write');
  const toggle = () => action.run(async () => {
    try {
      const after = await api.setPaymentLinkActive(l.id, !l.active);
      return after.active ? 'Link enabled: each visit opens a new checkout session again.' : 'Link disabled: its URL now answers that it is no longer available.';
    } finally {
      res.reload();
    }
  });

  return (
    <div class="page">
      <Back />
      <div class="detail-header">
        <div>
          <div class="detail-amount" data-testid="link-status">{money(l.amount, l.currency)} <Status value={linkStatus(l)} /></div>
          <div class="detail-sub"><Id value={l.id} /> · created <Time value={l.created_at} /></div>
        </div>
        <div class="detail-actions">
          <button type="button" class="btn btn-secondary" onClick={res.reload}>Refresh</button>
          <button type="button" class={`btn ${l.active ? 'btn-secondary' : 'btn-primary'}`} disabled={!allowed || action.busy} onClick={toggle}
            title={allowed ? '' : 'Your credential lacks checkout:write'}>
            {action.busy ? 'Saving…' : l.active ? 'Disable link' : 'Enable link'}
          </button>
        </div>
      </div>
      <OutcomeNotice outcome={action.outcome} />
      {!allowed ? <div class="callout">Changing a link needs the <code>checkout:write</code> permission, which this credential lacks.</div> : null}

      <div class="facts">
        <Fact label="URL"><CopyUrl value={l.url} testId="link-url" /></Fact>
        <Fact label="Success URL">{l.success_url ? <span class="url">{l.success_url}</span> : <span class="muted">—</span>}</Fact>
        <Fact label="Updated"><Time value={l.updated_at} /></Fact>
      </div>
      {!l.active ? <div class="callout">Inactive: a visit to its URL opens no session and says the link is no longer available.</div> : null}

      <Section title="Line items" count={l.line_items?.length}>
        <LineItems items={l.line_items} amount={l.amount} currency={l.currency} />
      </Section>
      <Metadata metadata={l.metadata} />
    </div>
  );
}

function Back() {
  return <Link to="/checkout/links" class="back">← Payment links</Link>;
}
