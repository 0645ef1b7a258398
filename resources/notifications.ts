import { Static, Type } from '@sinclair/typebox';
import type { AccountRow } from '../db/accounts';
import type { NotificationRow } from '../db/notifications';
import { iso } from '../lib/timestamps';
import { Resource } from './schemas';
import { serializeAccount } from './accounts';

const S = Type.String();
const NS = Type.Union([S, Type.Null()]);
const TS = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

/** A notification, with the account it is about. */
export const NotificationSchema = Resource('notification', {
  id: S, user_id: NS, account_id: S, type: S, details: Type.Record(S, Type.Unknown()),
  archived: Type.Boolean(), archived_at: TS, created_at: TS, updated_at: TS,
  account: Type.Object({ object: Type.Literal('account'), id: S }, { additionalProperties: true }),
});

export type Notification = Static<typeof NotificationSchema>;

export function serializeNotification(row: NotificationRow, account: AccountRow): Notification {
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
    account: serializeAccount(account),
  };
}
