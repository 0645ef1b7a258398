// The simulated processor's books, in memory: charges, refunds, and the first answer given for every
// idempotency key (so a repeated key never moves money twice), the 3-D Secure challenges and the
// authentication data issued per card, plus counters for the inspection API.

import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { ulid } from 'ulid';
import { authorizationStep, CardInput, judgeCard, panOf } from './cards';

export type ChargeStatus = 'requires_action' | 'authorized' | 'captured' | 'voided' | 'declined' | 'partially_refunded' | 'refunded';
export type Operation = 'authorize' | 'capture' | 'void' | 'refund';

/** Where the cardholder goes to authenticate, while a charge is `requires_action`. */
export interface NextAction {
  type: 'redirect_to_url';
  redirect_to_url: { url: string; return_url: string | null };
}

/** 3-D Secure authentication data, as the simulator issues it and accepts it back (external authentication). */
export interface AuthenticationData {
  version: string;
  eci: string;
  cavv: string;
  ds_transaction_id: string;
}

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
  /** The Idempotency-Key of the authorize that made the charge: the caller's id for it. */
  idempotency_key: string;
  next_action: NextAction | null;
  created_at: string;
  updated_at: string;
}

/**
 * A charge as GET /v1/charges/:id shows it to the api key that made it: with the 3-D Secure data the
 * cardholder's challenge produced (null when there was none, and for any other key).
 */
export interface ChargeView extends SimCharge {
  three_d_secure: AuthenticationData | null;
}

export type ChallengeState = 'pending' | 'approved' | 'failed' | 'canceled';

/** A 3-D Secure challenge, as the challenge page and the inspection API show it. */
export interface Challenge {
  id: string;
  charge_id: string;
  state: ChallengeState;
  amount: number;
  currency: string;
  last4: string;
  return_url: string | null;
  notification_url: string | null;
  created_at: string;
  completed_at: string | null;
}

interface ChallengeRecord {
  view: Challenge;
  capture: boolean;
  declineAfterAuthentication?: string;
  /** The card's fingerprint, to remember the authentication data issued for it. */
  card: string;
  /** The key the authorize was made with: it signs the notification. Never shown. */
  apiKey: string;
}

/** The end of a challenge the cardholder just completed, and where to tell it. */
export interface ChallengeCompletion {
  challenge: Challenge;
  charge: ChargeView;
  notification?: { url: string; apiKey: string };
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
  /** Capture with the approval (at once, or when the challenge ends). */
  capture: boolean;
  return_url?: string;
  notification_url?: string;
  three_d_secure?: { requested?: boolean; external?: AuthenticationData };
}

/** What an authorize knows besides its body. */
export interface AuthorizeContext {
  idempotencyKey: string;
  apiKey: string;
  /** The challenge page's URL for a charge, at the address the caller reached the simulator at. */
  challengeUrl: (chargeId: string) => string;
  /** A decline the knobs force (decline_rate, soft_decline_rate), unless the card itself declines. */
  forcedDecline?: string;
  /** The knobs' decline after a completed challenge (decline_after_authentication). */
  declineAfterAuthentication?: string;
}

/** The authentication data the simulator issues when a cardholder passes a challenge. */
const ISSUED_VERSION = '2.2.0';
const ISSUED_ECI = '05';

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
  private challenges = new Map<string, ChallengeRecord>();
  /** Charge id → digest of the api key that made it. */
  private owners = new Map<string, string>();
  /** Charge id → the authentication data its challenge issued. */
  private authentications = new Map<string, AuthenticationData>();
  /** Card fingerprint → every authentication data issued for the card. */
  private issued = new Map<string, AuthenticationData[]>();
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

  /** The operation under a key, with its charge as it is now (3-D Secure data for the key that made it only). */
  lookup(key: string, apiKey: string): { operation: Operation; answer: Answer; charge?: ChargeView } | undefined {
    const record = this.operations.get(key);
    if (!record) return undefined;
    const charge = record.chargeId ? this.charges.get(record.chargeId) : undefined;
    return { operation: record.operation, answer: record.answer, charge: charge && this.view(charge, apiKey) };
  }

  /** GET /v1/charges/:id: the charge, only for the api key that made it. */
  chargeFor(id: string, apiKey: string): ChargeView | undefined {
    const charge = this.charges.get(id);
    return charge && this.owners.get(id) === this.keyDigest(apiKey) ? this.view(charge, apiKey) : undefined;
  }

  authorize(request: AuthorizeRequest, context: AuthorizeContext): { charge: SimCharge; answer: Answer } {
    const judged = judgeCard(request.card, this.now());
    const verdict = { ...judged, declineCode: judged.declineCode ?? context.forcedDecline };
    const card = this.cardFingerprint(request.card);
    const step = authorizationStep(verdict, {
      requested: request.three_d_secure?.requested === true,
      authenticated: this.wasIssued(card, request.three_d_secure?.external),
    });
    const at = this.now().toISOString();
    const charge: SimCharge = {
      id: `sch_${ulid()}`,
      object: 'charge',
      status: 'authorized',
      amount: request.amount,
      currency: request.currency,
      installments: request.installments,
      network: verdict.network,
      last4: verdict.last4,
      authorized_amount: 0,
      captured_amount: 0,
      refunded_amount: 0,
      decline_code: null,
      idempotency_key: context.idempotencyKey,
      next_action: null,
      created_at: at,
      updated_at: at,
    };
    this.charges.set(charge.id, charge);
    this.owners.set(charge.id, this.keyDigest(context.apiKey));

    if (step.kind === 'decline') return { charge, answer: this.decline(charge, step.declineCode) };
    if (step.kind === 'approve') return { charge, answer: this.approve(charge, request.capture) };
    const returnUrl = request.return_url ?? null;
    Object.assign(charge, {
      status: 'requires_action',
      next_action: { type: 'redirect_to_url', redirect_to_url: { url: context.challengeUrl(charge.id), return_url: returnUrl } },
    } satisfies Partial<SimCharge>);
    this.challenges.set(charge.id, {
      view: {
        id: charge.id, charge_id: charge.id, state: 'pending', amount: charge.amount, currency: charge.currency, last4: charge.last4,
        return_url: returnUrl, notification_url: request.notification_url ?? null, created_at: at, completed_at: null,
      },
      capture: request.capture,
      ...(context.declineAfterAuthentication ?? step.declineAfterAuthentication
        ? { declineAfterAuthentication: context.declineAfterAuthentication ?? step.declineAfterAuthentication } : {}),
      card,
      apiKey: context.apiKey,
    });
    return { charge, answer: { status: 200, body: { ...charge } } };
  }

  challenge(id: string): Challenge | undefined {
    const record = this.challenges.get(id);
    return record && { ...record.view };
  }

  listChallenges(): Challenge[] {
    return [...this.challenges.values()].map((record) => ({ ...record.view }));
  }

  /**
   * The cardholder's answer on the challenge page, recorded once: `approve` issues authentication data
   * for the card and gives the issuer's answer after authentication; `fail` declines
   * `authentication_failed`. Undefined when the challenge was already over (or never existed).
   */
  completeChallenge(id: string, action: 'approve' | 'fail'): ChallengeCompletion | undefined {
    const record = this.challenges.get(id);
    const charge = this.charges.get(id);
    if (!record || !charge || record.view.state !== 'pending') return undefined;
    Object.assign(record.view, { state: action === 'approve' ? 'approved' : 'failed', completed_at: this.now().toISOString() } satisfies Partial<Challenge>);
    charge.next_action = null;
    if (action === 'fail') {
      this.decline(charge, 'authentication_failed');
    } else {
      const data: AuthenticationData = {
        version: ISSUED_VERSION, eci: ISSUED_ECI, cavv: randomBytes(20).toString('base64'), ds_transaction_id: randomUUID(),
      };
      this.authentications.set(charge.id, data);
      this.issued.set(record.card, [...(this.issued.get(record.card) ?? []), data]);
      if (record.declineAfterAuthentication) this.decline(charge, record.declineAfterAuthentication);
      else this.approve(charge, record.capture);
    }
    const url = record.view.notification_url;
    return {
      challenge: { ...record.view },
      charge: this.view(charge, record.apiKey),
      ...(url ? { notification: { url, apiKey: record.apiKey } } : {}),
    };
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

  /** Voids an authorization, or cancels a charge still waiting for its challenge (which then closes). */
  void(chargeId: string): Answer {
    const charge = this.charge(chargeId);
    if (charge.status !== 'authorized' && charge.status !== 'requires_action') return this.invalidState(charge, 'void');
    const challenge = this.challenges.get(chargeId)?.view;
    if (challenge?.state === 'pending') Object.assign(challenge, { state: 'canceled', completed_at: this.now().toISOString() } satisfies Partial<Challenge>);
    return this.update(charge, { status: 'voided', next_action: null });
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
      requires_action: 0, authorized: 0, captured: 0, voided: 0, declined: 0, partially_refunded: 0, refunded: 0,
    };
    for (const charge of this.charges.values()) byStatus[charge.status]++;
    const challenges: Record<ChallengeState, number> = { pending: 0, approved: 0, failed: 0, canceled: 0 };
    for (const { view } of this.challenges.values()) challenges[view.state]++;
    return {
      calls: this.totalCalls,
      idempotency_keys: this.operations.size,
      charges: { total: this.charges.size, ...byStatus },
      refunds: this.refunds.size,
      challenges: { total: this.challenges.size, ...challenges },
    };
  }

  /** Every charge and refund as the books hold them now: what the chaos suite reconciles against. */
  books(): { charges: SimCharge[]; refunds: SimRefund[] } {
    return { charges: [...this.charges.values()].map((charge) => ({ ...charge })), refunds: [...this.refunds.values()].map((refund) => ({ ...refund })) };
  }

  reset(): void {
    this.charges.clear();
    this.refunds.clear();
    this.operations.clear();
    this.counters.clear();
    this.challenges.clear();
    this.owners.clear();
    this.authentications.clear();
    this.issued.clear();
    this.totalCalls = 0;
  }

  private view(charge: SimCharge, apiKey: string): ChargeView {
    const owner = this.owners.get(charge.id) === this.keyDigest(apiKey);
    return { ...charge, three_d_secure: owner ? this.authentications.get(charge.id) ?? null : null };
  }

  private approve(charge: SimCharge, capture: boolean): Answer {
    return this.update(charge, {
      status: capture ? 'captured' : 'authorized', authorized_amount: charge.amount, captured_amount: capture ? charge.amount : 0,
    });
  }

  private decline(charge: SimCharge, declineCode: string): Answer {
    this.update(charge, { status: 'declined', authorized_amount: 0, decline_code: declineCode });
    return { status: 402, body: errorBody(declineCode, `the card was declined (${declineCode})`, { charge: { ...charge } }) };
  }

  // Cards and charge owners are remembered by keyed digests: no PAN is kept, and an api key only where a
  // notification must be signed with it (a challenge's).
  private cardFingerprint(card: CardInput): string {
    return createHmac('sha256', this.fingerprintKey).update(`card\n${panOf(card)}`).digest('hex');
  }

  private keyDigest(apiKey: string): string {
    return createHmac('sha256', this.fingerprintKey).update(`key\n${apiKey}`).digest('hex');
  }

  /** External authentication data counts only when the simulator issued exactly it, for this card. */
  private wasIssued(card: string, external: AuthenticationData | undefined): boolean {
    if (!external) return false;
    return (this.issued.get(card) ?? []).some((data) =>
      data.cavv === external.cavv && data.eci === external.eci && data.version === external.version && data.ds_transaction_id === external.ds_transaction_id);
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
