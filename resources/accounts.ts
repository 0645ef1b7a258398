import { Static, Type } from '@sinclair/typebox';
import type { AccountRow, AccountSettingRow } from '../db/accounts';
import { iso } from '../lib/timestamps';
import { Resource } from './schemas';

const NullableStr = Type.Union([Type.String(), Type.Null()]);
const TS = Type.Union([Type.String(), Type.Null()]);

export const AccountSettingSchema = Resource('account_setting', {
  id: Type.String(), key: Type.String(), value: Type.String(), created_at: TS, updated_at: TS,
});

/** An account: production, or sandbox linked to its production account (`prod_account_id`). */
export const AccountSchema = Resource('account', {
  id: Type.String(), user_id: Type.String(), workspace_id: Type.String(), name: Type.String(),
  country: NullableStr, currency: NullableStr, timezone: NullableStr,
  environment: Type.Union([Type.Literal('production'), Type.Literal('sandbox')]),
  livemode: Type.Boolean({ description: 'true for a production account' }),
  prod_account_id: NullableStr,
  settings: Type.Array(AccountSettingSchema),
  deleted: Type.Boolean(), metadata: Type.Record(Type.String(), Type.Unknown()),
  created_at: TS, updated_at: TS,
});

export type Account = Static<typeof AccountSchema>;

export function serializeAccountSetting(row: AccountSettingRow): Static<typeof AccountSettingSchema> {
  return { object: 'account_setting', id: row.id, key: row.key, value: row.value, created_at: iso(row.created_at), updated_at: iso(row.updated_at) };
}

export function serializeAccount(row: AccountRow, settings: AccountSettingRow[] = []): Account {
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
