// The simulated processor's books, in memory: charges, refunds, and the first answer given for every
// idempotency key (so a repeated key never moves money twice), plus counters for the inspection API.

import { createHmac, randomBytes } from 'node:crypto';
import { ulid } from 'ulid';
import { CardInput, judgeCard } from './cards';

export type ChargeStatus = 'authorized' | 'captured' | 'voided' | 'declined' | 'partially_refunded' | 'refunded';
export type Operation = 'authorize' | 'capture' | 'void' | 'refund';

export interface SimCharge {
  id: string;
  object: 'charge';
  status: ChargeStatus;
  amount: number;
  currency: string;
  installments: number;
  network: string;
  last4: string;
  authorized_amount: number;
  captured_amount: number;
  refunded_amount: number;
  decline_code: string | null;
  created_at: string;
  updated_at: string;
}

export interface SimRefund {
  id: string;
  object: 'refund';
  charge_id: string;
  amount: number;
  status: 'succeeded';
  created_at: string;
}

export interface Answer {
  status: number;
  body: unknown;
}

interface OperationRecord {
  operation: Operation;
  fingerprint: string;
  answer: Answer;
  chargeId?: string;
}

interface KeyCounters {
  calls: number;
  lookups: number;
}

export interface AuthorizeRequest {
  amount: number;
  currency: string;
  installments: number;
  card: CardInput;
}

export class SimulatorError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

export function errorBody(code: string, message: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { error: { code, message }, ...extra };
}

export class Ledger {
  private charges = new Map<string, SimCharge>();
  private refunds = new Map<string, SimRefund>();
  private operations = new Map<string, OperationRecord>();
  private counters = new Map<string, KeyCounters>();
  private totalCalls = 0;
  // Fingerprints compare request bodies without keeping them (an authorize body holds a PAN).
  private readonly fingerprintKey = randomBytes(32);

  constructor(private readonly now: () => Date = () => new Date()) {}

  /** Every /v1 request counts, even those that fail (an outage, a missing api key). */
  countCall(key: string | undefined): void {
    this.totalCalls++;
    if (key) this.countersOf(key).calls++;
  }

  countLookup(key: string): void {
    this.countersOf(key).lookups++;
  }

  fingerprint(operation: string, target: string, body: unknown): string {
    return createHmac('sha256', this.fingerprintKey).update(`${operation}\n${target}\n${JSON.stringify(body)}`).digest('hex');
  }

  /** The first answer for this key, or undefined if the key is new. A different request under it → 422. */
  replay(key: string, fingerprint: string): Answer | undefined {
    const record = this.operations.get(key);
    if (!record) return undefined;
    if (record.fingerprint !== fingerprint) {
      throw new SimulatorError(422, 'idempotency_key_reused', 'this idempotency key was used for a different request');
    }
    return record.answer;
  }

  record(key: string, operation: Operation, fingerprint: string, answer: Answer, chargeId?: string): Answer {
    this.operations.set(key, { operation, fingerprint, answer, chargeId });
    return answer;
  }

  lookup(key: string): { operation: Operation; answer: Answer; charge?: SimCharge } | undefined {
    const record = this.operations.get(key);
    if (!record) return undefined;
    const charge = record.chargeId ? this.charges.get(record.chargeId) : undefined;
    return { operation: record.operation, answer: record.answer, charge: charge && { ...charge } };
  }

  authorize(request: AuthorizeRequest, forcedDecline?: string): { charge: SimCharge; answer: Answer } {
    const verdict = judgeCard(request.card, this.now());
    const declineCode = verdict.declineCode ?? forcedDecline;
    const at = this.now().toISOString();
    const charge: SimCharge = {
      id: `sch_${ulid()}`,
      object: 'charge',
      status: declineCode ? 'declined' : 'authorized',
      amount: request.amount,
      currency: request.currency,
      installments: request.installments,
      network: verdict.network,
      last4: verdict.last4,
      authorized_amount: declineCode ? 0 : request.amount,
      captured_amount: 0,
      refunded_amount: 0,
      decline_code: declineCode ?? null,
      created_at: at,
      updated_at: at,
    };
    this.charges.set(charge.id, charge);
    const answer = declineCode
      ? { status: 402, body: errorBody(declineCode, `the card was declined (${declineCode})`, { charge: { ...charge } }) }
      : { status: 200, body: { ...charge } };
    return { charge, answer };
  }

  capture(chargeId: string, amount: number | undefined): Answer {
    const charge = this.charge(chargeId);
    if (charge.status !== 'authorized') return this.invalidState(charge, 'capture');
    const captured = amount ?? charge.authorized_amount;
    if (captured > charge.authorized_amount) {
      return { status: 402, body: errorBody('amount_exceeds_authorized', `capture of ${captured} exceeds the authorized ${charge.authorized_amount}`) };
    }
    return this.update(charge, { status: 'captured', captured_amount: captured });
  }

  void(chargeId: string): Answer {
    const charge = this.charge(chargeId);
    if (charge.status !== 'authorized') return this.invalidState(charge, 'void');
    return this.update(charge, { status: 'voided' });
  }

  refund(chargeId: string, amount: number): Answer {
    const charge = this.charge(chargeId);
    if (charge.status !== 'captured' && charge.status !== 'partially_refunded') return this.invalidState(charge, 'refund');
    const refundable = charge.captured_amount - charge.refunded_amount;
    if (amount > refundable) {
      return { status: 402, body: errorBody('refund_exceeds_captured', `refund of ${amount} exceeds the ${refundable} left to refund`) };
    }
    const refunded = charge.refunded_amount + amount;
    const updated = this.update(charge, { refunded_amount: refunded, status: refunded === charge.captured_amount ? 'refunded' : 'partially_refunded' });
    const refund: SimRefund = { id: `sre_${ulid()}`, object: 'refund', charge_id: charge.id, amount, status: 'succeeded', created_at: this.now().toISOString() };
    this.refunds.set(refund.id, refund);
    return { status: 200, body: { ...refund, charge: updated.body } };
  }

  keyStats(key: string) {
    const counters = this.counters.get(key) ?? { calls: 0, lookups: 0 };
    const record = this.operations.get(key);
    return {
      idempotency_key: key,
      calls: counters.calls,
      lookups: counters.lookups,
      operation: record?.operation ?? null,
      status_code: record?.answer.status ?? null,
      charge_id: record?.chargeId ?? null,
    };
  }

  stats() {
    const byStatus: Record<ChargeStatus, number> = {
      authorized: 0, captured: 0, voided: 0, declined: 0, partially_refunded: 0, refunded: 0,
    };
    for (const charge of this.charges.values()) byStatus[charge.status]++;
    return {
      calls: this.totalCalls,
      idempotency_keys: this.operations.size,
      charges: { total: this.charges.size, ...byStatus },
      refunds: this.refunds.size,
    };
  }

  reset(): void {
    this.charges.clear();
    this.refunds.clear();
    this.operations.clear();
    this.counters.clear();
    this.totalCalls = 0;
  }

  private countersOf(key: string): KeyCounters {
    const counters = this.counters.get(key) ?? { calls: 0, lookups: 0 };
    this.counters.set(key, counters);
    return counters;
  }

  private charge(id: string): SimCharge {
    const charge = this.charges.get(id);
    if (!charge) throw new SimulatorError(404, 'charge_not_found', `no charge ${id}`);
    return charge;
  }

  private invalidState(charge: SimCharge, operation: Operation): Answer {
    return { status: 402, body: errorBody('invalid_state', `cannot ${operation} a charge in status ${charge.status}`, { charge: { ...charge } }) };
  }

  private update(charge: SimCharge, changes: Partial<SimCharge>): Answer {
    Object.assign(charge, changes, { updated_at: this.now().toISOString() });
    return { status: 200, body: { ...charge } };
  }
}
