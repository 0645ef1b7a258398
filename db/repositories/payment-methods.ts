import type { Knex } from 'knex';
import { newId } from '../../lib/ids';
import type { ValidCard, CardNetwork } from '../../lib/cards';
import type { Vault } from '../../lib/vault';
import { envTable, Environment } from '../environments';

export interface NewCard {
  accountId: string;
  /** Null for a card given at confirm and not saved to a customer. */
  customerId: string | null;
  card: ValidCard;
  holderName?: string;
  metadata?: Record<string, string>;
}

/** Stores a card: PAN and CVC sealed by the vault, a keyed fingerprint, and only display facts in the clear. */
export async function insertCard(db: Knex, vault: Vault, env: Environment, input: NewCard): Promise<any> {
  const [row] = await db(envTable(env, 'payment_methods'))
    .insert({
      id: newId('pm'),
      account_id: input.accountId,
      customer_id: input.customerId,
      type: 'CARD',
      card_network: input.card.network,
      card_last4: input.card.last4,
      card_exp_month: input.card.expMonth,
      card_exp_year: input.card.expYear,
      card_country: null,
      card_fingerprint: vault.fingerprint(input.card.pan),
      holder_name: input.holderName ?? null,
      pan_encrypted: vault.encrypt(input.card.pan),
      cvc_encrypted: vault.encrypt(input.card.cvc),
      metadata: JSON.stringify(input.metadata ?? {}),
    })
    .returning('*');
  return row;
}

export async function paymentMethodsByCustomer(db: Knex, env: Environment, customerId: string): Promise<any[]> {
  return db(envTable(env, 'payment_methods')).where({ customer_id: customerId, deleted: false }).orderBy('created_at', 'desc').orderBy('id', 'desc');
}

/** Soft-deletes a customer's card and wipes its secrets: a deleted card can never be charged again. */
export async function deletePaymentMethod(db: Knex, env: Environment, customerId: string, pmId: string): Promise<any | undefined> {
  const [row] = await db(envTable(env, 'payment_methods'))
    .where({ id: pmId, customer_id: customerId, deleted: false })
    .update({ deleted: true, pan_encrypted: '', cvc_encrypted: null, updated_at: db.fn.now() })
    .returning('*');
  return row;
}

/** A card decrypted for one authorization attempt. Lives in activity memory only; never logged or returned. */
export interface CardForAuthorization {
  id: string;
  accountId: string;
  customerId: string | null;
  network: CardNetwork;
  last4: string;
  number: string;
  expMonth: number;
  expYear: number;
  /** Null once the first authorization attempt has used (and wiped) it. */
  cvc: string | null;
  holderName: string | null;
}

/**
 * Loads a card just in time for an authorization (the payment workflow's activities call this with the
 * payment method id they were given). Undefined when the card is unknown or deleted.
 */
export async function loadCardForAuthorization(db: Knex, vault: Vault, env: Environment, pmId: string): Promise<CardForAuthorization | undefined> {
  const row = await db(envTable(env, 'payment_methods')).where({ id: pmId, deleted: false }).first();
  if (!row) return undefined;
  return {
    id: row.id,
    accountId: row.account_id,
    customerId: row.customer_id,
    network: row.card_network,
    last4: row.card_last4,
    number: vault.decrypt(row.pan_encrypted),
    expMonth: row.card_exp_month,
    expYear: row.card_exp_year,
    cvc: row.cvc_encrypted ? vault.decrypt(row.cvc_encrypted) : null,
    holderName: row.holder_name,
  };
}

/** Forgets a card's CVC: it may be held only until the first authorization attempt (DESIGN §4). */
export async function wipeCvc(db: Knex, env: Environment, pmId: string): Promise<void> {
  await db(envTable(env, 'payment_methods')).where({ id: pmId }).whereNotNull('cvc_encrypted')
    .update({ cvc_encrypted: null, updated_at: db.fn.now() });
}
