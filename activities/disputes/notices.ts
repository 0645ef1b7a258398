import type { Knex } from 'knex';
import { insertDispute, lockDispute, updateDispute, type DisputePatch, type DisputeRow } from '../../db/disputes';
import { appendEvents, type EventRecord } from '../../db/events';
import { findCharge } from '../../db/payments';
import { findProviderEvent, type ProviderEventRow } from '../../db/provider-events';
import { logger } from '../../lib/logger';
import {
  CLOSED_DISPUTE_STATUSES, takesStatus, type DisputeClock, type DisputeInput, type DisputeNotice, type DisputeRef,
} from '../../contracts/disputes';
import { clockOf, disputeEvent, readClock, type DisputeActivityDeps } from './state';

/** The stored event, if it is about this dispute (its config, its processor id, a charge of ours). */
async function storedNotice(db: Knex, ref: DisputeRef, input: DisputeInput, eventId: string): Promise<{ row: ProviderEventRow; notice: DisputeNotice } | undefined> {
  const row = await findProviderEvent(db, ref.environment, eventId);
  const notice = row?.dispute;
  if (!row || !notice || !row.charge_id || row.payment_provider_config_id !== input.providerConfigId || notice.processorDisputeId !== input.processorDisputeId) {
    logger.warn({ dispute_id: ref.disputeId, provider_event_id: String(eventId).slice(0, 64) }, 'dispute event ignored: not this dispute\'s');
    return undefined;
  }
  return { row, notice };
}

/** The first notice of a dispute makes its row: what the notice says, the charge's amount where it does not. */
async function created(trx: Knex.Transaction, ref: DisputeRef, input: DisputeInput, event: ProviderEventRow, notice: DisputeNotice): Promise<EventRecord[]> {
  const charge = (await findCharge(trx, ref.environment, event.charge_id!))!;
  const funds = notice.funds ? [{ ...notice.funds, event_id: event.id, at: notice.occurredAt }] : [];
  const row: Omit<DisputeRow, 'created_at' | 'updated_at'> = {
    id: ref.disputeId, account_id: event.account_id, payment_id: charge.payment_id, charge_id: charge.id, payment_provider_config_id: input.providerConfigId,
    processor_dispute_id: notice.processorDisputeId, amount: notice.amount ?? Number(charge.amount), currency: notice.currency ?? charge.currency,
    reason: notice.reason ?? 'general', processor_reason: notice.processorReason ?? null,
    status: notice.status ?? (notice.isInquiry ? 'WARNING_NEEDS_RESPONSE' : 'NEEDS_RESPONSE'), status_at: new Date(notice.occurredAt),
    is_inquiry: notice.isInquiry ?? false, evidence_due_by: notice.evidenceDueBy ? new Date(notice.evidenceDueBy) : null, evidence: {},
    evidence_submitted_at: null, reminded_at: null, overdue_at: null, balance_transactions: funds, applied_event_ids: [event.id], exchanges: [],
  };
  await insertDispute(trx, ref.environment, row);
  const written = (await lockDispute(trx, ref.environment, ref.disputeId))!;
  const events = [disputeEvent('charge.dispute.created', written)];
  if (notice.funds) events.push(disputeEvent(`charge.dispute.funds_${notice.funds.kind}`, written));
  return events;
}

/** A later notice: the facts it adds, its status when it moves the dispute on, the money it moved. */
async function updated(trx: Knex.Transaction, ref: DisputeRef, dispute: DisputeRow, event: ProviderEventRow, notice: DisputeNotice): Promise<EventRecord[]> {
  const patch: DisputePatch = { applied_event_ids: [...dispute.applied_event_ids, event.id] };
  const moves = notice.status !== undefined && takesStatus(dispute.status, new Date(dispute.status_at).getTime(), notice.status, notice.occurredAt);
  if (moves) Object.assign(patch, { status: notice.status, status_at: new Date(notice.occurredAt) });
  if (notice.evidenceDueBy && !dispute.evidence_due_by) patch.evidence_due_by = new Date(notice.evidenceDueBy);
  if (notice.reason && dispute.reason === 'general') Object.assign(patch, { reason: notice.reason, processor_reason: notice.processorReason ?? null });
  if (notice.amount !== undefined) patch.amount = notice.amount;
  if (notice.funds) patch.balance_transactions = [...dispute.balance_transactions, { ...notice.funds, event_id: event.id, at: notice.occurredAt }];
  const after = await updateDispute(trx, ref.environment, dispute.id, patch);
  const events: EventRecord[] = [];
  if (moves) events.push(disputeEvent(CLOSED_DISPUTE_STATUSES.includes(after.status) ? 'charge.dispute.closed' : 'charge.dispute.updated', after));
  if (notice.funds) events.push(disputeEvent(`charge.dispute.funds_${notice.funds.kind}`, after));
  return events;
}

/**
 * Applies a processor's notice to its dispute, once per stored event and in any order: the first makes
 * the row, a later one never moves it back (DISPUTE_STATUS_RANK), and money moved is recorded per event.
 */
export function noticeActivities({ db }: DisputeActivityDeps) {
  return {
    async applyDisputeEvent(ref: DisputeRef, input: DisputeInput, eventId: string): Promise<DisputeClock> {
      const stored = await storedNotice(db, ref, input, eventId);
      if (!stored) return readClock(db, ref);
      return db.transaction(async (trx) => {
        const dispute = await lockDispute(trx, ref.environment, ref.disputeId);
        if (dispute?.applied_event_ids.includes(eventId)) return clockOf(dispute);
        const events = dispute ? await updated(trx, ref, dispute, stored.row, stored.notice) : await created(trx, ref, input, stored.row, stored.notice);
        const after = (await lockDispute(trx, ref.environment, ref.disputeId))!;
        await appendEvents(trx, ref.environment, events);
        return clockOf(after);
      });
    },
  };
}
