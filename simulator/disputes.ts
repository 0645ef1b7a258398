// The simulated processor's disputes (docs/sandbox-processor.md#disputes-in-the-sandbox): a charge made with
// one of Stripe's dispute test cards is disputed a while after its capture; the merchant answers with
// evidence (decided a moment later: won when `uncategorized_text` contains `winning_evidence`) or
// accepts; every change is told by a signed notification to the charge's notification_url. In memory,
// with real timers (the timing knobs make them short in tests), all cleared by a reset or a stop.

import { ulid } from 'ulid';
import { DISPUTE_EVIDENCE_FIELDS } from '../lib/providers/disputes';
import type { DisputeScript } from './cards';
import { errorBody, SimulatorError } from './errors';
import type { Disputable, DisputeKnobs, SimCharge } from './ledger';
import type { Answer } from './operations';
import { invalid } from './requests';

export type SimDisputeStatus =
  'warning_needs_response' | 'warning_under_review' | 'warning_closed' | 'needs_response' | 'under_review' | 'won' | 'lost';

/** Money a dispute moved, positive amounts: withdrawn from the merchant (with the fee), or given back. */
export interface DisputeBalanceTransaction {
  type: 'withdrawal' | 'reinstatement';
  amount: number;
  fee: number;
  currency: string;
  created_at: string;
}

export interface SimDispute {
  id: string;
  object: 'dispute';
  /** The simulator's charge id (`sch_…`), and the Idempotency-Key its authorize was made under (the caller's id for it). */
  charge_id: string;
  charge_idempotency_key: string;
  amount: number;
  currency: string;
  reason: 'fraudulent' | 'general';
  status: SimDisputeStatus;
  is_inquiry: boolean;
  evidence_due_by: string;
  evidence: Record<string, string>;
  evidence_submitted_at: string | null;
  balance_transactions: DisputeBalanceTransaction[];
  created_at: string;
  updated_at: string;
}

export type DisputeEventType = 'dispute.created' | 'dispute.updated' | 'dispute.closed' | 'dispute.funds_withdrawn' | 'dispute.funds_reinstated';

/** A dispute's notification: the dispute without its evidence (the merchant's text stays at the processor), and the money an event moved. */
export interface DisputeEvent {
  id: string;
  type: DisputeEventType;
  /** Unix seconds. */
  created: number;
  data: { dispute: Omit<SimDispute, 'evidence'>; balance_transaction?: DisputeBalanceTransaction };
}

export interface EvidenceRequest {
  evidence: Record<string, string>;
  submit: boolean;
}

export interface DisputesOptions {
  now: () => Date;
  /** Sends a notification (notifications.ts): resolves after its first try. */
  notify: (url: string, apiKey: string, event: DisputeEvent) => Promise<void>;
  /** The charge as it is now, when the dispute comes. */
  chargeNow: (id: string) => SimCharge | undefined;
  /** Aborted when the simulator stops: pending timers are cleared. */
  signal: AbortSignal;
}

export const DISPUTE_FEE = 1_500;
const DEFAULT_AFTER_MS = 2_000;
const DEFAULT_DUE_IN_MS = 7 * 24 * 3_600_000;
const DEFAULT_DECISION_MS = 1_000;
const MAX_EVIDENCE_TEXT = 20_000;
const CLOSED: readonly SimDisputeStatus[] = ['warning_closed', 'won', 'lost'];
const UNDER_REVIEW: readonly SimDisputeStatus[] = ['warning_under_review', 'under_review'];
const EVIDENCE_FIELDS: readonly string[] = DISPUTE_EVIDENCE_FIELDS;

interface DisputeRecord {
  dispute: SimDispute;
  script: DisputeScript;
  apiKey: string;
  notificationUrl?: string;
  knobs: DisputeKnobs;
}

/** POST /v1/disputes/:id/evidence's body, refused with 400 before anything is recorded. */
export function evidenceRequest(body: Record<string, unknown>): EvidenceRequest {
  const { evidence = {}, submit, ...rest } = body;
  if (Object.keys(rest).length) throw invalid(`unknown field ${Object.keys(rest).join(', ')}`);
  if (submit !== undefined && typeof submit !== 'boolean') throw invalid('submit must be a boolean');
  if (typeof evidence !== 'object' || evidence === null || Array.isArray(evidence)) throw invalid('evidence must be an object');
  for (const [field, value] of Object.entries(evidence)) {
    if (!EVIDENCE_FIELDS.includes(field)) throw invalid(`unknown evidence field ${field}`);
    if (typeof value !== 'string' || value.length > MAX_EVIDENCE_TEXT) throw invalid(`evidence.${field} must be a string of at most ${MAX_EVIDENCE_TEXT} characters`);
  }
  return { evidence: evidence as Record<string, string>, submit: submit === true };
}

export class Disputes {
  private records = new Map<string, DisputeRecord>();
  private timers = new Set<NodeJS.Timeout>();

  constructor(private readonly options: DisputesOptions) {
    options.signal.addEventListener('abort', () => this.clearTimers());
  }

  /** A dispute test card's charge was captured: its dispute comes after dispute_after_ms. */
  schedule(charge: SimCharge, disputable: Disputable): void {
    this.later(disputable.knobs.dispute_after_ms ?? DEFAULT_AFTER_MS, () => this.open(charge.id, disputable));
  }

  /** GET /v1/disputes/:id: only for the api key that made its charge. */
  find(id: string, apiKey: string): SimDispute | undefined {
    const record = this.records.get(id);
    return record && record.apiKey === apiKey ? copy(record.dispute) : undefined;
  }

  list(): SimDispute[] {
    return [...this.records.values()].map((record) => copy(record.dispute));
  }

  /**
   * Saves evidence and, with `submit`, hands the dispute to review (decided after dispute_decision_ms).
   * An answer the processor does not take is a 409 that is recorded like any answer (the key replays it).
   */
  evidence(id: string, apiKey: string, request: EvidenceRequest, knobs: DisputeKnobs): { answer: Answer; chargeId: string } {
    const record = this.owned(id, apiKey);
    const { dispute } = record;
    const refusal = this.refusal(dispute);
    if (refusal) return { answer: refusal, chargeId: dispute.charge_id };
    const at = this.options.now().toISOString();
    Object.assign(dispute, { evidence: { ...dispute.evidence, ...request.evidence }, updated_at: at });
    if (request.submit) {
      Object.assign(dispute, { status: dispute.is_inquiry ? 'warning_under_review' : 'under_review', evidence_submitted_at: at });
      this.later(knobs.dispute_decision_ms ?? DEFAULT_DECISION_MS, () => this.decide(record));
    }
    this.tell(record, 'dispute.updated');
    return { answer: { status: 200, body: copy(dispute) }, chargeId: dispute.charge_id };
  }

  /** Concedes: a chargeback is lost at once, an inquiry closed. */
  accept(id: string, apiKey: string): { answer: Answer; chargeId: string } {
    const record = this.owned(id, apiKey);
    const { dispute } = record;
    const refusal = this.refusal(dispute);
    if (refusal) return { answer: refusal, chargeId: dispute.charge_id };
    this.close(record, dispute.is_inquiry ? 'warning_closed' : 'lost');
    return { answer: { status: 200, body: copy(dispute) }, chargeId: dispute.charge_id };
  }

  reset(): void {
    this.clearTimers();
    this.records.clear();
  }

  private open(chargeId: string, disputable: Disputable): void {
    const charge = this.options.chargeNow(chargeId);
    const amount = charge ? charge.captured_amount - charge.refunded_amount : 0;
    // A charge refunded in full before its dispute came has nothing left to dispute.
    if (!charge || amount <= 0) return;
    const now = this.options.now();
    const inquiry = disputable.script !== 'fraudulent';
    const dueInMs = disputable.knobs.dispute_due_in_ms ?? DEFAULT_DUE_IN_MS;
    const dispute: SimDispute = {
      id: `sdp_${ulid()}`, object: 'dispute', charge_id: charge.id, charge_idempotency_key: charge.idempotency_key, amount, currency: charge.currency,
      reason: disputable.script === 'inquiry' ? 'general' : 'fraudulent', status: inquiry ? 'warning_needs_response' : 'needs_response', is_inquiry: inquiry,
      evidence_due_by: new Date(now.getTime() + dueInMs).toISOString(), evidence: {}, evidence_submitted_at: null, balance_transactions: [],
      created_at: now.toISOString(), updated_at: now.toISOString(),
    };
    const record: DisputeRecord = { dispute, ...disputable };
    this.records.set(dispute.id, record);
    this.tell(record, 'dispute.created');
    if (!inquiry) this.move(record, 'withdrawal', 'dispute.funds_withdrawn');
    const decisionMs = disputable.knobs.dispute_decision_ms ?? DEFAULT_DECISION_MS;
    // An early fraud warning closes by itself; any other dispute left unanswered is lost (an inquiry closed) once its deadline passed.
    if (disputable.script === 'warning') this.later(decisionMs, () => this.expire(record));
    else this.later(dueInMs + decisionMs, () => this.expire(record));
  }

  /** A submission's decision: won when the evidence says `winning_evidence` (the funds come back), else lost; an inquiry closes. */
  private decide(record: DisputeRecord): void {
    const { dispute } = record;
    if (!UNDER_REVIEW.includes(dispute.status)) return;
    if (dispute.is_inquiry) return this.close(record, 'warning_closed');
    const won = (dispute.evidence.uncategorized_text ?? '').includes('winning_evidence');
    this.close(record, won ? 'won' : 'lost');
    if (won) this.move(record, 'reinstatement', 'dispute.funds_reinstated');
  }

  /** Nobody answered in time (or an early fraud warning ran its course). */
  private expire(record: DisputeRecord): void {
    const { dispute } = record;
    if (CLOSED.includes(dispute.status) || UNDER_REVIEW.includes(dispute.status)) return;
    this.close(record, dispute.is_inquiry ? 'warning_closed' : 'lost');
  }

  private close(record: DisputeRecord, status: SimDisputeStatus): void {
    Object.assign(record.dispute, { status, updated_at: this.options.now().toISOString() });
    this.tell(record, 'dispute.closed');
  }

  private move(record: DisputeRecord, type: DisputeBalanceTransaction['type'], event: DisputeEventType): void {
    const { dispute } = record;
    const at = this.options.now().toISOString();
    const transaction: DisputeBalanceTransaction = { type, amount: dispute.amount, fee: type === 'withdrawal' ? DISPUTE_FEE : 0, currency: dispute.currency, created_at: at };
    dispute.balance_transactions.push(transaction);
    dispute.updated_at = at;
    this.tell(record, event, transaction);
  }

  private tell(record: DisputeRecord, type: DisputeEventType, transaction?: DisputeBalanceTransaction): void {
    if (!record.notificationUrl) return;
    const { evidence: _evidence, ...shown } = copy(record.dispute);
    const now = this.options.now();
    const event: DisputeEvent = {
      id: `evt_sim_${ulid()}`, type, created: Math.floor(now.getTime() / 1000),
      data: { dispute: shown, ...(transaction ? { balance_transaction: { ...transaction } } : {}) },
    };
    void this.options.notify(record.notificationUrl, record.apiKey, event);
  }

  /** Why the processor no longer takes an answer (409), or undefined. */
  private refusal(dispute: SimDispute): Answer | undefined {
    const refuse = (code: string, message: string): Answer => ({ status: 409, body: errorBody(code, message, { dispute: copy(dispute) }) });
    if (UNDER_REVIEW.includes(dispute.status) || dispute.evidence_submitted_at) return refuse('dispute_already_submitted', `dispute ${dispute.id} was already submitted`);
    if (CLOSED.includes(dispute.status)) return refuse('dispute_closed', `dispute ${dispute.id} is closed (${dispute.status})`);
    if (this.options.now().getTime() > Date.parse(dispute.evidence_due_by)) {
      return refuse('dispute_deadline_passed', `the evidence for dispute ${dispute.id} was due by ${dispute.evidence_due_by}`);
    }
    return undefined;
  }

  private owned(id: string, apiKey: string): DisputeRecord {
    const record = this.records.get(id);
    if (!record || record.apiKey !== apiKey) throw new SimulatorError(404, 'dispute_not_found', `no dispute ${id}`);
    return record;
  }

  private later(ms: number, work: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      work();
    }, ms);
    // The timers of a week-long deadline must not keep a stopped process (or a test run) alive.
    timer.unref();
    this.timers.add(timer);
  }

  private clearTimers(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}

function copy(dispute: SimDispute): SimDispute {
  return { ...dispute, evidence: { ...dispute.evidence }, balance_transactions: dispute.balance_transactions.map((transaction) => ({ ...transaction })) };
}
