import { Static, Type } from '@sinclair/typebox';
import type { PaymentLinkRow } from '../db/payment-links';
import { iso } from '../lib/timestamps';
import { LineItemsSchema } from './checkout-sessions';
import { Resource, Timestamp } from './schemas';

/** A payment link's public URL: each visit opens a new checkout session while the link is active. */
export function paymentLinkUrl(publicUrl: string, linkId: string): string {
  return `${publicUrl}/pay/${encodeURIComponent(linkId)}`;
}

/** A payment link (docs/checkout.md): a reusable URL that opens a checkout session for its items on each visit. */
export const PaymentLinkSchema = Resource('payment_link', {
  id: Type.String(),
  url: Type.String({ description: 'share this: each visit is sent (303) to a new checkout session\'s page; 410 once inactive' }),
  active: Type.Boolean(),
  line_items: LineItemsSchema,
  amount: Type.Integer({ description: 'minor units; with line_items, their sum' }),
  currency: Type.String(),
  success_url: Type.Union([Type.String(), Type.Null()]),
  created_at: Timestamp,
  updated_at: Timestamp,
  metadata: Type.Record(Type.String(), Type.Unknown()),
});

export type PaymentLink = Static<typeof PaymentLinkSchema>;

export function serializePaymentLink(row: PaymentLinkRow, publicUrl: string): PaymentLink {
  return {
    object: 'payment_link',
    id: row.id,
    url: paymentLinkUrl(publicUrl, row.id),
    active: row.active,
    line_items: row.line_items ?? null,
    amount: Number(row.amount),
    currency: row.currency,
    success_url: row.success_url ?? null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    metadata: row.metadata ?? {},
  };
}
