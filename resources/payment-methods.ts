import { Static, Type } from '@sinclair/typebox';
import type { PaymentMethodRow } from '../db/payment-methods';
import { iso } from '../lib/timestamps';
import { Resource } from './schemas';

// A stored card as the API shows it (docs/merchant-resources.md#card-vault): only what identifies it to a
// person (network, last4, expiry) — never the number or CVC. Customers embed their saved cards.

const S = Type.String();
const NS = Type.Union([Type.String(), Type.Null()]);
const TS = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);

export const PaymentMethodSchema = Resource('payment_method', {
  id: S, account_id: S, customer_id: NS, type: Type.Literal('CARD'),
  card: Type.Object({
    network: S, last4: S, exp_month: Type.Integer(), exp_year: Type.Integer(), fingerprint: S, country: NS, holder_name: NS,
  }),
  metadata: Type.Record(S, Type.Unknown()), deleted: Type.Boolean(), created_at: TS, updated_at: TS,
});

export type PaymentMethod = Static<typeof PaymentMethodSchema>;

export function serializePaymentMethod(row: PaymentMethodRow): PaymentMethod {
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
