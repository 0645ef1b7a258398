import { useState } from 'preact/hooks';
import type { Client } from '../api';
import { Empty, ErrorState, Id, Link, Loading, Section, Status, Time, useResource } from '../components';
import { humanize, toLocalInput } from '../format';
import { DeliveriesTable } from './deliveries';
import { Events } from './webhooks';

export function EndpointDetail({ api, id, onUnauthorized }: { api: Client; id: string; onUnauthorized: () => void }) {
  const endpoint = useResource(() => api.endpoint(id), [id], onUnauthorized);
  const deliveries = useResource(() => api.deliveries({ endpoint_id: id, limit: 50 }), [api.accountId, id], onUnauthorized);

  if (endpoint.error) return <div class="page"><Back /><ErrorState error={endpoint.error} retry={endpoint.reload} /></div>;
  if (!endpoint.data) return <div class="page"><Back /><Loading /></div>;
  const e = endpoint.data;
  return (
    <div class="page">
      <Back />
      <div class="detail-header">
        <div>
          <div class="detail-title"><span class="url">{e.url}</span> <Status value={e.status} /></div>
          <div class="detail-sub"><Id value={e.id} />{e.description ? ` · ${e.description}` : ''}</div>
        </div>
      </div>
      <div class="facts">
        <div class="fact"><div class="fact-label">Events</div><div class="fact-value"><Events events={e.events} /></div></div>
        <div class="fact"><div class="fact-label">Verified</div><div class="fact-value"><Time value={e.verified_at} /></div></div>
        <div class="fact"><div class="fact-label">Failing since</div><div class="fact-value"><Time value={e.failing_since} /></div></div>
        {e.disabled_reason ? <div class="fact"><div class="fact-label">Disabled because</div><div class="fact-value">{humanize(e.disabled_reason)}</div></div> : null}
        <div class="fact"><div class="fact-label">Created</div><div class="fact-value"><Time value={e.created_at} /></div></div>
      </div>
      <Recover api={api} endpointId={e.id} enabled={e.status === 'enabled'} onDone={deliveries.reload} />
      <Section title="Deliveries" count={deliveries.data?.total ?? undefined}>
        {deliveries.error ? <ErrorState error={deliveries.error} retry={deliveries.reload} />
          : !deliveries.data ? <Loading />
          : deliveries.data.data.length === 0 ? <Empty title="No deliveries to this endpoint yet" />
          : <DeliveriesTable deliveries={deliveries.data.data} />}
      </Section>
    </div>
  );
}

/** "Recover since…": re-send every failed or dead-lettered delivery created in a window. */
function Recover({ api, endpointId, enabled, onDone }: { api: Client; endpointId: string; enabled: boolean; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  const [since, setSince] = useState(() => toLocalInput(new Date(Date.now() - 24 * 3600 * 1000)));
  const [until, setUntil] = useState('');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);

  const submit = async (ev: Event) => {
    ev.preventDefault();
    setBusy(true);
    setResult(null);
    try {
      const { recovered } = await api.recover(endpointId, new Date(since).toISOString(), until ? new Date(until).toISOString() : undefined);
      setResult({ ok: true, text: recovered === 0 ? 'Nothing to recover: no failed or dead-lettered deliveries in that window.' : `${recovered} deliver${recovered === 1 ? 'y' : 'ies'} re-sent.` });
      onDone();
    } catch (err) {
      setResult({ ok: false, text: err instanceof Error ? err.message : String(err) });
    } finally {
      setBusy(false);
    }
  };

  return (
    <Section title="Recover" actions={!open ? (
      <button type="button" class="btn btn-primary" disabled={!enabled} title={enabled ? '' : 'Only enabled endpoints receive deliveries'} onClick={() => setOpen(true)}>Recover since…</button>
    ) : null}>
      {!open ? (
        <p class="muted">Re-send every failed or dead-lettered delivery of this endpoint created in a time window (succeeded ones are skipped).{enabled ? '' : ' The endpoint must be enabled first.'}</p>
      ) : (
        <form class="inline-form" onSubmit={submit} data-testid="recover-form">
          <label>Since <input type="datetime-local" required value={since} onInput={(e) => setSince((e.target as HTMLInputElement).value)} /></label>
          <label>Until <span class="muted small">(optional)</span> <input type="datetime-local" value={until} onInput={(e) => setUntil((e.target as HTMLInputElement).value)} /></label>
          <button type="submit" class="btn btn-primary" disabled={busy}>{busy ? 'Recovering…' : 'Recover'}</button>
          <button type="button" class="btn btn-ghost" onClick={() => { setOpen(false); setResult(null); }}>Cancel</button>
        </form>
      )}
      {result ? <div class={`notice ${result.ok ? 'notice-ok' : 'notice-error'}`} role="status">{result.text}</div> : null}
    </Section>
  );
}

function Back() {
  return <Link to="/webhooks" class="back">← Webhooks</Link>;
}
