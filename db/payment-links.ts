import type { Knex } from 'knex';
import type { LineItem } from '../contracts/checkout';
import { envTable, type Environment } from './environments';
import { accountListPage, type KeysetPage, type ListStart } from './page';

/**
 * The payment links store: each environment's `payment_links` table. A link is a reusable URL; each visit
 * opens a new checkout session from its items (api/routes/payment-link-page.ts) while it is active.
 */

export interface PaymentLinkRow {
  id: string;
  account_id: string;
  active: boolean;
  amount: number;
  currency: string;
  line_items: LineItem[] | null;
  success_url: string | null;
  metadata: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export type NewPaymentLink = Pick<PaymentLinkRow, 'id' | 'account_id' | 'amount' | 'currency' | 'line_items' | 'success_url' | 'metadata'>;

const links = (db: Knex, env: Environment) => db<PaymentLinkRow>(envTable(env, 'payment_links'));

export async function findPaymentLink(db: Knex, env: Environment, id: string): Promise<PaymentLinkRow | undefined> {
  return links(db, env).where({ id }).first();
}

/** Writes a new active link; a retry with the same id (Idempotency-Key) finds its row and leaves it as it is. */
export async function insertPaymentLink(db: Knex, env: Environment, link: NewPaymentLink): Promise<PaymentLinkRow> {
  await links(db, env).insert({
    ...link,
    line_items: link.line_items === null ? null : JSON.stringify(link.line_items),
    metadata: JSON.stringify(link.metadata),
  } as never).onConflict('id').ignore();
  return (await findPaymentLink(db, env, link.id))!;
}

/** Turns a link on or off; answers the row as it is after. */
export async function setPaymentLinkActive(db: Knex, env: Environment, id: string, active: boolean): Promise<PaymentLinkRow | undefined> {
  const [row] = await links(db, env).where({ id }).update({ active, updated_at: db.fn.now() as unknown as Date }).returning('*');
  return row as PaymentLinkRow | undefined;
}

export interface PaymentLinkFilter { active?: boolean }

/** An account's links, newest first, by keyset (as the payments list); undefined when the cursor is not one of them. */
export async function listPaymentLinks(
  db: Knex, env: Environment, accountId: string, filter: PaymentLinkFilter, start: ListStart, limit: number,
): Promise<KeysetPage<PaymentLinkRow> | undefined> {
  const base = () => {
    const q = links(db, env).where({ account_id: accountId });
    if (filter.active !== undefined) void q.where({ active: filter.active });
    return q;
  };
  return accountListPage(db, () => links(db, env), accountId, base, start, limit);
}
