import { describe, expect, it } from 'vitest';
import { parseSandboxWebhook, simulatorSignature } from '../../activities/providers/sandbox';
import type { ProcessorEvent } from '../../activities/providers/types';
import { sandboxDisputeNotice } from '../../lib/providers/sandbox/disputes';

// The sandbox parser's reading of the simulator's dispute notifications (simulator/disputes.ts shapes):
// signed as every simulator event, normalized to ProcessorEvent.dispute.

const API_KEY = 'sk_sim_disputes_Rt5Wq';
const NOW = 1_760_000_000;

const dispute = (changes: Record<string, unknown> = {}) => ({
  id: 'sdp_01JD0000000000000000000000', object: 'dispute', charge_id: 'sch_01JD0000000000000000000001',
  charge_idempotency_key: 'ch_01JD0000000000000000000002', amount: 4_200, currency: 'EUR', reason: 'fraudulent', status: 'needs_response',
  is_inquiry: false, evidence_due_by: '2025-10-16T09:00:00.000Z', evidence_submitted_at: null, balance_transactions: [],
  created_at: '2025-10-09T09:00:00.000Z', updated_at: '2025-10-09T09:00:00.123Z', ...changes,
});

function parsed(type: string, data: Record<string, unknown>, created = NOW): ProcessorEvent {
  const rawBody = JSON.stringify({ id: `evt_sim_${type}`, type, created, data });
  const verdict = parseSandboxWebhook({ headers: { 'simulator-signature': simulatorSignature(rawBody, API_KEY, NOW) }, rawBody, credentials: { api_key: API_KEY } }, NOW);
  if (!verdict.verified) throw new Error(verdict.error);
  expect(verdict.events).toHaveLength(1);
  return verdict.events[0];
}

describe('the sandbox parser reads dispute notifications', () => {
  it('dispute.created: the notice, naming our charge (echoed) and the simulator\'s; no operation, no outcome', () => {
    const event = parsed('dispute.created', { dispute: dispute() });

    expect(event).toMatchObject({ eventId: 'evt_sim_dispute.created', type: 'dispute.created', providerReference: 'sch_01JD0000000000000000000001', chargeId: 'ch_01JD0000000000000000000002' });
    expect(event.operation).toBeUndefined();
    expect(event.outcome).toBeUndefined();
    expect(event.dispute).toEqual({
      processorDisputeId: 'sdp_01JD0000000000000000000000', providerReference: 'sch_01JD0000000000000000000001', chargeId: 'ch_01JD0000000000000000000002',
      status: 'NEEDS_RESPONSE', reason: 'fraudulent', processorReason: 'fraudulent', amount: 4_200, currency: 'EUR',
      evidenceDueBy: '2025-10-16T09:00:00.000Z', isInquiry: false, occurredAt: '2025-10-09T09:00:00.123Z',
    });
    expect(event.payload).toMatchObject({ type: 'dispute.created', data: { dispute: { id: 'sdp_01JD0000000000000000000000' } } });
  });

  it.each([
    ['warning_needs_response', 'WARNING_NEEDS_RESPONSE'], ['warning_under_review', 'WARNING_UNDER_REVIEW'], ['warning_closed', 'WARNING_CLOSED'],
    ['needs_response', 'NEEDS_RESPONSE'], ['under_review', 'UNDER_REVIEW'], ['won', 'WON'], ['lost', 'LOST'],
  ])('maps the status %s to %s', (status, ours) => {
    expect(parsed('dispute.updated', { dispute: dispute({ status }) }).dispute?.status).toBe(ours);
  });

  it('leaves out a status it does not know, and reads a reason it does not know as general (keeping the processor\'s)', () => {
    const notice = parsed('dispute.updated', { dispute: dispute({ status: 'charge_refunded', reason: 'bank_cannot_process' }) }).dispute;
    expect(notice?.status).toBeUndefined();
    expect(notice).toMatchObject({ reason: 'general', processorReason: 'bank_cannot_process' });
  });

  it('dispute.funds_withdrawn and dispute.funds_reinstated carry the money moved, with its fee', () => {
    const withdrawal = { type: 'withdrawal', amount: 4_200, fee: 1_500, currency: 'EUR', created_at: '2025-10-09T09:00:00.124Z' };
    const reinstatement = { type: 'reinstatement', amount: 4_200, fee: 0, currency: 'EUR', created_at: '2025-10-10T09:00:00.000Z' };

    expect(parsed('dispute.funds_withdrawn', { dispute: dispute(), balance_transaction: withdrawal }).dispute?.funds)
      .toEqual({ kind: 'withdrawn', amount: 4_200, fee: 1_500, currency: 'EUR' });
    expect(parsed('dispute.funds_reinstated', { dispute: dispute({ status: 'won' }), balance_transaction: reinstatement }).dispute)
      .toMatchObject({ status: 'WON', funds: { kind: 'reinstated', amount: 4_200, fee: 0, currency: 'EUR' } });
  });

  it('takes money only from the funds event of its kind, and only when it is readable', () => {
    const withdrawal = { type: 'withdrawal', amount: 4_200, fee: 1_500, currency: 'EUR' };
    expect(parsed('dispute.updated', { dispute: dispute(), balance_transaction: withdrawal }).dispute?.funds).toBeUndefined();
    expect(parsed('dispute.funds_reinstated', { dispute: dispute(), balance_transaction: withdrawal }).dispute?.funds).toBeUndefined();
    expect(parsed('dispute.funds_withdrawn', { dispute: dispute(), balance_transaction: { ...withdrawal, amount: -4_200 } }).dispute?.funds).toBeUndefined();
  });

  it('an inquiry says so', () => {
    const notice = parsed('dispute.created', { dispute: dispute({ status: 'warning_needs_response', is_inquiry: true, reason: 'general' }) }).dispute;
    expect(notice).toMatchObject({ status: 'WARNING_NEEDS_RESPONSE', isInquiry: true, reason: 'general' });
  });

  it('dates the notice by the dispute\'s updated_at, else by the event\'s created second', () => {
    expect(parsed('dispute.closed', { dispute: dispute({ updated_at: undefined }) }).dispute?.occurredAt).toBe(new Date(NOW * 1000).toISOString());
    expect(parsed('dispute.closed', { dispute: dispute({ updated_at: 'not a date' }) }, NOW - 60).dispute?.occurredAt).toBe(new Date((NOW - 60) * 1000).toISOString());
  });

  it('an event naming no dispute, or of another type, is no dispute notice', () => {
    expect(parsed('dispute.created', { dispute: { status: 'needs_response' } }).dispute).toBeUndefined();
    expect(parsed('dispute.renamed', { dispute: dispute() }).dispute).toBeUndefined();
    expect(sandboxDisputeNotice('charge.authentication_completed', { charge: { id: 'sch_1' } }, NOW)).toBeUndefined();
  });

  it('refuses a dispute notification whose signature does not match', () => {
    const rawBody = JSON.stringify({ id: 'evt_sim_forged', type: 'dispute.closed', created: NOW, data: { dispute: dispute({ status: 'won' }) } });
    const verdict = parseSandboxWebhook({
      headers: { 'simulator-signature': simulatorSignature(rawBody, 'sk_sim_not_the_key', NOW) }, rawBody, credentials: { api_key: API_KEY },
    }, NOW);
    expect(verdict).toMatchObject({ verified: false, error: 'no signature matches the body' });
  });
});
