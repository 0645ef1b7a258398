import type { Knex } from 'knex';
import { newId } from '../lib/ids';
import type { ValidCard, CardNetwork } from '../lib/cards';
import type { Vault } from '../lib/vault';
import { envTable, Environment } from './environments';
import { onlyIfFirstWrote, PREPARED } from './knex';

/**
 * The card vault's store: each environment's `payment_methods` (docs/merchant-resources.md#card-vault),
 * the only module that queries it. Numbers and CVCs are sealed by the vault and opened only by
 * loadCardForAuthorization, in activity memory.
 */

export interface PaymentMethodRow {
  id: string;
  account_id: string;
  /** The customer it is saved to; null for a single-use card given inline at confirm. */
  customer_id: string | null;
  /** The one payment a single-use card is bound to; null for a saved card. */
  payment_id: string | null;
  type: 'CARD';
  card_network: CardNetwork;
  card_last4: string;
  card_exp_month: number;
  card_exp_year: number;
  card_country: string | null;
  card_fingerprint: string;
  holder_name: string | null;
  /** '' once erased (used up or deleted): such a card can never be charged again. */
  pan_encrypted: string;
  cvc_encrypted: string | null;
  metadata: Record<string, string>;
  /**
   * The card network's id of the first approval of this saved card (docs/billing.md#stored-credentials):
   * merchant-initiated renewals reference it. Not secret; never on a single-use card.
   */
  network_transaction_id: string | null;
  deleted: boolean;
  created_at: Date;
  updated_at: Date;
}

const paymentMethods = (db: Knex, env: Environment) => db<PaymentMethodRow>(envTable(env, 'payment_methods'));

/**
 * Every column of a card's row, in the table's order: what its prepared statements read and return by
 * name (db/knex.ts PREPARED; test/payments/prepared-statements.test.ts holds it to the table).
 */
export const PAYMENT_METHOD_COLUMNS = [
  'id', 'account_id', 'customer_id', 'type', 'card_network', 'card_last4', 'card_exp_month', 'card_exp_year', 'card_country',
  'card_fingerprint', 'holder_name', 'pan_encrypted', 'cvc_encrypted', 'metadata', 'deleted', 'created_at', 'updated_at', 'payment_id',
  'network_transaction_id',
] as const satisfies readonly (keyof PaymentMethodRow)[];

export interface NewCard {
  accountId: string;
  /** Saved to this customer: reusable for that customer's payments. */
  customerId: string | null;
  /**
   * Given inline at confirm and not saved: bound to this payment, single use. Exactly one of customerId
   * and paymentId is given.
   */
  paymentId?: string | null;
  card: ValidCard;
  holderName?: string;
  metadata?: Record<string, string>;
  /**
   * A card saved to a customer while a confirm pays with it: its CVC is sealed for that confirm's
   * authorization (and wiped with it, or when the confirm ends without one). A card saved on its own
   * keeps no CVC at all: nothing would authorize with it now (PCI DSS 3.3.1.2). A single-use card keeps
   * its CVC for its one payment whatever this says.
   */
  cvcForAuthorization?: boolean;
}

/**
 * Stores a card: PAN (and the CVC, when an authorization is about to use it) sealed by the vault, a keyed
 * fingerprint, and only display facts in the clear. A card always has an owner: the customer it is saved
 * to, or the one payment it was given for.
 */
export async function insertCard(db: Knex, vault: Vault, env: Environment, input: NewCard): Promise<PaymentMethodRow> {
  if (!input.customerId === !input.paymentId) {
    throw new Error('a card is saved to a customer or bound to one payment, exactly one of the two');
  }
  const [row]: PaymentMethodRow[] = await db(envTable(env, 'payment_methods'))
    .insert({
      id: newId('pm'),
      account_id: input.accountId,
      customer_id: input.customerId ?? null,
      payment_id: input.paymentId ?? null,
      type: 'CARD',
      card_network: input.card.network,
      card_last4: input.card.last4,
      card_exp_month: input.card.expMonth,
      card_exp_year: input.card.expYear,
      card_country: null,
      card_fingerprint: vault.fingerprint(input.card.pan),
      holder_name: input.holderName ?? null,
      pan_encrypted: vault.encrypt(input.card.pan),
      cvc_encrypted: input.paymentId || input.cvcForAuthorization ? vault.encrypt(input.card.cvc) : null,
      metadata: JSON.stringify(input.metadata ?? {}),
    })
    .returning(PAYMENT_METHOD_COLUMNS)
    .options(PREPARED);
  return row;
}

/** Who wants to charge a card: the payment, with its account and customer as Postgres has them. */
export interface CardUse {
  paymentMethodId: string;
  accountId: string;
  paymentId: string;
  customerId: string | null;
}

/**
 * The card `use.paymentMethodId` if this payment may be charged with it, else undefined: a card of the
 * payment's account that still holds its number and is either saved to the payment's customer or bound
 * to this very payment. Every other case (unknown id, another account, another customer, another
 * payment, deleted, used up) looks the same, so that callers cannot tell which.
 */
export async function findUsableCard(db: Knex, env: Environment, use: CardUse): Promise<PaymentMethodRow | undefined> {
  return paymentMethods(db, env)
    .where({ id: use.paymentMethodId, account_id: use.accountId, deleted: false })
    .whereNot({ pan_encrypted: '' })
    .where((owner) => {
      owner.where((bound) => bound.whereNull('customer_id').where({ payment_id: use.paymentId }));
      if (use.customerId) owner.orWhere({ customer_id: use.customerId });
    })
    .first(...PAYMENT_METHOD_COLUMNS)
    .options(PREPARED);
}

/**
 * Erases the sealed number (and CVC) of single-use cards bound to a payment once it no longer needs
 * them: all of them, or only `paymentMethodId`. Network, last4, expiry and fingerprint stay for display.
 * Saved cards are never touched.
 */
export async function eraseSingleUseCards(db: Knex, env: Environment, paymentId: string, paymentMethodId?: string): Promise<void> {
  await singleUseCardsErasure(db, env, paymentId, paymentMethodId);
}

/** eraseSingleUseCards' statement, not yet run: to run with another store's (Alongside, db/knex.ts). */
export function singleUseCardsErasure(db: Knex, env: Environment, paymentId: string, paymentMethodId?: string): Knex.QueryBuilder {
  return paymentMethods(db, env).where(erasable({ paymentId, paymentMethodId }))
    .update({ pan_encrypted: '', cvc_encrypted: null, updated_at: db.fn.now() });
}

/** Which cards an erasure takes: a payment's single-use cards (never a saved one) still holding a number, or only one of them. */
function erasable(erase: { paymentId: string; paymentMethodId?: string }) {
  return (q: Knex.QueryBuilder) => {
    void q.where({ payment_id: erase.paymentId }).whereNull('customer_id').whereNot({ pan_encrypted: '' });
    if (erase.paymentMethodId) void q.where({ id: erase.paymentMethodId });
  };
}

export async function paymentMethodsByCustomer(db: Knex, env: Environment, customerId: string): Promise<PaymentMethodRow[]> {
  return paymentMethods(db, env).where({ customer_id: customerId, deleted: false }).orderBy('created_at', 'desc').orderBy('id', 'desc');
}

/** Soft-deletes a customer's card and wipes its secrets: a deleted card can never be charged again. */
export async function deletePaymentMethod(db: Knex, env: Environment, customerId: string, pmId: string): Promise<PaymentMethodRow | undefined> {
  const [row]: PaymentMethodRow[] = await db(envTable(env, 'payment_methods'))
    .where({ id: pmId, customer_id: customerId, deleted: false })
    .update({ deleted: true, pan_encrypted: '', cvc_encrypted: null, updated_at: db.fn.now() })
    .returning('*');
  return row;
}

/** Soft-deletes every card of a customer and wipes their secrets (the customer is being deleted). */
export async function deleteCustomerPaymentMethods(db: Knex, env: Environment, customerId: string): Promise<void> {
  await paymentMethods(db, env).where({ customer_id: customerId, deleted: false })
    .update({ deleted: true, pan_encrypted: '', cvc_encrypted: null, updated_at: db.fn.now() });
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
  /** The saved card's anchoring network transaction id (null until an approval gave one). */
  networkTransactionId: string | null;
}

/**
 * Loads a card just in time for an authorization. The payment workflow's activities pass the payment
 * the card is for, as Postgres has it, whatever id they were told: the card is returned only if that
 * payment may use it (see findUsableCard). Undefined otherwise.
 */
export async function loadCardForAuthorization(db: Knex, vault: Vault, env: Environment, use: CardUse): Promise<CardForAuthorization | undefined> {
  const row = await findUsableCard(db, env, use);
  return row && cardForAuthorization(vault, row);
}

/** A card found usable (findUsableCard), opened for an authorization. */
export function cardForAuthorization(vault: Vault, row: PaymentMethodRow): CardForAuthorization {
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
    networkTransactionId: row.network_transaction_id ?? null,
  };
}

/** Forgets a card's CVC: it may be held only until the first authorization attempt. */
export async function wipeCvc(db: Knex, env: Environment, pmId: string): Promise<void> {
  await cvcWipe(db, env, pmId);
}

/**
 * The network transaction id an approval gave, for its card to keep: only a saved card (customer_id set)
 * that has none yet takes it, so the first approval's id stays the anchor of every later renewal.
 */
export interface NetworkTransactionAnchor { paymentMethodId: string; networkTransactionId: string }

/** What an attempt's outcome does to cards (see cardsUpdate). */
export interface CardsAfterOutcome {
  /** The card whose CVC goes. */
  cvcOf?: string;
  /** The single-use cards erased (as singleUseCardsErasure). */
  erase?: { paymentId: string; paymentMethodId?: string };
  anchor?: NetworkTransactionAnchor;
}

/**
 * cardsUpdate as one statement (unrun) to go with the outcome's, written only if the statement's CTE
 * `write` wrote (onlyIfFirstWrote, db/knex.ts).
 */
export function cardsAfterOutcome(db: Knex, env: Environment, cards: CardsAfterOutcome, write: string): Knex.QueryBuilder | undefined {
  const update = cardsUpdate(db, env, cards);
  return update && onlyIfFirstWrote(update, write);
}

/**
 * What an outcome does to cards, in one update: `cvcOf`'s CVC wiped, `erase`'s single-use cards erased,
 * and the `anchor`'s saved card given its network transaction id when it has none. One update, not
 * statements side by side: they may be the same row, and two CTEs of one statement must not update the
 * same row. (A confirm whose plan found nothing eligible runs it with the payment's update.)
 */
export function cardsUpdate(db: Knex, env: Environment, { cvcOf, erase, anchor }: CardsAfterOutcome): Knex.QueryBuilder | undefined {
  if (!cvcOf && !erase && !anchor) return undefined;
  // The anchored card keeps its CVC unless it is the one wiped (it is never one of those erased: it is saved).
  const keepsCvc = anchor && anchor.paymentMethodId !== cvcOf;
  return paymentMethods(db, env)
    .where((which) => {
      if (cvcOf) void which.where((wiped) => { void wiped.where({ id: cvcOf }).whereNotNull('cvc_encrypted'); });
      if (erase) void which.orWhere(erasable(erase));
      if (anchor) void which.orWhere((anchored) => { void anchored.where({ id: anchor.paymentMethodId }).whereNotNull('customer_id').whereNull('network_transaction_id'); });
    })
    .update({
      // The wiped card keeps its number unless it is also one of those erased (a saved card never is).
      ...(erase ? {
        pan_encrypted: db.raw(`case when payment_id = ? and customer_id is null${erase.paymentMethodId ? ' and id = ?' : ''} then '' else pan_encrypted end`,
          erase.paymentMethodId ? [erase.paymentId, erase.paymentMethodId] : [erase.paymentId]),
      } : {}),
      ...(anchor ? {
        network_transaction_id: db.raw('case when id = ? and customer_id is not null then coalesce(network_transaction_id, ?) else network_transaction_id end',
          [anchor.paymentMethodId, anchor.networkTransactionId]),
      } : {}),
      cvc_encrypted: keepsCvc ? db.raw('case when id = ? then cvc_encrypted else null end', [anchor.paymentMethodId]) : null,
      updated_at: db.fn.now(),
    });
}

/** wipeCvc's statement, not yet run: to run with the attempt's outcome (Alongside, db/knex.ts). */
export function cvcWipe(db: Knex, env: Environment, pmId: string): Knex.QueryBuilder {
  return paymentMethods(db, env).where({ id: pmId }).whereNotNull('cvc_encrypted')
    .update({ cvc_encrypted: null, updated_at: db.fn.now() });
}

/** The network and last4 of a payment's card, for the checkout view (nothing else of the card). */
export async function cardDisplay(db: Knex, env: Environment, accountId: string, pmId: string): Promise<Pick<PaymentMethodRow, 'card_network' | 'card_last4'> | undefined> {
  return paymentMethods(db, env).where({ id: pmId, account_id: accountId }).first('card_network', 'card_last4');
}
