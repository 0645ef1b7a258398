import type { Client } from '../api';
import { Empty, ErrorState, Link, Loading, Section, Status, Time, useResource } from '../components';
import { humanize } from '../format';
import { FilterPills, LIST_LIMIT, ListBody, ListHeader, listPlace, statusOptions } from '../list';
import { navigate } from '../router';
import { DeliveriesTable } from './deliveries';

const DELIVERY_FILTERS = statusOptions(['dead_lettered', 'failed', 'pending', 'succeeded']);

export function Webhooks({ api, query, onUnauthorized }: { api: Client; query: URLSearchParams; onUnauthorized: () => void }) {
  const { filters: { status, endpoint }, page, go } = listPlace('/webhooks', query, ['status', 'endpoint']);
  const endpoints = useResource(() => api.endpoints(), [api.accountId], onUnauthorized);
  const deliveries = useResource(
    () => api.deliveries({ status: status || undefined, endpoint_id: endpoint || undefined, page, limit: LIST_LIMIT }),
    [api.accountId, status, endpoint, page], onUnauthorized,
  );

  return (
    <div class="page">
      <ListHeader title="Webhooks" onRefresh={() => { endpoints.reload(); deliveries.reload(); }} />

      <Section title="Endpoints" count={endpoints.data?.total ?? undefined}>
        {endpoints.error ? <ErrorState error={endpoints.error} retry={endpoints.reload} />
          : !endpoints.data ? <Loading />
          : endpoints.data.data.length === 0 ? <Empty title="No webhook endpoints">Register one with <code>POST /v1/webhook-endpoints</code>.</Empty> : (
            <table class="table" data-testid="endpoints-table">
              <thead><tr><th>URL</th><th>Status</th><th>Events</th><th>Failing since</th><th>Created</th></tr></thead>
              <tbody>
                {endpoints.data.data.map((e) => (
                  <tr key={e.id} class="row-link" data-endpoint={e.id} onClick={() => navigate(`/webhooks/endpoints/${e.id}`)}>
                    <td>
                      <Link to={`/webhooks/endpoints/${e.id}`} class="url">{e.url}</Link>
                      {e.description ? <div class="muted small">{e.description}</div> : null}
                    </td>
                    <td><Status value={e.status} />{e.disabled_reason ? <div class="muted small">{humanize(e.disabled_reason)}</div> : null}</td>
                    <td><Events events={e.events} /></td>
                    <td>{e.failing_since ? <Time value={e.failing_since} /> : <span class="muted">—</span>}</td>
                    <td><Time value={e.created_at} /></td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
      </Section>

      <Section title="Deliveries" count={deliveries.data?.total ?? undefined} actions={endpoints.data && endpoints.data.data.length > 1 ? (
        <select aria-label="Endpoint" value={endpoint} onChange={(e) => go({ endpoint: (e.target as HTMLSelectElement).value })}>
          <option value="">All endpoints</option>
          {endpoints.data.data.map((e) => <option key={e.id} value={e.id}>{e.url}</option>)}
        </select>
      ) : null}>
        <FilterPills label="Filter deliveries by status" options={DELIVERY_FILTERS} current={status} onSelect={(s) => go({ status: s })} />
        <ListBody res={deliveries} card={false} onPage={(p) => go({ page: p })} empty={(
          <Empty title={status === 'dead_lettered' ? 'Nothing dead-lettered' : status ? `No ${humanize(status).toLowerCase()} deliveries` : 'No deliveries yet'}>
            {status === 'dead_lettered' ? 'Every delivery either succeeded or is still being retried.' : 'Events sent to your endpoints show up here.'}
          </Empty>
        )}>
          {(rows) => <DeliveriesTable deliveries={rows} />}
        </ListBody>
      </Section>
    </div>
  );
}

export function Events({ events }: { events: string[] }) {
  if (events.includes('*')) return <span class="muted">All events</span>;
  const shown = events.slice(0, 3);
  return (
    <span class="events">
      {shown.map((e) => <code key={e} class="tag">{e}</code>)}
      {events.length > shown.length ? <span class="muted small"> +{events.length - shown.length} more</span> : null}
    </span>
  );
}
