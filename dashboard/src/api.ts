/**
 * The dashboard talks only to the public /v1 API, with the operator's own credential (an API key or a
 * JWT) kept in sessionStorage: it is gone when the tab closes.
 */
import type { DisputeEvidenceField, DisputeReason, DisputeStatus } from '../../lib/providers/disputes';
import type { ProviderAnalytics } from '../../lib/routing/adaptive-contract';

// The analytics shapes are the API's own contract (pure types), not a copy.
export type { AnalyticsPoint, CircuitState, ProviderAnalytics } from '../../lib/routing/adaptive-contract';

const TOKEN = 'switchboard.token';
const ACCOUNT = 'switchboard.account';
// A refusal (403 naming the permission) also tells the dashboard one is missing, for views that do not
// ask GET /accounts/{id}/permissions first (Checkout); kept with the session, so they stop offering it.
const REFUSED = 'switchboard.refused';

export interface Session { token: string; accountId: string }

export function loadSession(): Session | null {
  const token = sessionStorage.getItem(TOKEN);
  const accountId = sessionStorage.getItem(ACCOUNT);
  return token && accountId ? { token, accountId } : null;
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(TOKEN, session.token);
  sessionStorage.setItem(ACCOUNT, session.accountId);
  sessionStorage.removeItem(REFUSED);
}

export function clearSession(): void {
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(ACCOUNT);
  sessionStorage.removeItem(REFUSED);
}

function refusedPermissions(): string[] {
  try {
    const list: unknown = JSON.parse(sessionStorage.getItem(REFUSED) ?? '[]');
    return Array.isArray(list) ? list.filter((p): p is string => typeof p === 'string') : [];
  } catch {
    return [];
  }
}

function rememberRefusal(token: string, permission: string): void {
  if (sessionStorage.getItem(TOKEN) !== token) return;
  sessionStorage.setItem(REFUSED, JSON.stringify([...new Set([...refusedPermissions(), permission])]));
}

/** An error envelope from the API (or a network failure, status 0). */
export class ApiError extends Error {
  constructor(readonly status: number, readonly reason: string, message: string) {
    super(message);
  }
}

/** A page of a list. `total` is null past the API's counting limit (10,000 matches); `has_more` always says whether a next page exists. */
export interface Page<T> { data: T[]; total: number | null; page: number; limit: number; has_more: boolean }

type Query = Record<string, string | number | boolean | undefined | null>;

function url(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return `/v1${path}${qs ? `?${qs}` : ''}`;
}

async function call<T>(token: string, method: 'GET' | 'POST' | 'PATCH', path: string, query?: Query, body?: unknown): Promise<{ data: T; total?: number | null; page?: number | null; limit?: number; pages?: number | null; has_more?: boolean }> {
  let res: Response;
  try {
    res = await fetch(url(path, query), {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        Accept: 'application/json',
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
  } catch {
    throw new ApiError(0, 'network_error', 'The API could not be reached. Is the server running?');
  }
  const json = await res.json().catch(() => null);
  if (!res.ok || !json?.success) {
    const details = json?.error?.details ?? {};
    if (res.status === 403 && details.reason === 'insufficient_permissions' && typeof details.required === 'string') rememberRefusal(token, details.required);
    throw new ApiError(res.status, details.reason ?? 'unknown_error', json?.error?.message ?? json?.message ?? `HTTP ${res.status}`);
  }
  return json;
}

/** A client bound to one credential and one account: every account-scoped call names the account. */
export function client(session: Session) {
  const { token, accountId } = session;
  const get = <T>(path: string, query?: Query) => call<T>(token, 'GET', path, query).then((r) => r.data);
  const list = <T>(path: string, query: Query = {}) => call<T[]>(token, 'GET', path, { account_id: accountId, ...query })
    .then((r) => {
      const page = r.page ?? 1;
      const limit = r.limit ?? r.data.length;
      const hasMore = r.has_more ?? (r.pages != null ? page < r.pages : false);
      return { data: r.data, total: r.total === undefined ? r.data.length : r.total, page, limit, has_more: hasMore } as Page<T>;
    });
  const write = <T>(method: 'POST' | 'PATCH', path: string, body: unknown = {}) => call<T>(token, method, path, { account_id: accountId }, body).then((r) => r.data);
  return {
    accountId,
    /** False once the API refused this credential `permission` (e.g. `checkout:write`); true until then. */
    mayHave: (permission: string) => !refusedPermissions().includes(permission),
    account: () => get<Account>(`/accounts/${encodeURIComponent(accountId)}`),
    payments: (query: Query) => list<Payment>('/payments', query),
    payment: (id: string) => get<Payment>(`/payments/${encodeURIComponent(id)}`, {
      account_id: accountId, include_charges: true, include_routing_plans: true, include_events: true, include_customer: true,
    }),
    providerConfigs: () => list<{ id: string; name: string }>('/payment-provider-configs', { limit: 100 }),
    endpoints: (query: Query = {}) => list<WebhookEndpoint>('/webhook-endpoints', { limit: 100, ...query }),
    endpoint: (id: string) => get<WebhookEndpoint>(`/webhook-endpoints/${encodeURIComponent(id)}`),
    deliveries: (query: Query) => list<WebhookDelivery>('/webhook-deliveries', query),
    delivery: (id: string) => get<WebhookDelivery>(`/webhook-deliveries/${encodeURIComponent(id)}`),
    replay: (id: string) => call<WebhookDelivery>(token, 'POST', `/webhook-deliveries/${encodeURIComponent(id)}/replay`, {}, {}).then((r) => r.data),
    /** Per provider config: totals, the circuit now and a series over [from, to) by `interval`. */
    providerAnalytics: (range: { from: string; to: string; interval: ProviderAnalytics['interval'] }) =>
      get<ProviderAnalyticsView>('/analytics/providers', { account_id: accountId, ...range }),
    /** The account's audit trail, newest first (needs audit:read: OWNER and ADMIN). */
    auditEvents: (query: Query) => list<AuditEvent>('/audit-events', query),
    /** Just the payment: its status, for pages that link to it. */
    paymentSummary: (id: string) => get<Payment>(`/payments/${encodeURIComponent(id)}`, { account_id: accountId }),
    checkoutSessions: (query: Query) => list<CheckoutSession>('/checkout-sessions', query),
    checkoutSession: (id: string) => get<CheckoutSession>(`/checkout-sessions/${encodeURIComponent(id)}`, { account_id: accountId }),
    expireCheckoutSession: (id: string) => write<CheckoutSession>('POST', `/checkout-sessions/${encodeURIComponent(id)}/expire`),
    paymentLinks: (query: Query) => list<PaymentLink>('/payment-links', query),
    paymentLink: (id: string) => get<PaymentLink>(`/payment-links/${encodeURIComponent(id)}`, { account_id: accountId }),
    setPaymentLinkActive: (id: string, active: boolean) => write<PaymentLink>('PATCH', `/payment-links/${encodeURIComponent(id)}`, { active }),
    subscriptions: (query: Query) => list<Subscription>('/subscriptions', query),
    subscription: (id: string) => get<Subscription>(`/subscriptions/${encodeURIComponent(id)}`, { account_id: accountId }),
    invoices: (query: Query) => list<Invoice>('/invoices', query),
    invoice: (id: string) => get<Invoice>(`/invoices/${encodeURIComponent(id)}`, { account_id: accountId }),
    /** Tries the invoice's payment again now (needs billing:write); answers the invoice after. */
    payInvoice: (id: string) => write<Invoice>('POST', `/invoices/${encodeURIComponent(id)}/pay`),
    disputes: (query: Query) => list<Dispute>('/disputes', query),
    dispute: (id: string) => get<Dispute>(`/disputes/${encodeURIComponent(id)}`, { account_id: accountId }),
    /** Saves evidence (needs dispute:write); with `submit` sends it to the processor, after which it takes no more. */
    saveDisputeEvidence: (id: string, evidence: Partial<Record<DisputeEvidenceField, string>>, submit: boolean) =>
      write<Dispute>('POST', `/disputes/${encodeURIComponent(id)}/evidence`, { ...evidence, ...(submit ? { submit: true } : {}) }),
    /** Concedes the dispute: the processor closes it as lost. */
    acceptDispute: (id: string) => write<Dispute>('POST', `/disputes/${encodeURIComponent(id)}/accept`),
    price: (id: string) => get<Price>(`/prices/${encodeURIComponent(id)}`, { account_id: accountId }),
    /**
     * The credential's own permissions on the account, or null when the API cannot say (a server
     * without that route): views then offer a change until the API refuses it (`mayHave`).
     */
    permissions: () => get<{ permissions: string[] }>(`/accounts/${encodeURIComponent(accountId)}/permissions`)
      .then((r) => r.permissions, (err) => { if (err instanceof ApiError && err.status === 404) return null; throw err; }),
    recover: (id: string, since: string, until?: string) => call<{ recovered: number }>(token, 'POST', `/webhook-endpoints/${encodeURIComponent(id)}/recover`, {}, { since, ...(until ? { until } : {}) }).then((r) => r.data),
  };
}

export type Client = ReturnType<typeof client>;

/** The accounts a credential may open (an API key: its own; a JWT: every membership). */
export function listAccounts(token: string): Promise<Account[]> {
  return call<Account[]>(token, 'GET', '/accounts').then((r) => r.data);
}

// The resource shapes the dashboard reads (a subset of the API's).
export interface Account { id: string; name: string; environment: 'production' | 'sandbox'; livemode: boolean; currency: string; country: string }

export interface Charge {
  id: string; status: string; attempt_no: number; amount: number; currency: string; decline_code: string | null;
  payment_provider_config_id: string | null; provider_reference: string | null;
  performance: { duration: number; provider_calls?: number };
  payment_provider_config_snapshot: { name?: string; provider?: { name?: string; identifier?: string } };
  created_at: string;
}

export interface Candidate {
  payment_provider_config_id: string; payment_provider_id: string; payment_provider_method_id: string;
  estimated_fee: number | null; reason?: string;
  /** Why adaptive routing put it there (docs/routing.md). */
  ranking?: { strategy: string; score: number | null; circuit: 'closed' | 'open' | 'half_open'; explored: boolean; note: string };
}

export interface RoutingPlan { id: string; current_index: number | null; candidates: Candidate[]; created_at: string }

export interface PaymentEvent { id: string; event: string; created_at: string; actor_type: string | null; actor_id: string | null; charge_id: string | null }

export interface Payment {
  id: string; status: string; amount: number; currency: string; auto_capture: boolean; installments: number;
  customer_id: string | null; checkout_session_id: string | null; payment_method_id: string | null; amount_received: number; amount_refunded: number; amount_capturable: number;
  cancellation_reason: string | null; last_error: { code?: string; decline_code?: string; message?: string } | null;
  next_action?: { type: 'redirect_to_url'; redirect_to_url: { url: string; return_url: string | null }; since: string } | null;
  pending_operation?: { type: 'capture' | 'void'; charge_id: string; amount: number | null; requested_at: string } | null;
  metadata: Record<string, string>; created_at: string; updated_at: string;
  charges?: Charge[]; routing_plans?: RoutingPlan[]; events?: PaymentEvent[];
  customer?: { id: string; name: string | null; email: string | null } | null;
  temporal?: { workflow_id: string; namespace: string; ui_url: string };
}

export interface WebhookEndpoint {
  id: string; url: string; description: string | null; events: string[]; status: 'pending_verification' | 'enabled' | 'disabled';
  disabled_reason: string | null; failing_since: string | null; verified_at: string | null; created_at: string;
}

export interface WebhookAttempt {
  id: string; attempt_no: number; trigger: string; url: string; status_code: number; outcome: string; duration_ms: number;
  response_body: string | null; response_body_truncated: boolean; error: string | null; created_at: string;
}

export interface WebhookDelivery {
  id: string; endpoint_id: string; event_id: string; event_type: string; status: 'pending' | 'succeeded' | 'failed' | 'dead_lettered';
  attempt_count: number; replay_count: number; next_attempt_at: string | null; last_attempt_at: string | null;
  last_status_code: number | null; last_error: string | null; succeeded_at: string | null; dead_lettered_at: string | null;
  created_at: string; attempts?: WebhookAttempt[];
}

export interface AuditEvent {
  id: string; account_id: string | null; actor_type: string; actor_id: string; api_key_id: string | null; user_id: string | null;
  ip: string | null; user_agent: string | null; request_id: string | null; action: string; resource_type: string;
  resource_id: string | null; changes: Record<string, unknown>; seq: number; prev_hash: string | null; hash: string; created_at: string;
}

export interface LineItem { name: string; quantity: number; unit_amount: number }

/** A checkout session without its `client_secret`, which the dashboard never shows (the API sends it). */
export interface CheckoutSession {
  id: string; status: 'OPEN' | 'COMPLETE' | 'EXPIRED'; payment_status: 'UNPAID' | 'PAID'; amount: number; currency: string;
  /** Null when the session was made with amount and currency instead of lines. */
  line_items: LineItem[] | null;
  url: string; payment_id: string; customer_id: string | null; success_url: string | null; cancel_url: string | null;
  expires_at: string; metadata: Record<string, string>; created_at: string; updated_at: string;
}

export interface PaymentLink {
  id: string; url: string; active: boolean; line_items: LineItem[] | null; amount: number; currency: string;
  success_url: string | null; metadata: Record<string, string>; created_at: string; updated_at: string;
}

export interface SubscriptionItem { id: string; price_id: string; quantity: number }

export interface Subscription {
  id: string; account_id: string;
  status: 'INCOMPLETE' | 'INCOMPLETE_EXPIRED' | 'TRIALING' | 'ACTIVE' | 'PAST_DUE' | 'UNPAID' | 'CANCELED';
  customer_id: string; items: SubscriptionItem[]; currency: string;
  current_period_start: string; current_period_end: string; trial_end: string | null;
  cancel_at_period_end: boolean; canceled_at: string | null; ended_at: string | null;
  pause_collection: { behavior: string; resumes_at: string | null } | null;
  latest_invoice_id: string | null; default_payment_method_id: string; test_clock_id: string | null;
  metadata: Record<string, string>; created_at: string; updated_at: string;
  temporal?: { workflow_id: string; namespace: string; ui_url: string };
}

export interface InvoiceLine { description: string; price_id: string; quantity: number; amount: number; period_start: string; period_end: string; proration: boolean }

export interface InvoiceAttempt { payment_id: string; status: string; decline_code: string | null; at: string }

export interface Invoice {
  id: string; subscription_id: string; customer_id: string; status: 'DRAFT' | 'OPEN' | 'PAID' | 'UNCOLLECTIBLE' | 'VOID';
  billing_reason: string; currency: string; period_start: string; period_end: string; lines: InvoiceLine[];
  subtotal: number; amount_due: number; amount_paid: number; amount_remaining: number;
  attempt_count: number; attempts: InvoiceAttempt[]; next_payment_attempt: string | null; payment_id: string | null;
  hosted_payment_url: string | null; finalized_at: string | null; paid_at: string | null; voided_at: string | null;
  created_at: string; updated_at: string;
}

export interface Price {
  id: string; product_id: string; active: boolean; unit_amount: number; currency: string;
  recurring: { interval: 'day' | 'week' | 'month' | 'year'; interval_count: number };
}

/** The range's chargebacks against its captured charges, per provider config (`/analytics/providers`). */
export interface DisputeRate { chargebacks: number; captured_charges: number; dispute_rate: number | null }

export type ProviderAnalyticsView = Omit<ProviderAnalytics, 'providers'> & {
  providers: (ProviderAnalytics['providers'][number] & { disputes?: DisputeRate })[];
};

export interface DisputeBalanceTransaction { kind: 'withdrawn' | 'reinstated'; amount: number; fee: number; currency: string; at: string }

export interface Dispute {
  id: string; payment_id: string; charge_id: string; account_id: string; amount: number; currency: string;
  reason: DisputeReason; status: DisputeStatus; evidence_due_by: string | null;
  evidence: Record<DisputeEvidenceField, string | null>; evidence_submitted_at: string | null; is_inquiry: boolean;
  processor_dispute_id: string; balance_transactions: DisputeBalanceTransaction[];
  evidence_details: { due_by: string | null; past_due: boolean; has_evidence: boolean; submission_count: number };
  payment_provider_config_id: string; created_at: string; updated_at: string;
  temporal?: { workflow_id: string; namespace: string; ui_url: string };
}
