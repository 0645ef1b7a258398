import { paged, type Page } from './page';
import type { Knex } from 'knex';
import { newId } from '../lib/ids';

/**
 * The notifications store: `core.notifications`, what the dashboard shows an account's people (a key
 * rotated, a payment stuck, an endpoint disabled). One addressed to a user (`user_id`) is that user's;
 * one without is the whole account's.
 */

export interface NotificationRow {
  id: string;
  user_id: string | null;
  account_id: string;
  type: string;
  details: Record<string, unknown>;
  archived_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewNotification {
  accountId: string;
  type: string;
  details: Record<string, unknown>;
  /** Only this user's (else the whole account's). */
  userId?: string;
}

/** Who reads: a user sees the account's notifications and their own; anyone else (an API key, the system) sees all. */
export interface NotificationReader { userId?: string }

const notifications = (db: Knex) => db<NotificationRow>('core.notifications');

function visibleTo(reader: NotificationReader) {
  return (q: Knex.QueryBuilder) => {
    const { userId } = reader;
    if (userId !== undefined) void q.where((w) => { void w.whereNull('user_id').orWhere('user_id', userId); });
  };
}

/** A notification as written: `details` goes in as JSON text (jsonb). */
function notificationRow(n: NewNotification, id: string) {
  return { id, account_id: n.accountId, user_id: n.userId ?? null, type: n.type, details: JSON.stringify(n.details) };
}

/** Adds notifications (in the caller's transaction, when it has one); answers the rows written. */
export async function insertNotifications(db: Knex, items: NewNotification[]): Promise<NotificationRow[]> {
  if (!items.length) return [];
  return db('core.notifications').insert(items.map((n) => notificationRow(n, newId('ntf')))).returning<NotificationRow[]>('*');
}

/**
 * Adds notifications under ids of the caller's (derived from what they are about), each at most once:
 * an id already there is left as it is. Answers the ids written now.
 */
export async function insertNotificationsOnce(db: Knex, items: (NewNotification & { id: string })[]): Promise<string[]> {
  if (!items.length) return [];
  const rows: { id: string }[] = await db('core.notifications').insert(items.map((n) => notificationRow(n, n.id)))
    .onConflict('id').ignore().returning('id');
  return rows.map((r) => r.id);
}

/** A notification by id, if this reader may see it. */
export async function findNotification(db: Knex, id: string, reader: NotificationReader): Promise<NotificationRow | undefined> {
  return notifications(db).where({ id }).modify(visibleTo(reader)).first();
}

/** An account's notifications this reader may see, newest first, one page, and how many in all. */
export async function listNotifications(
  db: Knex, accountId: string, reader: NotificationReader, filter: { archived?: boolean }, page: Page,
): Promise<{ rows: NotificationRow[]; total: number }> {
  const base = () => {
    const q = notifications(db).where({ account_id: accountId }).modify(visibleTo(reader));
    if (filter.archived === true) void q.whereNotNull('archived_at');
    if (filter.archived === false) void q.whereNull('archived_at');
    return q;
  };
  return paged(base, page);
}

/** Archives (keeping the first archived_at when archived already) or unarchives a notification. */
export async function setNotificationArchived(db: Knex, row: NotificationRow, archived: boolean): Promise<NotificationRow> {
  const wanted = archived ? (row.archived_at ?? db.fn.now()) : null;
  const [updated] = await notifications(db).where({ id: row.id })
    .update({ archived_at: wanted, updated_at: db.fn.now() }).returning('*');
  return updated;
}
