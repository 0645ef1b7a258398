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
