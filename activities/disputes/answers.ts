import { ApplicationFailure } from '@temporalio/activity';
import { findDispute, lockDispute, updateDispute, type DisputeRow } from '../../db/disputes';
import { appendEvents } from '../../db/events';
import { insertNotifications } from '../../db/notifications';
import {
  ANSWERABLE_DISPUTE_STATUSES, CLOSED_DISPUTE_STATUSES, DISPUTE_SEAL_PURPOSE, disputeAnswerText,
  type DisputeAnswer, type DisputeAnswerResult, type DisputeAnswerSent, type DisputeClock, type DisputeEvidence, type DisputeRef, type SealedDisputeAnswer,
} from '../../contracts/disputes';
import { openProvider } from '../providers/open';
import type { DisputeActionOutput } from '../providers/types';
import { clockOf, disputeEvent, inOwnWorkflow, readClock, type DisputeActivityDeps } from './state';

type Answered = { result: DisputeAnswerResult; clock: DisputeClock };
const refused = (code: string, message: string): DisputeAnswerResult => ({ applied: false, code, message });

/** Why the merchant cannot answer the dispute now, if they cannot. */
function unanswerable(dispute: DisputeRow, submitting: boolean, now: number): DisputeAnswerResult | undefined {
  if (CLOSED_DISPUTE_STATUSES.includes(dispute.status)) return refused('dispute_closed', `The dispute is ${dispute.status}; it takes no more answers.`);
  if (dispute.evidence_submitted_at) return refused('evidence_already_submitted', 'The evidence was submitted; the processor is deciding.');
  if (!ANSWERABLE_DISPUTE_STATUSES.includes(dispute.status)) return refused('dispute_not_answerable', `A ${dispute.status} dispute takes no answer.`);
  if (submitting && dispute.evidence_due_by && now > new Date(dispute.evidence_due_by).getTime()) {
    return refused('evidence_past_due', `The evidence was due by ${new Date(dispute.evidence_due_by).toISOString()}.`);
  }
  return undefined;
}

/**
 * The merchant's answers and the deadline's steps (docs/disputes.md#answering): evidence saved, submitted
 * through the connector, or the dispute accepted — each checked against the API's seal, refused after the
 * deadline or twice; the processor is called with no row lock held, and its answer written after.
 */
export function answerActivities(deps: DisputeActivityDeps) {
  const { db, vault } = deps;

  async function callProcessor(ref: DisputeRef, dispute: DisputeRow, kind: 'submit' | 'accept', evidence: DisputeEvidence): Promise<DisputeActionOutput> {
    const provider = await openProvider(deps, ref.environment, dispute.payment_provider_config_id);
    const base = { credentials: provider.credentials, processorDisputeId: dispute.processor_dispute_id, idempotencyKey: `${dispute.id}:${kind}` };
    const output = kind === 'submit'
      ? await provider.adapter.submitDisputeEvidence({ ...base, evidence, reason: dispute.reason })
      : await provider.adapter.acceptDispute(base);
    if (output.result === 'failed') throw ApplicationFailure.retryable(`the processor did not answer the dispute's ${kind}: ${output.error}`, 'dispute_processor_failed');
    return output;
  }

  /** The answer the API sent, its evidence decrypted; undefined when it cannot be (not encrypted with this vault). */
  function opened(sent: DisputeAnswerSent): DisputeAnswer | undefined {
    if (sent.kind !== 'evidence') return sent;
    try {
      return { kind: 'evidence', evidence: vault.decryptJson<DisputeEvidence>(sent.encryptedEvidence), submit: sent.submit };
    } catch {
      return undefined;
    }
  }

  async function answer(ref: DisputeRef, answer: DisputeAnswer): Promise<Answered> {
    const now = Date.now();
    const dispute = await findDispute(db, ref.environment, ref.disputeId);
    if (!dispute) return { result: refused('not_found', 'No such dispute.'), clock: clockOf(undefined) };
    const submitting = answer.kind === 'accept' || answer.submit;
    const why = unanswerable(dispute, submitting, now);
    if (why) return { result: why, clock: clockOf(dispute) };
    const evidence = answer.kind === 'evidence' ? { ...dispute.evidence, ...answer.evidence } : dispute.evidence;
    const output = submitting ? await callProcessor(ref, dispute, answer.kind === 'accept' ? 'accept' : 'submit', evidence) : undefined;
    if (output?.result === 'refused') return { result: refused('processor_refused', output.reason), clock: clockOf(dispute) };
    return db.transaction(async (trx) => {
      const locked = (await lockDispute(trx, ref.environment, ref.disputeId))!;
      const exchanges = output ? [...locked.exchanges, output.exchange as unknown as Record<string, unknown>] : locked.exchanges;
      const status = answer.kind === 'accept' ? (locked.is_inquiry ? 'WARNING_CLOSED' : 'LOST') : submitting ? (locked.is_inquiry ? 'WARNING_UNDER_REVIEW' : 'UNDER_REVIEW') : locked.status;
      const after = await updateDispute(trx, ref.environment, locked.id, {
        evidence, exchanges, ...(status !== locked.status ? { status, status_at: new Date(now) } : {}),
        ...(answer.kind === 'evidence' && answer.submit ? { evidence_submitted_at: new Date(now) } : {}),
      });
      const event = status === locked.status ? 'charge.dispute.updated' : CLOSED_DISPUTE_STATUSES.includes(status) ? 'charge.dispute.closed' : 'charge.dispute.updated';
      await appendEvents(trx, ref.environment, [disputeEvent(event, after)]);
      return { result: { applied: true } as const, clock: clockOf(after) };
    });
  }

  /** One of the deadline's steps, once (`column` null until then), while the merchant can still answer. */
  async function deadlineStep(ref: DisputeRef, column: 'reminded_at' | 'overdue_at', event: string): Promise<DisputeClock> {
    return db.transaction(async (trx) => {
      const dispute = await lockDispute(trx, ref.environment, ref.disputeId);
      if (!dispute || dispute[column] || dispute.evidence_submitted_at || !ANSWERABLE_DISPUTE_STATUSES.includes(dispute.status)) return clockOf(dispute);
      const after = await updateDispute(trx, ref.environment, dispute.id, { [column]: new Date() });
      if (column === 'overdue_at') {
        await insertNotifications(trx, [{
          accountId: after.account_id, type: 'dispute.evidence_overdue',
          details: { dispute_id: after.id, payment_id: after.payment_id, amount: Number(after.amount), currency: after.currency, evidence_due_by: after.evidence_due_by },
        }]);
      }
      await appendEvents(trx, ref.environment, [disputeEvent(event, after)]);
      return clockOf(after);
    });
  }

  return {
    readDispute: (ref: DisputeRef) => readClock(db, ref),
    remindEvidenceDue: (ref: DisputeRef) => deadlineStep(ref, 'reminded_at', 'charge.dispute.evidence_due_soon'),
    markEvidenceOverdue: (ref: DisputeRef) => deadlineStep(ref, 'overdue_at', 'charge.dispute.updated'),
    async answerDispute(ref: DisputeRef, updateId: string, sealed: SealedDisputeAnswer): Promise<Answered> {
      const sent = opened(sealed.answer);
      if (!sent || !vault.sealed(DISPUTE_SEAL_PURPOSE, disputeAnswerText(ref.disputeId, updateId, sent), sealed.seal) || !inOwnWorkflow(ref.disputeId)) {
        return { result: refused('unsealed_command', 'The answer was not sent by the API.'), clock: await readClock(db, ref) };
      }
      return answer(ref, sent);
    },
  };
}
