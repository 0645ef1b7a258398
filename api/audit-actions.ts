import { DISPUTE_EVIDENCE_FIELDS } from '../lib/providers/disputes';

/**
 * The one home of the audit trail's coverage (docs/security.md §19): which routes leave an audit event
 * when they succeed, under which action, about which resource, and which of their body fields are secret.
 * The route layer (api/route.ts) appends the row; test/api/audit-coverage.test.ts fails when a route that
 * changes something is neither here nor in AUDIT_EXEMPT below.
 */

/** Where a route's resource id is: a field of the answer's `data`, or a path parameter. */
export type ResourceIdFrom = `data.${string}` | `params.${string}`;

export interface AuditAction {
  /** `<resource>.<verb in the past>`, e.g. `api_key.created`. */
  action: string;
  resource: string;
  id: ResourceIdFrom;
  /**
   * Body fields whose values are secret: recorded as `"[changed]"` when given, never their value.
   * (Any field named like a secret is redacted too, wherever it is nested: see api/audit-trail.ts.)
   */
  secret?: readonly string[];
  /** Secrets the route makes itself (a key's new value, an endpoint's new signing secret): recorded as changed. */
  renews?: readonly string[];
  /** Query parameters that are part of the change (where an account or a provider is made). */
  query?: readonly string[];
  /** The change is the platform's, not one account's (its chain is the platform's). */
  platform?: boolean;
}

/** `METHOD /path` (the route's declared path below /v1) → what its success records. */
export const AUDIT_ACTIONS: Readonly<Record<string, AuditAction>> = {
  'POST /accounts': { action: 'account.created', resource: 'account', id: 'data.id', query: ['sandbox_mode', 'prod_account_id'] },
  // Where customers may be sent back to after 3-D Secure: an open redirect if loosened.
  'PUT /accounts/:id/settings/return_url_hosts': { action: 'account.return_url_hosts_updated', resource: 'account', id: 'params.id' },
  // Whether and when customers are charged again after a failed renewal.
  'PUT /accounts/:id/settings/billing': { action: 'account.billing_settings_updated', resource: 'account', id: 'params.id' },

  'POST /api-keys': { action: 'api_key.created', resource: 'api_key', id: 'data.id' },
  'DELETE /api-keys/:id': { action: 'api_key.deleted', resource: 'api_key', id: 'params.id' },
  'POST /api-keys/:id/regenerate': { action: 'api_key.regenerated', resource: 'api_key', id: 'params.id', renews: ['key'] },

  'POST /account-memberships': { action: 'membership.created', resource: 'account_membership', id: 'data.id' },
  'DELETE /account-memberships/:id': { action: 'membership.deleted', resource: 'account_membership', id: 'params.id' },

  'POST /payment-providers': {
    action: 'payment_provider.created', resource: 'payment_provider', id: 'data.id', query: ['sandbox_mode'], platform: true,
  },

  'POST /payment-provider-configs': {
    action: 'provider_config.created', resource: 'payment_provider_config', id: 'data.id', secret: ['credentials'],
  },
  'PUT /payment-provider-configs/:id': {
    action: 'provider_config.updated', resource: 'payment_provider_config', id: 'params.id', secret: ['credentials'],
  },
  'DELETE /payment-provider-configs/:id': { action: 'provider_config.deleted', resource: 'payment_provider_config', id: 'params.id' },
  // Fees rank the candidates of every routing plan: a fee is part of where money goes.
  'POST /payment-provider-configs/:id/fees': { action: 'provider_config_fee.created', resource: 'payment_provider_config_fee', id: 'data.id' },
  'DELETE /payment-provider-configs/:id/fees/:feeId': {
    action: 'provider_config_fee.deleted', resource: 'payment_provider_config_fee', id: 'params.feeId',
  },
  'POST /payment-provider-configs/:id/rules': { action: 'routing_rule.created', resource: 'routing_rule', id: 'data.id' },
  'PATCH /payment-provider-configs/:id/rules/:ruleId': { action: 'routing_rule.updated', resource: 'routing_rule', id: 'params.ruleId' },
  'DELETE /payment-provider-configs/:id/rules/:ruleId': { action: 'routing_rule.deleted', resource: 'routing_rule', id: 'params.ruleId' },
  'PUT /routing-settings': { action: 'routing_settings.updated', resource: 'routing_settings', id: 'data.account_id' },

  'POST /webhook-endpoints': { action: 'webhook_endpoint.created', resource: 'webhook_endpoint', id: 'data.id', renews: ['secret'] },
  'PATCH /webhook-endpoints/:id': { action: 'webhook_endpoint.updated', resource: 'webhook_endpoint', id: 'params.id' },
  'DELETE /webhook-endpoints/:id': { action: 'webhook_endpoint.deleted', resource: 'webhook_endpoint', id: 'params.id' },
  // A passed handshake (re-)enables deliveries to the URL.
  'POST /webhook-endpoints/:id/verify': { action: 'webhook_endpoint.verified', resource: 'webhook_endpoint', id: 'params.id' },
  'POST /webhook-endpoints/:id/rotate-secret': {
    action: 'webhook_endpoint.secret_rotated', resource: 'webhook_endpoint', id: 'params.id', renews: ['secret'],
  },

  'POST /payments/:id/capture': { action: 'payment.captured', resource: 'payment', id: 'data.id' },
  'POST /payments/:id/cancel': { action: 'payment.canceled', resource: 'payment', id: 'data.id' },
  'POST /refunds': { action: 'refund.created', resource: 'refund', id: 'data.id' },
  // Expiring a session cancels its payment, as an audited cancel does.
  'POST /checkout-sessions/:id/expire': { action: 'checkout_session.expired', resource: 'checkout_session', id: 'params.id' },
  'POST /payment-links': { action: 'payment_link.created', resource: 'payment_link', id: 'data.id' },
  'PATCH /payment-links/:id': { action: 'payment_link.updated', resource: 'payment_link', id: 'params.id' },

  // Billing: the catalogue, and the operator's hand on a subscription or an invoice after it was made
  // (what is charged, when, and what is written off), as capture, cancel and refund are for payments.
  'POST /products': { action: 'product.created', resource: 'product', id: 'data.id' },
  'PATCH /products/:id': { action: 'product.updated', resource: 'product', id: 'params.id' },
  'POST /prices': { action: 'price.created', resource: 'price', id: 'data.id' },
  'PATCH /prices/:id': { action: 'price.updated', resource: 'price', id: 'params.id' },
  'PATCH /subscriptions/:id': { action: 'subscription.updated', resource: 'subscription', id: 'params.id' },
  'POST /subscriptions/:id/cancel': { action: 'subscription.canceled', resource: 'subscription', id: 'params.id' },
  'POST /invoices/:id/void': { action: 'invoice.voided', resource: 'invoice', id: 'params.id' },
  'POST /invoices/:id/mark-uncollectible': { action: 'invoice.marked_uncollectible', resource: 'invoice', id: 'params.id' },

  // Disputes: the merchant's answer to a chargeback decides whether money comes back, as a refund
  // decides whether it goes. The evidence is the customer's details and long texts: recorded as changed.
  'POST /disputes/:id/evidence': { action: 'dispute.evidence_updated', resource: 'dispute', id: 'params.id', secret: DISPUTE_EVIDENCE_FIELDS },
  'POST /disputes/:id/accept': { action: 'dispute.accepted', resource: 'dispute', id: 'params.id' },
};

/**
 * Routes that change something and are deliberately not audited, each with why. They are the merchant's
 * business rather than its security posture, and each is already on the account's event timeline or
 * is a resend of what is.
 */
export const AUDIT_EXEMPT: ReadonlySet<string> = new Set([
  // A payment's own life (create, confirm) is its event timeline (GET /v1/events); the trail holds the
  // operator's hand on money after the fact: capture, cancel, refund.
  'POST /payments',
  'POST /payments/:id/confirm',
  // A checkout session opens a payment: the payment's own life, as POST /payments.
  'POST /checkout-sessions',
  // Customer records and saved cards: merchant data written at checkout volume, not configuration; their
  // changes are in the payment's events where they matter.
  'POST /customers',
  'PATCH /customers/:id',
  'DELETE /customers/:id',
  'POST /customers/:id/addresses',
  'POST /customers/:id/addresses/:addressId/mark-primary',
  'DELETE /customers/:id/addresses/:addressId',
  'POST /customers/:id/payment-methods',
  'DELETE /customers/:id/payment-methods/:pmId',
  // A user's inbox state: changes nothing anyone else relies on.
  'POST /notifications/:id/archive',
  'POST /notifications/:id/unarchive',
  // Re-sending deliveries already made to an endpoint already audited: no configuration changes, and
  // each resend is in the delivery's attempts.
  'POST /webhook-endpoints/:id/recover',
  'POST /webhook-deliveries/:id/replay',
  // A subscription's start is its customer's sign-up, as POST /payments is a payment's: on its event
  // timeline (subscription.created), at checkout volume.
  'POST /subscriptions',
  // Paying an invoice now retries a charge already owed: each try is in the invoice's attempts and events.
  'POST /invoices/:id/pay',
  // Test clocks exist only in sandboxes and move no real money; what an advance does is on the
  // subscriptions' event timelines.
  'POST /test-clocks',
  'POST /test-clocks/:id/advance',
]);

/** The key of a route in AUDIT_ACTIONS and AUDIT_EXEMPT. */
export function auditKey(route: { method: string; path: string }): string {
  return `${route.method.toUpperCase()} ${route.path}`;
}
