import { Fragment, type ComponentChildren } from 'preact';
import type { Client, Payment } from '../api';
import { Empty, ErrorState, Id, Link, Loading, Section, Status, Time, useResource } from '../components';
import { duration, humanize, money, relative, when } from '../format';

export function PaymentDetail({ api, id, onUnauthorized }: { api: Client; id: string; onUnauthorized: () => void }) {
  const res = useResource(async () => {
    const [payment, configs] = await Promise.all([
      api.payment(id),
      // Names for the routing candidates; the page still works with ids alone.
      api.providerConfigs().then((r) => new Map(r.data.map((c) => [c.id, c.name])), () => new Map<string, string>()),
    ]);
    return { payment, configs };
  }, [api.accountId, id], onUnauthorized);

  if (res.error) return <div class="page"><Back /><ErrorState error={res.error} retry={res.reload} /></div>;
  if (!res.data) return <div class="page"><Back /><Loading /></div>;
  const { payment: p, configs } = res.data;
  const name = (configId: string | null) => (configId && configs.get(configId)) || p.charges?.find((c) => c.payment_provider_config_id === configId)?.payment_provider_config_snapshot?.name;

  return (
    <div class="page">
      <Back />
      <div class="detail-header">
        <div>
          <div class="detail-amount">{money(p.amount, p.currency)} <Status value={p.status} /></div>
          <div class="detail-sub"><Id value={p.id} /> · created <Time value={p.created_at} /></div>
        </div>
        <div class="detail-actions">
          <button type="button" class="btn btn-secondary" onClick={res.reload}>Refresh</button>
          {p.temporal ? (
            <a class="btn btn-primary" href={p.temporal.ui_url} target="_blank" rel="noopener noreferrer" data-testid="temporal-link"
              title={`Workflow ${p.temporal.workflow_id} in namespace ${p.temporal.namespace}`}>Open workflow in Temporal UI ↗</a>
          ) : null}
        </div>
      </div>

      {p.status === 'PROCESSING' ? (
        <div class="callout callout-amber">This payment is still processing. If it stays here, an attempt's outcome may be unknown and is being reconciled with the provider: open the workflow in the Temporal UI for its current state.</div>
      ) : null}
      {p.status === 'REQUIRES_ACTION' && p.next_action ? (
        <div class="callout callout-amber" data-testid="next-action">
          Waiting for the customer to authenticate (3-D Secure) since <Time value={p.next_action.since} /> — {relative(p.next_action.since)}.
          The payment fails with <code>authentication_timeout</code> if the customer does not finish in time; it can be canceled meanwhile.
        </div>
      ) : null}
      {p.pending_operation ? (
        <div class="callout callout-amber" data-testid="pending-operation">
          The processor received a {p.pending_operation.type} <Time value={p.pending_operation.requested_at} /> and confirms it by notification; the payment moves on then.
        </div>
      ) : null}
      {p.last_error ? (
        <div class="callout callout-red">Last error: <strong>{p.last_error.decline_code ?? p.last_error.code}</strong>{p.last_error.message ? ` — ${p.last_error.message}` : ''}</div>
      ) : null}

      <div class="facts">
        <Fact label="Amount received">{money(p.amount_received, p.currency)}</Fact>
        <Fact label="Capturable">{money(p.amount_capturable, p.currency)}</Fact>
        <Fact label="Refunded">{money(p.amount_refunded, p.currency)}</Fact>
        <Fact label="Capture">{p.auto_capture ? 'Automatic' : 'Manual'}</Fact>
        <Fact label="Installments">{p.installments}</Fact>
        <Fact label="Customer">{p.customer ? (p.customer.name ?? p.customer.email ?? p.customer.id) : <span class="muted">—</span>}</Fact>
        <Fact label="Payment method"><Id value={p.payment_method_id} /></Fact>
        {p.checkout_session_id ? <Fact label="Checkout session"><Link to={`/checkout/sessions/${p.checkout_session_id}`}>{p.checkout_session_id}</Link></Fact> : null}
        <Fact label="Updated"><Time value={p.updated_at} /></Fact>
        {p.cancellation_reason ? <Fact label="Canceled because">{humanize(p.cancellation_reason)}</Fact> : null}
        {p.temporal ? <Fact label="Workflow"><code>{p.temporal.workflow_id}</code></Fact> : null}
      </div>

      <Section title="Charges" count={p.charges?.length ?? 0}>
        {!p.charges?.length ? <Empty title="No charges yet">A charge is made for each provider the payment is tried on, once it is confirmed.</Empty> : (
          <table class="table" data-testid="charges-table">
            <thead><tr><th>Attempt</th><th>Provider config</th><th>Status</th><th>Decline code</th><th class="num">Duration</th><th>Charge</th><th>Created</th></tr></thead>
            <tbody>
              {p.charges.map((c) => (
                <tr key={c.id} data-charge={c.id}>
                  <td class="num">#{c.attempt_no}</td>
                  <td>
                    <div>{c.payment_provider_config_snapshot?.name ?? name(c.payment_provider_config_id) ?? '—'}</div>
                    <div class="muted small">{c.payment_provider_config_snapshot?.provider?.name ?? ''} <code>{c.payment_provider_config_id}</code></div>
                  </td>
                  <td><Status value={c.status} /></td>
                  <td>{c.decline_code ? <span class="decline">{c.decline_code}</span> : <span class="muted">—</span>}</td>
                  <td class="num">{duration(c.performance?.duration)}</td>
                  <td><Id value={c.id} /></td>
                  <td><Time value={c.created_at} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>

      <RoutingPlanSection payment={p} name={name} />
      <Timeline events={p.events} />

      {Object.keys(p.metadata ?? {}).length ? (
        <Section title="Metadata">
          <dl class="kv">{Object.entries(p.metadata).map(([k, v]) => <Fragment key={k}><dt>{k}</dt><dd>{v}</dd></Fragment>)}</dl>
        </Section>
      ) : null}
    </div>
  );
}

/** The candidates the payment was routed over, best first, each beside the charge its attempt made. */
function RoutingPlanSection({ payment: p, name }: { payment: Payment; name: (configId: string | null) => string | undefined }) {
  const plan = p.routing_plans?.[0];
  return (
    <Section title="Routing plan" count={plan?.candidates.length}>
      {!plan ? <Empty title="Not routed yet">The routing plan is built when the payment is confirmed.</Empty> : plan.candidates.length === 0 ? (
        <Empty title="No eligible provider">No active provider config matched this payment.</Empty>
      ) : (
        <ol class="candidates" data-testid="routing-plan">
          {plan.candidates.map((c, i) => {
            const charge = p.charges?.find((ch) => ch.attempt_no === i + 1);
            const current = plan.current_index === i;
            return (
              <li key={`${c.payment_provider_config_id}-${i}`} class={current ? 'current' : ''}>
                <span class="rank">{i + 1}</span>
                <div class="cand-main">
                  <div>{name(c.payment_provider_config_id) ?? c.payment_provider_config_id} {current ? <span class="badge badge-blue">current</span> : null}</div>
                  <div class="muted small"><code>{c.payment_provider_config_id}</code>{c.reason ? ` · ${c.reason}` : ''}</div>
                  {c.ranking ? <div class="small" data-testid="ranking">{humanize(c.ranking.strategy)}: {c.ranking.note}</div> : null}
                </div>
                <div class="cand-fee">{c.estimated_fee !== null ? <>est. fee {money(c.estimated_fee, p.currency)}</> : <span class="muted">fee unknown</span>}</div>
                <div class="cand-outcome">{charge ? <Status value={charge.status} /> : <span class="muted small">not tried</span>}</div>
              </li>
            );
          })}
        </ol>
      )}
    </Section>
  );
}

function Timeline({ events }: { events: Payment['events'] }) {
  return (
    <Section title="Timeline" count={events?.length ?? 0}>
      {!events?.length ? <Empty title="No events" /> : (
        <ol class="timeline" data-testid="timeline">
          {[...events].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id)).map((e) => (
            <li key={e.id} class={`tl-${e.event.split('.').pop()}`}>
              <div class="tl-dot" />
              <div class="tl-body">
                <div class="tl-title">{humanize(e.event)} <code class="muted small">{e.event}</code></div>
                <div class="muted small">{when(e.created_at)}{e.actor_type ? ` · by ${e.actor_type}${e.actor_id ? ` ${e.actor_id}` : ''}` : ''}{e.charge_id ? ` · ${e.charge_id}` : ''}</div>
              </div>
            </li>
          ))}
        </ol>
      )}
    </Section>
  );
}

function Fact({ label, children }: { label: string; children: ComponentChildren }) {
  return <div class="fact"><div class="fact-label">{label}</div><div class="fact-value">{children}</div></div>;
}

function Back() {
  return <Link to="/payments" class="back">← Payments</Link>;
}

