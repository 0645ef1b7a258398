import { useEffect, useState } from 'preact/hooks';
import type { Client, WebhookAttempt } from '../api';
import { Empty, ErrorState, HttpCode, Id, Link, Loading, Section, Status, Time, useResource } from '../components';
import { duration, humanize, when } from '../format';

export function DeliveryDetail({ api, id, onUnauthorized }: { api: Client; id: string; onUnauthorized: () => void }) {
  const res = useResource(() => api.delivery(id), [id], onUnauthorized);
  const [replaying, setReplaying] = useState(false);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const [watchUntil, setWatchUntil] = useState(0);
  const d = res.data;

  // After a replay, follow the delivery for a little while so the new attempt shows up by itself.
  useEffect(() => {
    if (!watchUntil) return;
    if (Date.now() > watchUntil || (d && d.status !== 'pending')) return;
    const t = setTimeout(res.reload, 800);
    return () => clearTimeout(t);
  }, [watchUntil, d]);

  if (res.error && !d) return <div class="page"><Back /><ErrorState error={res.error} retry={res.reload} /></div>;
  if (!d) return <div class="page"><Back /><Loading /></div>;

  const replay = async () => {
    setReplaying(true);
    setMessage(null);
    try {
      await api.replay(d.id);
      setMessage({ ok: true, text: 'Replay started: a new attempt is on its way (same webhook-id).' });
      setWatchUntil(Date.now() + 20_000);
      res.reload();
    } catch (err) {
      setMessage({ ok: false, text: err instanceof Error ? err.message : String(err) });
    } finally {
      setReplaying(false);
    }
  };
  const attempts = [...(d.attempts ?? [])].sort((a, b) => b.attempt_no - a.attempt_no);

  return (
    <div class="page">
      <Back endpointId={d.endpoint_id} />
      <div class="detail-header">
        <div>
          <div class="detail-title"><code>{d.event_type}</code> <Status value={d.status} /></div>
          <div class="detail-sub"><Id value={d.id} /> · event <Id value={d.event_id} /></div>
        </div>
        <div class="detail-actions">
          <button type="button" class="btn btn-secondary" onClick={res.reload}>Refresh</button>
          <button type="button" class="btn btn-primary" onClick={replay} disabled={replaying} data-testid="replay">{replaying ? 'Replaying…' : 'Replay'}</button>
        </div>
      </div>
      {message ? <div class={`notice ${message.ok ? 'notice-ok' : 'notice-error'}`} role="status">{message.text}</div> : null}
      {d.status === 'dead_lettered' ? (
        <div class="callout callout-red">Dead-lettered {d.dead_lettered_at ? <Time value={d.dead_lettered_at} /> : null}: no more automatic retries. Fix the receiver, then Replay.</div>
      ) : null}
      <div class="facts">
        <div class="fact"><div class="fact-label">Endpoint</div><div class="fact-value"><Link to={`/webhooks/endpoints/${d.endpoint_id}`}><code>{d.endpoint_id}</code></Link></div></div>
        <div class="fact"><div class="fact-label">Attempts</div><div class="fact-value" data-testid="attempt-count">{d.attempt_count}</div></div>
        <div class="fact"><div class="fact-label">Replays</div><div class="fact-value">{d.replay_count}</div></div>
        <div class="fact"><div class="fact-label">Next attempt</div><div class="fact-value">{d.status === 'pending' || d.status === 'failed' ? <Time value={d.next_attempt_at} /> : <span class="muted">—</span>}</div></div>
        <div class="fact"><div class="fact-label">Last attempt</div><div class="fact-value"><Time value={d.last_attempt_at} /></div></div>
        <div class="fact"><div class="fact-label">Created</div><div class="fact-value"><Time value={d.created_at} /></div></div>
      </div>
      <Section title="Attempts" count={attempts.length}>
        {attempts.length === 0 ? <Empty title="No attempts yet">The first attempt is sent right after the event.</Empty> : (
          <ol class="attempts" data-testid="attempts">
            {attempts.map((a) => <Attempt key={a.id} attempt={a} />)}
          </ol>
        )}
      </Section>
    </div>
  );
}

function Attempt({ attempt: a }: { attempt: WebhookAttempt }) {
  return (
    <li class="attempt" data-attempt={a.attempt_no}>
      <div class="attempt-head">
        <span class="attempt-no">#{a.attempt_no}</span>
        <HttpCode code={a.status_code} />
        <span class={`outcome outcome-${a.outcome}`}>{humanize(a.outcome)}</span>
        <span class="muted">{duration(a.duration_ms)}</span>
        {a.trigger !== 'automatic' ? <span class="badge badge-purple">{humanize(a.trigger)}</span> : null}
        <span class="spacer" />
        <span class="muted small" title={a.created_at}>{when(a.created_at)}</span>
      </div>
      <div class="muted small attempt-url">POST {a.url}</div>
      {a.error ? <div class="attempt-error">{a.error}</div> : null}
      <div class="body-label">Response body{a.response_body_truncated ? <span class="muted small"> (truncated to 16 KB)</span> : null}</div>
      {a.response_body ? <pre class="response-body">{a.response_body}</pre> : <div class="muted small">No body.</div>}
    </li>
  );
}

function Back({ endpointId }: { endpointId?: string }) {
  return (
    <div class="crumbs">
      <Link to="/webhooks" class="back">← Webhooks</Link>
      {endpointId ? <Link to={`/webhooks/endpoints/${endpointId}`} class="back">Endpoint</Link> : null}
    </div>
  );
}
