/**
 * Row → API resource shapes. Shared by the API (responses) and the worker (webhook payloads), so a
 * resource looks the same wherever it appears. Timestamps are ISO-8601 UTC with milliseconds.
 */
export function iso(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

export function serializeAccountSetting(row: any) {
  return { object: 'account_setting', id: row.id, key: row.key, value: row.value, created_at: iso(row.created_at), updated_at: iso(row.updated_at) };
}

export function serializeAccount(row: any, settings: any[] = []) {
  return {
    object: 'account',
    id: row.id,
    user_id: row.user_id,
    workspace_id: row.workspace_id,
    name: row.name,
    country: row.country,
    currency: row.currency,
    timezone: row.timezone,
    environment: row.environment,
    livemode: row.environment === 'production',
    prod_account_id: row.prod_account_id,
    settings: settings.map(serializeAccountSetting),
    deleted: row.deleted,
    metadata: row.metadata ?? {},
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** An API key; `plaintext` is given only at creation and regeneration, never again. */
export function serializeApiKey(row: any, plaintext?: string) {
  return {
    object: 'api_key',
    id: row.id,
    account_id: row.account_id,
    name: row.name,
    type: row.type,
    environment: row.environment,
    key: plaintext ?? null,
    redacted_key: `${row.key_prefix}…${row.key_last4}`,
    status: row.status,
    permissions: row.permissions ?? {},
    metadata: row.metadata ?? {},
    managed: row.managed,
    deleted: row.deleted,
    last_used_ip: row.last_used_ip ?? null,
    last_used_at: iso(row.last_used_at),
    expires_at: iso(row.expires_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function serializeCustomerAddress(row: any) {
  return {
    object: 'customer_address',
    id: row.id,
    customer_id: row.customer_id,
    type: row.type,
    label: row.label,
    country: row.country,
    city: row.city,
    state: row.state,
    line1: row.line1,
    line2: row.line2,
    zip: row.zip,
    is_default: row.is_default,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** A stored card: only what identifies it to a person (network, last4, expiry) — never the number or CVC. */
export function serializePaymentMethod(row: any) {
  return {
    object: 'payment_method',
    id: row.id,
    account_id: row.account_id,
    customer_id: row.customer_id,
    type: row.type,
    card: {
      network: row.card_network,
      last4: row.card_last4,
      exp_month: row.card_exp_month,
      exp_year: row.card_exp_year,
      fingerprint: row.card_fingerprint,
      country: row.card_country ?? null,
      holder_name: row.holder_name ?? null,
    },
    metadata: row.metadata ?? {},
    deleted: row.deleted,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** A customer with its addresses (always) and its payment methods (only when asked for). */
export function serializeCustomer(row: any, addresses: any[] = [], paymentMethods?: any[]) {
  return {
    object: 'customer',
    id: row.id,
    account_id: row.account_id,
    name: row.name,
    email: row.email,
    phone: row.phone,
    country: row.country,
    alternate_emails: row.alternate_emails ?? [],
    is_guest: row.is_guest,
    deleted: row.deleted,
    metadata: row.metadata ?? {},
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    addresses: addresses.map(serializeCustomerAddress),
    ...(paymentMethods ? { payment_methods: paymentMethods.map(serializePaymentMethod) } : {}),
  };
}

export function serializeMembership(row: any) {
  return {
    object: 'account_membership',
    id: row.id,
    account_id: row.account_id,
    user_id: row.user_id,
    role: row.role,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function serializeNotification(row: any, account?: any) {
  return {
    object: 'notification',
    id: row.id,
    user_id: row.user_id ?? null,
    account_id: row.account_id,
    type: row.type,
    details: row.details ?? {},
    archived: row.archived_at !== null && row.archived_at !== undefined,
    archived_at: iso(row.archived_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    ...(account ? { account: serializeAccount(account) } : {}),
  };
}
