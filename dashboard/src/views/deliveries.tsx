import type { WebhookDelivery } from '../api';
import { HttpCode, Id, Link, Status, Time } from '../components';
import { navigate } from '../router';

/** Deliveries as a table: one row each, a click opens its attempts. */
export function DeliveriesTable({ deliveries }: { deliveries: WebhookDelivery[] }) {
  return (
    <table class="table" data-testid="deliveries-table">
      <thead><tr><th>Event</th><th>Status</th><th class="num">Attempts</th><th>Last answer</th><th>Next attempt</th><th>Delivery</th><th>Created</th></tr></thead>
      <tbody>
        {deliveries.map((d) => (
          <tr key={d.id} class="row-link" data-delivery={d.id} onClick={() => navigate(`/webhooks/deliveries/${d.id}`)}>
            <td><Link to={`/webhooks/deliveries/${d.id}`}><code>{d.event_type}</code></Link></td>
            <td><Status value={d.status} /></td>
            <td class="num">{d.attempt_count}{d.replay_count ? <span class="muted small"> ({d.replay_count} replay{d.replay_count > 1 ? 's' : ''})</span> : null}</td>
            <td><HttpCode code={d.last_status_code} /></td>
            <td>{d.status === 'pending' || d.status === 'failed' ? <Time value={d.next_attempt_at} /> : <span class="muted">—</span>}</td>
            <td><Id value={d.id} /></td>
            <td><Time value={d.created_at} /></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
