// The sandbox processor's dispute notifications (docs/sandbox-processor.md#disputes-in-the-sandbox) read as
// DisputeNotices: `dispute.created|updated|closed|funds_withdrawn|funds_reinstated`, each carrying the
// dispute as it then was (its statuses are Stripe's, lower-case) and, for the funds events, the money moved.

import { DISPUTE_REASONS, DISPUTE_STATUSES, type DisputeFunds, type DisputeNotice, type DisputeReason, type DisputeStatus } from '../disputes';
import { isObject } from '../wire';

export const SANDBOX_DISPUTE_EVENT_TYPES = [
  'dispute.created', 'dispute.updated', 'dispute.closed', 'dispute.funds_withdrawn', 'dispute.funds_reinstated',
] as const;

const EVENT_TYPES: readonly string[] = SANDBOX_DISPUTE_EVENT_TYPES;
const STATUSES: readonly string[] = DISPUTE_STATUSES;
const REASONS: readonly string[] = DISPUTE_REASONS;
const FUNDS_KIND: Record<string, DisputeFunds['kind']> = { withdrawal: 'withdrawn', reinstatement: 'reinstated' };

/**
 * The notice of a dispute event, or undefined when the event is not one (or names no dispute).
 * `created`: the event's unix seconds, the fallback when the dispute has no readable `updated_at`.
 */
export function sandboxDisputeNotice(type: string, data: Record<string, unknown>, created: unknown): DisputeNotice | undefined {
  const dispute = data.dispute;
  if (!EVENT_TYPES.includes(type) || !isObject(dispute) || !nonEmpty(dispute.id)) return undefined;
  const status = typeof dispute.status === 'string' ? dispute.status.toUpperCase() : undefined;
  const reason = typeof dispute.reason === 'string' ? dispute.reason : undefined;
  const funds = fundsOf(type, data.balance_transaction);
  return {
    processorDisputeId: dispute.id,
    ...(nonEmpty(dispute.charge_id) ? { providerReference: dispute.charge_id } : {}),
    ...(nonEmpty(dispute.charge_idempotency_key) ? { chargeId: dispute.charge_idempotency_key } : {}),
    ...(status && STATUSES.includes(status) ? { status: status as DisputeStatus } : {}),
    ...(reason ? { reason: (REASONS.includes(reason) ? reason : 'general') as DisputeReason, processorReason: reason } : {}),
    ...(isAmount(dispute.amount) ? { amount: dispute.amount } : {}),
    ...(typeof dispute.currency === 'string' && /^[A-Za-z]{3}$/.test(dispute.currency) ? { currency: dispute.currency.toUpperCase() } : {}),
    ...(isInstant(dispute.evidence_due_by) ? { evidenceDueBy: new Date(dispute.evidence_due_by).toISOString() } : {}),
    ...(typeof dispute.is_inquiry === 'boolean' ? { isInquiry: dispute.is_inquiry } : {}),
    ...(funds ? { funds } : {}),
    occurredAt: occurredAt(dispute.updated_at, created),
  };
}

/** The money a funds event moved (its `balance_transaction`), only on the event of that kind. */
function fundsOf(type: string, transaction: unknown): DisputeFunds | undefined {
  if (!isObject(transaction) || typeof transaction.type !== 'string') return undefined;
  const kind = FUNDS_KIND[transaction.type];
  if (!kind || type !== `dispute.funds_${kind}`) return undefined;
  const { amount, fee, currency } = transaction;
  if (!isAmount(amount) || !(fee === undefined || isAmount(fee)) || typeof currency !== 'string' || !/^[A-Za-z]{3}$/.test(currency)) return undefined;
  return { kind, amount, fee: fee ?? 0, currency: currency.toUpperCase() };
}

/** When the processor changed the dispute (millisecond precision, so two events of one second keep their order), else the event's second. */
function occurredAt(updatedAt: unknown, created: unknown): string {
  if (isInstant(updatedAt)) return new Date(updatedAt).toISOString();
  if (typeof created === 'number' && Number.isFinite(created)) return new Date(created * 1000).toISOString();
  return new Date(0).toISOString();
}

function nonEmpty(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

function isAmount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isInstant(value: unknown): value is string {
  return typeof value === 'string' && !Number.isNaN(Date.parse(value));
}
