/**
 * Disputes (chargebacks, inquiries) as every processor's notifications become them (docs/disputes.md):
 * our statuses, reasons and evidence fields, and the normalized notice a parser makes of a processor's
 * dispute event. Pure: the API parses webhooks with it, the activities apply it, the workflow reads it.
 */

export const DISPUTE_STATUSES = [
  'WARNING_NEEDS_RESPONSE', 'WARNING_UNDER_REVIEW', 'WARNING_CLOSED', 'NEEDS_RESPONSE', 'UNDER_REVIEW', 'WON', 'LOST',
] as const;
export type DisputeStatus = typeof DISPUTE_STATUSES[number];

/** A dispute in one of these is over: no evidence, no acceptance. */
export const CLOSED_DISPUTE_STATUSES: readonly DisputeStatus[] = ['WARNING_CLOSED', 'WON', 'LOST'];

/** Statuses in which the merchant can still answer (submit evidence, or accept). */
export const ANSWERABLE_DISPUTE_STATUSES: readonly DisputeStatus[] = ['WARNING_NEEDS_RESPONSE', 'NEEDS_RESPONSE'];

/**
 * How far along a dispute is: a notice never moves a dispute back to a lower rank (an out-of-order
 * `created` after `closed` changes nothing). An inquiry (WARNING_*) may become a chargeback.
 */
export const DISPUTE_STATUS_RANK: Record<DisputeStatus, number> = {
  WARNING_NEEDS_RESPONSE: 0, WARNING_UNDER_REVIEW: 1, NEEDS_RESPONSE: 2, UNDER_REVIEW: 3, WARNING_CLOSED: 4, WON: 4, LOST: 4,
};

/**
 * Whether a notice's status replaces the dispute's (`current`, said at `currentAt` ms): never back to a
 * lower rank; of two at one rank, the one the processor dated later (Adyen's second chargeback after a
 * reversal, a pre-arbitration win after it).
 */
export function takesStatus(current: DisputeStatus, currentAt: number, next: DisputeStatus, occurredAt: string): boolean {
  const [now, then] = [DISPUTE_STATUS_RANK[current], DISPUTE_STATUS_RANK[next]];
  return then > now || (then === now && next !== current && Date.parse(occurredAt) > currentAt);
}

export const DISPUTE_REASONS = [
  'fraudulent', 'product_not_received', 'product_unacceptable', 'duplicate', 'subscription_canceled', 'unrecognized',
  'credit_not_processed', 'general',
] as const;
export type DisputeReason = typeof DISPUTE_REASONS[number];

/** The evidence a merchant may give (text fields; files are a later step), as Stripe names them. */
export const DISPUTE_EVIDENCE_FIELDS = [
  'customer_name', 'customer_email_address', 'billing_address', 'product_description', 'shipping_address', 'shipping_carrier',
  'shipping_date', 'shipping_tracking_number', 'refund_policy_disclosure', 'refund_refusal_explanation', 'cancellation_policy_disclosure',
  'cancellation_rebuttal', 'duplicate_charge_explanation', 'access_activity_log', 'service_date', 'uncategorized_text',
] as const;
export type DisputeEvidenceField = typeof DISPUTE_EVIDENCE_FIELDS[number];
export type DisputeEvidence = Partial<Record<DisputeEvidenceField, string>>;

/** Money a dispute moved: withdrawn from the merchant's balance (amount and fee), or given back. */
export interface DisputeFunds { kind: 'withdrawn' | 'reinstated'; amount: number; fee: number; currency: string }

/**
 * A processor's dispute event, normalized (ProcessorEvent.dispute). Everything but the ids is optional:
 * an event tells what it knows (Adyen's NOTIFICATION_OF_CHARGEBACK has the deadline; its CHARGEBACK the
 * money; Stripe's funds events only the money).
 */
export interface DisputeNotice {
  /** The processor's id of the dispute: Stripe's `du_…`/`dp_…`; Adyen's dispute pspReference (the chargeback's). */
  processorDisputeId: string;
  /** The processor's id of the disputed payment (Stripe's pi_… or ch_…, Adyen's original pspReference). */
  providerReference?: string;
  /** Our charge id, when the processor echoes it (Stripe's metadata, Adyen's merchantReference). */
  chargeId?: string;
  status?: DisputeStatus;
  reason?: DisputeReason;
  /** The processor's own reason code, kept as it came. */
  processorReason?: string;
  amount?: number;
  currency?: string;
  /** ISO 8601. */
  evidenceDueBy?: string;
  isInquiry?: boolean;
  funds?: DisputeFunds;
  /** When the processor says it happened (ISO 8601): of two status notices, the later one wins. */
  occurredAt: string;
}
