import { paged, type Page } from './page';
import type { Knex } from 'knex';
import { newId } from '../lib/ids';
import { envTable, Environment } from './environments';
import { deleteCustomerPaymentMethods } from './payment-methods';

/** The customers store: each environment's `customers` and `customer_addresses`. */

export type AddressType = 'BILLING' | 'SHIPPING';

export interface CustomerRow {
  id: string;
  account_id: string;
  name: string | null;
  email: string | null;
  phone: string | null;
  country: string | null;
  alternate_emails: string[];
  is_guest: boolean;
  deleted: boolean;
  metadata: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export interface AddressRow {
  id: string;
  customer_id: string;
  type: AddressType;
  label: string | null;
  country: string | null;
  city: string | null;
  state: string | null;
  line1: string | null;
  line2: string | null;
  zip: string | null;
  is_default: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface AddressInput {
  type?: AddressType;
  label?: string;
  country?: string;
  city?: string;
  state?: string;
  line1?: string;
  line2?: string;
  zip?: string;
}

export interface CustomerFields {
  name?: string | null;
  email?: string | null;
  phone?: string | null;
  country?: string | null;
  alternate_emails?: string[];
  is_guest?: boolean;
  metadata?: Record<string, string>;
}

const customers = (db: Knex, env: Environment) => db<CustomerRow>(envTable(env, 'customers'));
const addresses = (db: Knex, env: Environment) => db<AddressRow>(envTable(env, 'customer_addresses'));

/** Addresses of each customer, newest first. */
export async function addressesByCustomer(db: Knex, env: Environment, customerIds: string[]): Promise<Map<string, AddressRow[]>> {
  const rows = customerIds.length
    ? await addresses(db, env).whereIn('customer_id', customerIds).orderBy('created_at', 'desc').orderBy('id', 'desc')
    : [];
  const map = new Map<string, AddressRow[]>(customerIds.map((id) => [id, []]));
  for (const row of rows) map.get(row.customer_id)?.push(row);
  return map;
}

/** A payment's guest customer (its id derived from the payment's). */
export interface GuestCustomer { id: string; name?: string; email?: string; phone?: string; country?: string }

/**
 * Writes a guest customer. Idempotent: an existing row is kept as it is. Answers whether this call wrote
 * it (a create that took over a crashed try's claim finds the row that try wrote).
 */
export async function insertGuestCustomer(db: Knex, env: Environment, accountId: string, guest: GuestCustomer): Promise<boolean> {
  const written = await db(envTable(env, 'customers')).insert({
    id: guest.id, account_id: accountId, name: guest.name ?? null, email: guest.email ?? null, phone: guest.phone ?? null,
    country: guest.country ?? null, is_guest: true,
  }).onConflict('id').ignore().returning('id');
  return written.length > 0;
}

/**
 * Removes a guest customer whose payment never started, in one statement that finds no row of `payment`
 * (the payments store's select of it, unrun): a payment that did get written keeps its guest.
 */
export async function deleteGuestCustomer(db: Knex, env: Environment, accountId: string, id: string, payment: Knex.QueryBuilder): Promise<boolean> {
  const deleted = await customers(db, env).where({ id, account_id: accountId, is_guest: true }).whereNotExists(payment).delete();
  return deleted > 0;
}

/** A live (not deleted) customer. */
export async function findCustomer(db: Knex, env: Environment, id: string): Promise<CustomerRow | undefined> {
  return customers(db, env).where({ id, deleted: false }).first();
}

/** A live customer of the account (what a payment may name). */
export async function findAccountCustomer(db: Knex, env: Environment, accountId: string, id: string): Promise<CustomerRow | undefined> {
  return customers(db, env).where({ id, account_id: accountId, deleted: false }).first();
}

/** Customers by id, deleted ones included (a payment shows the customer it was made for). */
export async function customersByIds(db: Knex, env: Environment, ids: string[]): Promise<CustomerRow[]> {
  return ids.length ? customers(db, env).whereIn('id', ids) : [];
}

/** An account's live customers, newest first, one page, and how many in all. */
export async function listCustomers(
  db: Knex, env: Environment, accountId: string, page: Page,
): Promise<{ rows: CustomerRow[]; total: number }> {
  return paged(() => customers(db, env).where({ account_id: accountId, deleted: false }), page);
}

/** Locks a live customer row for the rest of the transaction, so address changes on it serialize. */
async function lockCustomer(trx: Knex.Transaction, env: Environment, id: string): Promise<CustomerRow | undefined> {
  return customers(trx, env).where({ id, deleted: false }).forUpdate().first();
}

function addressRow(customerId: string, input: AddressInput, isDefault: boolean) {
  return {
    id: newId('addr'),
    customer_id: customerId,
    type: input.type ?? 'BILLING',
    label: input.label ?? null,
    country: input.country ?? null,
    city: input.city ?? null,
    state: input.state ?? null,
    line1: input.line1 ?? null,
    line2: input.line2 ?? null,
    zip: input.zip ?? null,
    is_default: isDefault,
  };
}

async function hasDefault(trx: Knex.Transaction, env: Environment, customerId: string, type: AddressType): Promise<boolean> {
  return Boolean(await addresses(trx, env).where({ customer_id: customerId, type, is_default: true }).first('id'));
}

function customerColumns(fields: CustomerFields) {
  const columns: Record<string, unknown> = {};
  for (const key of ['name', 'email', 'phone', 'country', 'is_guest'] as const) {
    if (fields[key] !== undefined) columns[key] = fields[key];
  }
  if (fields.alternate_emails !== undefined) columns.alternate_emails = JSON.stringify(fields.alternate_emails);
  if (fields.metadata !== undefined) columns.metadata = JSON.stringify(fields.metadata);
  return columns;
}

/** A customer and its first addresses in one transaction; the first address of each type is its default. */
export async function createCustomer(
  db: Knex, env: Environment, accountId: string, fields: CustomerFields, newAddresses: AddressInput[] = [],
): Promise<CustomerRow> {
  return db.transaction(async (trx) => {
    const [customer] = await trx(envTable(env, 'customers'))
      .insert({ id: newId('cus'), account_id: accountId, ...customerColumns(fields) })
      .returning<CustomerRow[]>('*');
    const seen = new Set<string>();
    const rows = newAddresses.map((a) => {
      const type = a.type ?? 'BILLING';
      const first = !seen.has(type);
      seen.add(type);
      return addressRow(customer.id, a, first);
    });
    if (rows.length) await trx(envTable(env, 'customer_addresses')).insert(rows);
    return customer;
  });
}

export async function updateCustomer(db: Knex, env: Environment, id: string, fields: CustomerFields): Promise<CustomerRow | undefined> {
  const [row] = await db(envTable(env, 'customers'))
    .where({ id, deleted: false })
    .update({ ...customerColumns(fields), updated_at: db.fn.now() })
    .returning<CustomerRow[]>('*');
  return row;
}

/**
 * Soft-deletes a customer. Its stored cards go with it, in the same transaction: marked deleted and
 * their secrets wiped, since nothing may charge them any more.
 */
export async function deleteCustomer(db: Knex, env: Environment, id: string): Promise<CustomerRow | undefined> {
  return db.transaction(async (trx) => {
    const [row] = await customers(trx, env).where({ id, deleted: false }).update({ deleted: true, updated_at: trx.fn.now() }).returning('*');
    if (!row) return undefined;
    await deleteCustomerPaymentMethods(trx, env, id);
    return row;
  });
}

/** Adds an address; it becomes the default of its type when that type has none. Null: no such customer. */
export async function addAddress(db: Knex, env: Environment, customerId: string, input: AddressInput): Promise<AddressRow | null> {
  return db.transaction(async (trx) => {
    if (!(await lockCustomer(trx, env, customerId))) return null;
    const isDefault = !(await hasDefault(trx, env, customerId, input.type ?? 'BILLING'));
    const [row] = await trx(envTable(env, 'customer_addresses')).insert(addressRow(customerId, input, isDefault)).returning<AddressRow[]>('*');
    return row;
  });
}

/**
 * Makes an address the default of its type. The customer row is locked first so concurrent calls run one
 * after the other; clearing the old default and setting the new one happen in the same transaction (and
 * the partial unique index refuses two defaults if anything ever slips past). Null: no such address.
 */
export async function markAddressPrimary(db: Knex, env: Environment, customerId: string, addressId: string): Promise<AddressRow | null> {
  return db.transaction(async (trx) => {
    if (!(await lockCustomer(trx, env, customerId))) return null;
    const address = await addresses(trx, env).where({ id: addressId, customer_id: customerId }).first();
    if (!address) return null;
    if (address.is_default) return address;
    await addresses(trx, env).where({ customer_id: customerId, type: address.type, is_default: true }).update({ is_default: false, updated_at: trx.fn.now() });
    const [row] = await addresses(trx, env).where({ id: addressId }).update({ is_default: true, updated_at: trx.fn.now() }).returning('*');
    return row;
  });
}

/** Removes an address; when it was the default, the newest remaining one of its type takes over. */
export async function removeAddress(db: Knex, env: Environment, customerId: string, addressId: string): Promise<boolean> {
  return db.transaction(async (trx) => {
    if (!(await lockCustomer(trx, env, customerId))) return false;
    const [removed] = await addresses(trx, env).where({ id: addressId, customer_id: customerId }).del().returning('*');
    if (!removed) return false;
    if (removed.is_default) {
      const next = await addresses(trx, env).where({ customer_id: customerId, type: removed.type })
        .orderBy('created_at', 'desc').orderBy('id', 'desc').first('id');
      if (next) await addresses(trx, env).where({ id: next.id }).update({ is_default: true, updated_at: trx.fn.now() });
    }
    return true;
  });
}
