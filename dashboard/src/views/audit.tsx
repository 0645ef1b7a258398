import type { AuditEvent, Client } from '../api';
import { Empty, Id, Time, useResource } from '../components';
import { ListBody, ListHeader, listPlace } from '../list';
import { navigate } from '../router';

const LIMIT = 25;
const FILTERS = ['action', 'resource_type', 'resource_id', 'actor_id', 'from', 'to'] as const;

/** The account's audit trail: who changed what, from where; secrets show only as "[changed]". */
export function AuditLog({ api, query, onUnauthorized }: { api: Client; query: URLSearchParams; onUnauthorized: () => void }) {
  const { filters, page, go } = listPlace('/audit', query, FILTERS);
  const res = useResource(
    () => api.auditEvents({ ...filters, from: isoOf(filters.from), to: isoOf(filters.to), page, limit: LIMIT }),
    [api.accountId, ...FILTERS.map((f) => filters[f]), page], onUnauthorized,
  );
  const filtered = FILTERS.some((f) => filters[f]);

  const apply = (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget as HTMLFormElement);
    go({ ...Object.fromEntries(FILTERS.map((f) => [f, String(form.get(f) ?? '').trim()])), page: 1 });
  };

  return (
    <div class="page">
      <ListHeader title="Audit log" onRefresh={res.reload} />
      <form class="inline-form filters" aria-label="Filter audit events" onSubmit={apply}>
        <label>Action<input name="action" placeholder="api_key.created" value={filters.action} /></label>
        <label>Resource type<input name="resource_type" placeholder="payment_provider_config" value={filters.resource_type} /></label>
        <label>Resource id<input name="resource_id" value={filters.resource_id} /></label>
        <label>Actor id<input name="actor_id" placeholder="usr_… or key_…" value={filters.actor_id} /></label>
        <label>From<input name="from" type="datetime-local" value={filters.from} /></label>
        <label>To<input name="to" type="datetime-local" value={filters.to} /></label>
        <button type="submit" class="btn btn-secondary">Apply</button>
        {filtered ? <button type="button" class="btn btn-ghost" onClick={() => navigate('/audit')}>Clear</button> : null}
      </form>
      <ListBody res={res} onPage={(p) => go({ page: p })} empty={(
        <Empty title={filtered ? 'No audit events match' : 'No audit events yet'}>
          Changes to keys, members, providers, routing and webhooks, and every capture, cancel and refund, show up here.
        </Empty>
      )}>
        {(events) => <AuditTable events={events} />}
      </ListBody>
    </div>
  );
}

function AuditTable({ events }: { events: AuditEvent[] }) {
  return (
    <table class="table" data-testid="audit-table">
      <thead><tr><th>Action</th><th>Resource</th><th>Actor</th><th>Changes</th><th>IP</th><th>When</th></tr></thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.id} data-audit-event={e.id} title={`#${e.seq} ${e.hash}`}>
            <td><code>{e.action}</code></td>
            <td><div class="muted small">{e.resource_type}</div><Id value={e.resource_id} /></td>
            <td><div class="muted small">{e.actor_type}</div><Id value={e.actor_id} /></td>
            <td><Changes changes={e.changes} /></td>
            <td title={[e.request_id, e.user_agent].filter(Boolean).join(' · ')}>{e.ip ?? <span class="muted">—</span>}</td>
            <td><Time value={e.created_at} /></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Changes({ changes }: { changes: Record<string, unknown> }) {
  const fields = Object.entries(changes);
  if (!fields.length) return <span class="muted">—</span>;
  return (
    <div class="small">
      {fields.map(([k, v]) => <div key={k}><code>{k}</code>: <code>{typeof v === 'string' ? v : JSON.stringify(v)}</code></div>)}
    </div>
  );
}

/** A datetime-local value (the browser's local time) as the API's ISO time; empty stays unset. */
function isoOf(local: string): string | undefined {
  if (!local) return undefined;
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}
