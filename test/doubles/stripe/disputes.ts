// The Stripe double's disputes (https://docs.stripe.com/disputes, https://docs.stripe.com/testing#disputes):
// a PaymentIntent paid with one of Stripe's dispute test cards is disputed a moment after its charge is
// captured, with the events Stripe sends (charge.dispute.created, then charge.dispute.funds_withdrawn for
// a chargeback). The API: GET /v1/disputes[/:id], POST /v1/disputes/:id (evidence, submit — Stripe's
// default — or staged with submit=false), POST /v1/disputes/:id/close. A submitted dispute is decided a
// moment later: won when evidence[uncategorized_text] contains `winning_evidence` (the funds come back:
// charge.dispute.funds_reinstated), lost otherwise; a submitted inquiry closes as warning_closed.
// Stripe refuses (400) any update of a closed dispute, a second submission, and an answer past due_by.

import { randomBytes } from 'node:crypto';
import fixtures from './fixtures/resources.json';

type Params = Record<string, any>;

/** What each dispute test card makes of a captured charge. */
export const DISPUTE_CARDS: Record<string, { reason: string; inquiry?: boolean; closesItself?: boolean }> = {
  /** A chargeback for fraud: funds withdrawn with the dispute fee. */
  '4000000000000259': { reason: 'fraudulent' },
  /** A chargeback for goods not received. */
  '4000000000002685': { reason: 'product_not_received' },
  /** An inquiry (warning_needs_response): no money moves unless it escalates. */
  '4000000000001976': { reason: 'general', inquiry: true },
  /** An early fraud warning only: an inquiry-like notice that closes by itself (warning_closed). */
  '4000000000005423': { reason: 'fraudulent', inquiry: true, closesItself: true },
};

/** The dispute fee Stripe takes with a chargeback's withdrawal (and gives back when it is won). */
export const DISPUTE_FEE = 1500;

/** The knobs (POST /__double/dispute-timing, or disputeTiming()): all in milliseconds. */
export interface DisputeTiming {
  /** After the charge is captured, until the dispute is created (default 2 s). */
  after_capture_ms?: number;
  /** From the dispute's creation to its evidence_details.due_by (default 7 days; Stripe's due_by is in seconds). */
  evidence_due_ms?: number;
  /** From a submission until the dispute is decided, and from an early fraud warning until it closes (default 1 s). */
  decision_ms?: number;
}

const DEFAULT_TIMING: Required<DisputeTiming> = { after_capture_ms: 2_000, evidence_due_ms: 7 * 24 * 3_600_000, decision_ms: 1_000 };
const EVIDENCE_FIELDS = new Set(Object.keys(fixtures.dispute.evidence).filter((field) => field !== 'enhanced_evidence'));
const CLOSED = new Set(['won', 'lost', 'warning_closed']);

/** One POST to a dispute as the double received it: for tests to assert on. */
export interface DisputeRequest { dispute: string; action: 'update' | 'close'; evidence?: Record<string, string>; submit?: boolean; idempotency_key?: string; status: number }

/** What the double lends the disputes: its events and its clock. */
export interface DisputeHost {
  /** Emits under the request being handled. */
  emit(type: string, object: unknown, previous?: Record<string, unknown>): void;
  /** Emits as Stripe itself (request ids null): a dispute arriving or being decided. */
  emitAutomatic(type: string, object: unknown, previous?: Record<string, unknown>): void;
  sleep(ms: number): Promise<void>;
  closed(): boolean;
}

const now = () => Math.floor(Date.now() / 1000);
const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;
const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value));

function stripeError(status: number, message: string, extra: Record<string, unknown> = {}) {
  return { status, body: { error: { type: 'invalid_request_error', message, ...extra } } };
}

export function createDisputes(host: DisputeHost) {
  const disputes = new Map<string, any>();
  /** The dispute card an intent was paid with, until its charge is captured. */
  const cardOf = new Map<string, string>();
  const received: DisputeRequest[] = [];
  let timing: Required<DisputeTiming> = { ...DEFAULT_TIMING };

  function balanceTransaction(dispute: any, sign: 1 | -1) {
    const fee = -sign * DISPUTE_FEE;
    return {
      ...fixtures.balance_transaction, id: newId('txn'), amount: sign * dispute.amount, available_on: now(), created: now(), currency: dispute.currency,
      description: `${sign < 0 ? 'Chargeback withdrawal' : 'Chargeback reversal'} for ${dispute.charge}`,
      fee, fee_details: [{ amount: fee, application: null, currency: dispute.currency, description: 'Dispute fee', type: 'stripe_fee' }],
      net: sign * dispute.amount - fee, reporting_category: sign < 0 ? 'dispute' : 'dispute_reversal', source: dispute.id, status: 'pending', type: 'adjustment',
    };
  }

  /** The dispute comes: created, then (a chargeback) its funds withdrawn; an early fraud warning closes by itself. */
  async function arrive(pi: any, charge: any, card: string) {
    await host.sleep(timing.after_capture_ms);
    if (host.closed()) return;
    const kind = DISPUTE_CARDS[card];
    const { brand } = charge.payment_method_details?.card ?? { brand: 'visa' };
    const dispute: any = {
      ...copy(fixtures.dispute), id: newId('du'), amount: charge.amount_captured, balance_transactions: [], charge: charge.id, created: now(),
      currency: charge.currency, evidence_details: { due_by: Math.floor((Date.now() + timing.evidence_due_ms) / 1000), has_evidence: false, past_due: false, submission_count: 0, enhanced_eligibility: {} },
      is_charge_refundable: kind.inquiry === true, metadata: {}, payment_intent: pi.id,
      payment_method_details: { card: { brand, case_type: kind.inquiry ? 'inquiry' : 'chargeback', network_reason_code: kind.reason === 'fraudulent' ? '10.4' : '13.1', network: brand }, type: 'card' },
      reason: kind.reason, status: kind.inquiry ? 'warning_needs_response' : 'needs_response', enhanced_eligibility_types: [],
    };
    disputes.set(dispute.id, dispute);
    charge.disputed = true;
    host.emitAutomatic('charge.dispute.created', dispute);
    if (!kind.inquiry) {
      dispute.balance_transactions.push(balanceTransaction(dispute, -1));
      host.emitAutomatic('charge.dispute.funds_withdrawn', dispute);
    }
    if (kind.closesItself) {
      await host.sleep(timing.decision_ms);
      if (host.closed() || CLOSED.has(dispute.status)) return;
      const previous = { status: dispute.status };
      dispute.status = 'warning_closed';
      host.emitAutomatic('charge.dispute.closed', dispute, previous);
    }
  }

  /** A submitted dispute decided by the issuer: won on `winning_evidence`, else lost; an inquiry closes. */
  async function decide(dispute: any) {
    await host.sleep(timing.decision_ms);
    if (host.closed() || CLOSED.has(dispute.status)) return;
    const previous = { status: dispute.status };
    if (dispute.status === 'warning_under_review') {
      dispute.status = 'warning_closed';
      host.emitAutomatic('charge.dispute.closed', dispute, previous);
      return;
    }
    const won = String(dispute.evidence.uncategorized_text ?? '').includes('winning_evidence');
    dispute.status = won ? 'won' : 'lost';
    host.emitAutomatic('charge.dispute.closed', dispute, previous);
    if (won) {
      dispute.balance_transactions.push(balanceTransaction(dispute, 1));
      dispute.is_charge_refundable = false;
      host.emitAutomatic('charge.dispute.funds_reinstated', dispute);
    }
  }

  /** Why Stripe refuses to touch this dispute now (closed, past due), or undefined. */
  function refusal(dispute: any) {
    if (CLOSED.has(dispute.status)) return stripeError(400, `This dispute is already closed (status ${dispute.status}) and can no longer be updated.`, { param: 'dispute' });
    if (now() > dispute.evidence_details.due_by) {
      return stripeError(400, `The response to dispute ${dispute.id} was due by ${new Date(dispute.evidence_details.due_by * 1000).toISOString()}; it is past due.`, { param: 'dispute' });
    }
    return undefined;
  }

  function update(dispute: any, p: Params) {
    const evidence: Record<string, string> = typeof p.evidence === 'object' && p.evidence !== null ? p.evidence : {};
    const unknown = Object.keys(evidence).find((field) => !EVIDENCE_FIELDS.has(field));
    if (unknown) return stripeError(400, `Received unknown parameter: evidence[${unknown}]`, { code: 'parameter_unknown', param: `evidence[${unknown}]` });
    if (p.submit !== undefined && !['true', 'false'].includes(p.submit)) return stripeError(400, 'Invalid boolean', { code: 'parameter_invalid', param: 'submit' });
    const refused = refusal(dispute);
    if (refused) return refused;
    const submit = p.submit !== 'false';
    if (dispute.evidence_details.submission_count > 0) {
      return stripeError(400, `Evidence for dispute ${dispute.id} has already been submitted; it cannot be updated or submitted again.`, { param: 'evidence' });
    }
    const previous = { status: dispute.status, evidence_details: { ...dispute.evidence_details } };
    Object.assign(dispute.evidence, evidence);
    if (p.metadata) dispute.metadata = { ...dispute.metadata, ...p.metadata };
    dispute.evidence_details.has_evidence = true;
    if (submit) {
      dispute.evidence_details.submission_count += 1;
      dispute.status = dispute.status.startsWith('warning_') ? 'warning_under_review' : 'under_review';
      dispute.is_charge_refundable = false;
    }
    host.emit('charge.dispute.updated', dispute, previous);
    if (submit) void decide(dispute);
    return { status: 200, body: dispute };
  }

  function close(dispute: any) {
    const refused = refusal(dispute);
    if (refused) return refused;
    const previous = { status: dispute.status };
    dispute.status = dispute.status.startsWith('warning_') ? 'warning_closed' : 'lost';
    host.emit('charge.dispute.closed', dispute, previous);
    return { status: 200, body: dispute };
  }

  return {
    /** An intent paid with a card: remembered when it is a dispute test card. */
    paidWith(intentId: string, cardNumber: string) {
      if (DISPUTE_CARDS[cardNumber]) cardOf.set(intentId, cardNumber);
    },
    /** The intent's charge was captured: a dispute test card's dispute is on its way. */
    captured(pi: any, charge: any) {
      const card = cardOf.get(pi.id);
      if (!card) return;
      cardOf.delete(pi.id);
      void arrive(pi, charge, card);
    },
    /** Stripe refuses to refund a charge whose dispute took the money (is_charge_refundable false). */
    refundRefusal(chargeId: string) {
      const taken = [...disputes.values()].some((d) => d.charge === chargeId && !d.is_charge_refundable && d.status !== 'won');
      return taken ? stripeError(400, `Charge ${chargeId} has been charged back; cannot issue a refund.`, { code: 'charge_disputed' }) : undefined;
    },
    setTiming(knobs: DisputeTiming) {
      timing = { ...DEFAULT_TIMING, ...knobs };
    },
    list: () => [...disputes.values()].map(copy),
    requests: () => received.map(copy),
    /** Answers a /v1/disputes request, or undefined when the path is not one. */
    route(method: string, path: string, p: Params, idempotencyKey?: string): { status: number; body: unknown } | undefined {
      if (method === 'GET' && path === '/v1/disputes') {
        const data = [...disputes.values()].filter((d) => (!p.payment_intent || d.payment_intent === p.payment_intent) && (!p.charge || d.charge === p.charge)).reverse();
        return { status: 200, body: { object: 'list', data, has_more: false, url: '/v1/disputes' } };
      }
      const m = /^\/v1\/disputes\/([^/]+)(\/close)?$/.exec(path);
      if (!m) return undefined;
      const dispute = disputes.get(m[1]);
      if (!dispute) return stripeError(404, `No such dispute: '${m[1]}'`, { code: 'resource_missing', param: 'dispute' });
      if (method === 'GET' && !m[2]) return { status: 200, body: dispute };
      if (method !== 'POST') return undefined;
      const reply = m[2] ? close(dispute) : update(dispute, p);
      received.push({
        dispute: dispute.id, action: m[2] ? 'close' : 'update', ...(m[2] ? {} : { evidence: p.evidence ?? {}, submit: p.submit !== 'false' }),
        ...(idempotencyKey ? { idempotency_key: idempotencyKey } : {}), status: reply.status,
      });
      return reply;
    },
  };
}

export type StripeDisputes = ReturnType<typeof createDisputes>;
