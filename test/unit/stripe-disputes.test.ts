import { describe, expect, it } from 'vitest';
import { parseStripeWebhook } from '../../activities/providers/stripe';
import type { ProcessorEvent, WebhookRequest } from '../../activities/providers/types';
import { disputeRefusal } from '../../activities/providers/stripe/disputes';
import { signStripePayload } from '../doubles/stripe/server';

// Stripe's dispute events read as DisputeNotices (lib/providers/stripe/notifications.ts), without
// Postgres, Temporal or the double: the signed event as Stripe sends it, parsed.

const SECRET = 'whsec_unit_disputes';
const credentials = { secret_key: 'sk_test_unit_disputes', webhook_secret: SECRET };
const CREATED = 1_760_000_000;

function parsed(type: string, object: Record<string, unknown>, created = CREATED): ProcessorEvent {
  const body = {
    id: `evt_${Math.random().toString(36).slice(2)}`, object: 'event', api_version: '2025-02-24.acacia', created,
    data: { object }, livemode: false, pending_webhooks: 1, request: { id: null, idempotency_key: null }, type,
  };
  const rawBody = JSON.stringify(body, null, 2);
  const request: WebhookRequest = { rawBody, headers: { 'stripe-signature': signStripePayload(rawBody, SECRET) }, credentials };
  const verdict = parseStripeWebhook(request);
  if (!verdict.verified) throw new Error(verdict.error);
  expect(verdict.events).toHaveLength(1);
  return verdict.events[0];
}

const withdrawal = { id: 'txn_w', object: 'balance_transaction', amount: -2000, currency: 'usd', fee: 1500, net: -3500, reporting_category: 'dispute', type: 'adjustment' };
const reversal = { id: 'txn_r', object: 'balance_transaction', amount: 2000, currency: 'usd', fee: -1500, net: 3500, reporting_category: 'dispute_reversal', type: 'adjustment' };

const dispute = (fields: Record<string, unknown> = {}) => ({
  id: 'du_1', object: 'dispute', amount: 2000, balance_transactions: [], charge: 'ch_stripe_1', created: CREATED - 5, currency: 'usd',
  evidence: { customer_name: null, uncategorized_text: null },
  evidence_details: { due_by: CREATED + 7 * 86_400, has_evidence: false, past_due: false, submission_count: 0 },
  is_charge_refundable: false, livemode: false, metadata: {}, payment_intent: 'pi_1',
  payment_method_details: { card: { brand: 'visa', case_type: 'chargeback', network_reason_code: '10.4' }, type: 'card' },
  reason: 'fraudulent', status: 'needs_response',
  ...fields,
});

describe('Stripe dispute events as DisputeNotices', () => {
  it('reads a chargeback\'s creation: ids, status, reason, money, deadline, when', () => {
    const event = parsed('charge.dispute.created', dispute());
    expect(event).toMatchObject({ type: 'charge.dispute.created', providerReference: 'pi_1' });
    expect(event.operation).toBeUndefined();
    expect(event.outcome).toBeUndefined();
    expect(event.dispute).toEqual({
      processorDisputeId: 'du_1', providerReference: 'pi_1', status: 'NEEDS_RESPONSE', reason: 'fraudulent', processorReason: 'fraudulent',
      amount: 2000, currency: 'USD', evidenceDueBy: new Date((CREATED + 7 * 86_400) * 1000).toISOString(), isInquiry: false,
      occurredAt: new Date(CREATED * 1000).toISOString(),
    });
    expect(event.payload).toMatchObject({ type: 'charge.dispute.created', data: { object: { id: 'du_1', reason: 'fraudulent' } } });
  });

  it('reads an inquiry by its status or its case_type', () => {
    expect(parsed('charge.dispute.created', dispute({ status: 'warning_needs_response', reason: 'general' })).dispute)
      .toMatchObject({ status: 'WARNING_NEEDS_RESPONSE', isInquiry: true, reason: 'general' });
    const caseType = dispute({ payment_method_details: { card: { case_type: 'inquiry' }, type: 'card' } });
    expect(parsed('charge.dispute.created', caseType).dispute).toMatchObject({ status: 'NEEDS_RESPONSE', isInquiry: true });
  });

  it('maps every Stripe status to ours', () => {
    const statuses: [string, string][] = [
      ['warning_needs_response', 'WARNING_NEEDS_RESPONSE'], ['warning_under_review', 'WARNING_UNDER_REVIEW'], ['warning_closed', 'WARNING_CLOSED'],
      ['needs_response', 'NEEDS_RESPONSE'], ['under_review', 'UNDER_REVIEW'], ['won', 'WON'], ['lost', 'LOST'],
    ];
    for (const [stripe, ours] of statuses) {
      const type = ['won', 'lost', 'warning_closed'].includes(stripe) ? 'charge.dispute.closed' : 'charge.dispute.updated';
      expect(parsed(type, dispute({ status: stripe })).dispute?.status, stripe).toBe(ours);
    }
    expect(parsed('charge.dispute.updated', dispute({ status: 'something_new' })).dispute).not.toHaveProperty('status');
  });

  it('maps reasons to ours, keeping Stripe\'s own code', () => {
    const reasons: [string, string][] = [
      ['product_not_received', 'product_not_received'], ['product_unacceptable', 'product_unacceptable'], ['duplicate', 'duplicate'],
      ['subscription_canceled', 'subscription_canceled'], ['unrecognized', 'unrecognized'], ['credit_not_processed', 'credit_not_processed'],
      ['debit_not_authorized', 'unrecognized'], ['general', 'general'], ['bank_cannot_process', 'general'], ['customer_initiated', 'general'],
    ];
    for (const [stripe, ours] of reasons) {
      expect(parsed('charge.dispute.created', dispute({ reason: stripe })).dispute, stripe).toMatchObject({ reason: ours, processorReason: stripe });
    }
  });

  it('tells the funds withdrawn with the dispute fee, and the funds reinstated', () => {
    const withdrawn = parsed('charge.dispute.funds_withdrawn', dispute({ balance_transactions: [withdrawal] }));
    expect(withdrawn.dispute).toMatchObject({ status: 'NEEDS_RESPONSE', funds: { kind: 'withdrawn', amount: 2000, fee: 1500, currency: 'USD' } });
    const reinstated = parsed('charge.dispute.funds_reinstated', dispute({ status: 'won', balance_transactions: [withdrawal, reversal] }));
    expect(reinstated.dispute).toMatchObject({ status: 'WON', funds: { kind: 'reinstated', amount: 2000, fee: 1500, currency: 'USD' } });
    // Only funds events carry money; a funds event without its balance transaction tells none.
    expect(parsed('charge.dispute.closed', dispute({ status: 'won', balance_transactions: [withdrawal, reversal] })).dispute).not.toHaveProperty('funds');
    expect(parsed('charge.dispute.funds_withdrawn', dispute()).dispute).not.toHaveProperty('funds');
  });

  it('names the payment by its charge when there is no intent, and our charge id when an expanded charge or intent carries it', () => {
    expect(parsed('charge.dispute.created', dispute({ payment_intent: null })).dispute?.providerReference).toBe('ch_stripe_1');
    const expandedCharge = parsed('charge.dispute.created', dispute({ charge: { id: 'ch_stripe_1', object: 'charge', metadata: { switchboard_charge_id: 'ch_sb_1' } } }));
    expect(expandedCharge).toMatchObject({ chargeId: 'ch_sb_1', dispute: { chargeId: 'ch_sb_1', providerReference: 'pi_1' } });
    const expandedIntent = parsed('charge.dispute.created', dispute({ payment_intent: { id: 'pi_9', object: 'payment_intent', metadata: { switchboard_charge_id: 'ch_sb_9' } } }));
    expect(expandedIntent.dispute).toMatchObject({ chargeId: 'ch_sb_9', providerReference: 'pi_9' });
  });

  it('leaves out a deadline the issuer does not give (due_by 0 or null)', () => {
    for (const due of [0, null]) {
      const event = parsed('charge.dispute.created', dispute({ evidence_details: { due_by: due, has_evidence: false, past_due: false, submission_count: 0 } }));
      expect(event.dispute, String(due)).not.toHaveProperty('evidenceDueBy');
    }
  });

  it('stamps each notice with its event\'s time, so that of two the later wins', () => {
    const early = parsed('charge.dispute.updated', dispute({ status: 'under_review' }), CREATED + 10);
    const late = parsed('charge.dispute.closed', dispute({ status: 'lost' }), CREATED + 20);
    expect(Date.parse(late.dispute!.occurredAt)).toBeGreaterThan(Date.parse(early.dispute!.occurredAt));
  });

  it('leaves other charge events without a dispute', () => {
    expect(parsed('charge.succeeded', { id: 'ch_1', object: 'charge', payment_intent: 'pi_1', metadata: {} })).not.toHaveProperty('dispute');
  });
});

describe('the adapter\'s reading of Stripe\'s refusals', () => {
  const exchange = (status: number, error: Record<string, unknown>) => ({
    operation: 'dispute_submit' as const, idempotency_key: 'dp_1:submit', request: { method: 'POST', path: '/v1/disputes/du_1' },
    response: { status, body: { error } }, started_at: new Date().toISOString(), duration_ms: 1,
  });

  it('refuses for good on a 400 or 404 invalid_request_error, with Stripe\'s message', () => {
    expect(disputeRefusal(exchange(400, { type: 'invalid_request_error', message: 'This dispute is already closed.' }))).toEqual({ reason: 'This dispute is already closed.' });
    expect(disputeRefusal(exchange(404, { type: 'invalid_request_error', code: 'resource_missing', message: 'No such dispute: \'du_x\'' })))
      .toEqual({ reason: 'No such dispute: \'du_x\'', code: 'resource_missing' });
  });

  it('leaves credentials, rate limits, idempotency conflicts, 5xx and no answer to be tried again', () => {
    expect(disputeRefusal(exchange(401, { type: 'invalid_request_error', message: 'Invalid API Key provided' }))).toBeUndefined();
    expect(disputeRefusal(exchange(429, { type: 'invalid_request_error', code: 'rate_limit' }))).toBeUndefined();
    expect(disputeRefusal(exchange(400, { type: 'idempotency_error', message: 'Keys for idempotent requests…' }))).toBeUndefined();
    expect(disputeRefusal(exchange(500, { type: 'api_error' }))).toBeUndefined();
    const { response: _none, ...unanswered } = exchange(500, {});
    expect(disputeRefusal(unanswered)).toBeUndefined();
  });
});
