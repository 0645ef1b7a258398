/**
 * The event names an endpoint can subscribe to (docs/webhooks.md#events). One naming space for payments, charges,
 * refunds, keys, checkout sessions, invoices and subscriptions. An endpoint's
 * `events` filter holds names from here, family wildcards such as `charge.*`, or `*` for everything.
 */
export const WEBHOOK_EVENT_TYPES = [
  'payment_intent.created',
  'payment_intent.processing',
  'payment_intent.requires_action',
  'payment_intent.amount_capturable_updated',
  'payment_intent.succeeded',
  'payment_intent.payment_failed',
  'payment_intent.canceled',
  'charge.succeeded',
  'charge.failed',
  'charge.refunded',
  'charge.capture_failed',
  'charge.void_failed',
  'charge.dispute.created',
  'charge.dispute.updated',
  'charge.dispute.closed',
  'charge.dispute.funds_withdrawn',
  'charge.dispute.funds_reinstated',
  'charge.dispute.evidence_due_soon',
  'refund.created',
  'refund.succeeded',
  'refund.failed',
  'api_key.rotated',
  'checkout.session.completed',
  'checkout.session.expired',
  'invoice.created',
  'invoice.finalized',
  'invoice.paid',
  'invoice.payment_failed',
  'invoice.payment_action_required',
  'invoice.voided',
  'invoice.marked_uncollectible',
  'invoice.upcoming',
  'subscription.created',
  'subscription.updated',
  'subscription.canceled',
  'subscription.trial_will_end',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** Sent only by the handshake; not subscribable, never in the events table. */
export const VERIFICATION_EVENT_TYPE = 'webhook_endpoint.verification';

const KNOWN = new Set<string>(WEBHOOK_EVENT_TYPES);
const FAMILIES = new Set(WEBHOOK_EVENT_TYPES.map((name) => name.slice(0, name.indexOf('.'))));

/** Every entry an endpoint's `events` filter may hold: `*`, the catalogue's names and `<family>.*`. */
export const WEBHOOK_EVENT_FILTERS: readonly string[] = ['*', ...WEBHOOK_EVENT_TYPES, ...[...FAMILIES].map((family) => `${family}.*`)];

/** True for `*`, a catalogue name, or `<family>.*` of a catalogue family. */
export function isValidEventFilter(entry: string): boolean {
  if (entry === '*' || KNOWN.has(entry)) return true;
  return entry.endsWith('.*') && FAMILIES.has(entry.slice(0, -2));
}

/** Does an endpoint subscribed to `filter` receive an event named `eventType`? */
export function filterMatches(filter: readonly string[], eventType: string): boolean {
  return filter.some((entry) => entry === '*' || entry === eventType
    || (entry.endsWith('.*') && eventType.startsWith(entry.slice(0, -1))));
}
