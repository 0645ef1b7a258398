import { Static, Type } from '@sinclair/typebox';
import type { AddressRow, CustomerRow } from '../db/customers';
import type { PaymentMethodRow } from '../db/payment-methods';
import { iso } from '../lib/timestamps';
import { Resource } from './schemas';
import { PaymentMethodSchema, serializePaymentMethod } from './payment-methods';

const S = Type.String();
const NS = Type.Union([S, Type.Null()]);
const TS = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

export const AddressSchema = Resource('customer_address', {
  id: S, customer_id: S, type: S, label: NS, country: NS, city: NS, state: NS, line1: NS, line2: NS, zip: NS,
  is_default: Type.Boolean(), created_at: TS, updated_at: TS,
});

/** A customer with its addresses (always) and its saved cards (only when asked for). */
export const CustomerSchema = Resource('customer', {
  id: S, account_id: S, name: NS, email: NS, phone: NS, country: NS, alternate_emails: Type.Array(S),
  is_guest: Type.Boolean(), deleted: Type.Boolean(), metadata: Type.Record(S, Type.Unknown()),
  created_at: TS, updated_at: TS,
  addresses: Type.Array(AddressSchema),
  payment_methods: Type.Optional(Type.Array(PaymentMethodSchema)),
});

export type Customer = Static<typeof CustomerSchema>;

export function serializeCustomerAddress(row: AddressRow): Static<typeof AddressSchema> {
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

export function serializeCustomer(row: CustomerRow, addresses: AddressRow[] = [], paymentMethods?: PaymentMethodRow[]): Customer {
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
