// The simulated processor's books, in memory: charges and refunds, with the first answer given for every
// idempotency key (operations.ts) and the 3-D Secure challenges and authentication data (challenges.ts)
// kept beside them; the whole as the inspection API and the chaos suite read it.

import { createHmac, randomBytes } from 'node:crypto';
import { ulid } from 'ulid';
import { authorizationStep, CardInput, judgeCard, panOf, type DisputeScript } from './cards';
import { Challenges, type AuthenticationData, type Challenge } from './challenges';
import { errorBody, SimulatorError } from './errors';
import { Operations, type Answer, type Operation } from './operations';

export type ChargeStatus = 'requires_action' | 'authorized' | 'captured' | 'voided' | 'declined' | 'partially_refunded' | 'refunded';

/** Where the cardholder goes to authenticate, while a charge is `requires_action`. */
export interface NextAction {
  type: 'redirect_to_url';
  redirect_to_url: { url: string; return_url: string | null };
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
  /** The card network's id of the approval (made up, 15 digits); null until approved. */
  network_transaction_id: string | null;
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
  /** A stored-credential transaction (requests.ts): who initiates it, and the earlier approval it references. */
  stored_credential?: StoredCredential;
}

export interface StoredCredential { model: 'subscription'; initiator: 'customer' | 'merchant'; network_transaction_id?: string }

/** What an authorize knows besides its body. */
export interface AuthorizeContext {
  idempotencyKey: string;
  apiKey: string;
  /** The challenge page's URL for a charge, at the address the caller reached the simulator at. */
  challengeUrl: (chargeId: string) => string;
  /** A decline the knobs force (decline_rate, soft_decline_rate), unless the card itself declines. */
  forcedDecline?: string;
  /** The knobs' decline of every new authorization (decline_code), whatever the card. */
  declineCode?: string;
  /** The knobs' decline after a completed challenge (decline_after_authentication). */
  declineAfterAuthentication?: string;
  /** The dispute timing knobs in force when the charge was made: a dispute test card's dispute follows them. */
  disputeKnobs?: DisputeKnobs;
}

/** The dispute timing knobs (knobs.ts), each in milliseconds. */
export interface DisputeKnobs { dispute_after_ms?: number; dispute_due_in_ms?: number; dispute_decision_ms?: number }

/** A charge made with a dispute test card: how it is disputed once captured, and whom to tell (signed with the key that made it). */
export interface Disputable {
  script: DisputeScript;
  apiKey: string;
  notificationUrl?: string;
  knobs: DisputeKnobs;
}

export class Ledger {
  readonly operations = new Operations();
  readonly challenges = new Challenges();
  private charges = new Map<string, SimCharge>();
  private refunds = new Map<string, SimRefund>();
  /** Charge id → digest of the api key that made it. */
  private owners = new Map<string, string>();
  private disputable = new Map<string, Disputable>();
  // Cards and owners are remembered by keyed digests, never a PAN or an api key.
  private readonly digestKey = randomBytes(32);

  /**
   * `onDisputable`: called when a charge made with a dispute test card is captured (with the
   * authorization, at a challenge's end, or by a capture), where the simulator schedules its dispute.
   */
  constructor(private readonly now: () => Date = () => new Date(), private readonly onDisputable?: (charge: SimCharge, disputable: Disputable) => void) {}

  /** The operation under a key, with its charge as it is now (3-D Secure data for the key that made it only). */
  lookup(key: string, apiKey: string): { operation: Operation; answer: Answer; charge?: ChargeView } | undefined {
    const record = this.operations.find(key);
    if (!record) return undefined;
    const charge = record.chargeId ? this.charges.get(record.chargeId) : undefined;
    return { operation: record.operation, answer: record.answer, charge: charge && this.view(charge, apiKey) };
  }

  /** GET /v1/charges/:id: the charge, only for the api key that made it. */
  chargeFor(id: string, apiKey: string): ChargeView | undefined {
    const charge = this.charges.get(id);
    return charge && this.owners.get(id) === this.keyDigest(apiKey) ? this.view(charge, apiKey) : undefined;
  }

  /** A charge as it is now, whoever made it (the simulator's own use: a dispute reads its amount). */
  chargeNow(id: string): SimCharge | undefined {
    const charge = this.charges.get(id);
    return charge && { ...charge };
  }

  authorize(request: AuthorizeRequest, context: AuthorizeContext): { charge: SimCharge; answer: Answer } {
    const judged = judgeCard(request.card, this.now());
    const verdict = { ...judged, declineCode: context.declineCode ?? judged.declineCode ?? context.forcedDecline };
    const card = this.cardFingerprint(request.card);
    const stored = request.stored_credential;
    const step = authorizationStep(verdict, {
      requested: request.three_d_secure?.requested === true,
      authenticated: this.challenges.wasIssued(card, request.three_d_secure?.external),
      ...(stored?.initiator === 'merchant' ? { merchantInitiated: { networkTransactionId: stored.network_transaction_id } } : {}),
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
      network_transaction_id: null,
      idempotency_key: context.idempotencyKey,
      next_action: null,
      created_at: at,
      updated_at: at,
    };
    this.charges.set(charge.id, charge);
    this.owners.set(charge.id, this.keyDigest(context.apiKey));
    if (verdict.dispute) {
      this.disputable.set(charge.id, {
        script: verdict.dispute, apiKey: context.apiKey, knobs: context.disputeKnobs ?? {},
        ...(request.notification_url ? { notificationUrl: request.notification_url } : {}),
      });
    }

    if (step.kind === 'decline') return { charge, answer: this.decline(charge, step.declineCode) };
    if (step.kind === 'approve') return { charge, answer: this.approve(charge, request.capture) };
    const returnUrl = request.return_url ?? null;
    Object.assign(charge, {
      status: 'requires_action',
      next_action: { type: 'redirect_to_url', redirect_to_url: { url: context.challengeUrl(charge.id), return_url: returnUrl } },
    } satisfies Partial<SimCharge>);
    this.challenges.open({
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

  /**
   * The cardholder's answer on the challenge page, recorded once: `approve` issues authentication data
   * for the card and gives the issuer's answer after authentication; `fail` declines
   * `authentication_failed`. Undefined when the challenge was already over (or never existed).
   */
  completeChallenge(id: string, action: 'approve' | 'fail'): ChallengeCompletion | undefined {
    const charge = this.charges.get(id);
    const record = charge && this.challenges.complete(id, action, this.now().toISOString());
    if (!charge || !record) return undefined;
    charge.next_action = null;
    if (action === 'fail') this.decline(charge, 'authentication_failed');
    else if (record.declineAfterAuthentication) this.decline(charge, record.declineAfterAuthentication);
    else this.approve(charge, record.capture);
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
    this.challenges.cancel(chargeId, this.now().toISOString());
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

  stats() {
    const byStatus: Record<ChargeStatus, number> = {
      requires_action: 0, authorized: 0, captured: 0, voided: 0, declined: 0, partially_refunded: 0, refunded: 0,
    };
    for (const charge of this.charges.values()) byStatus[charge.status]++;
    return {
      ...this.operations.stats(),
      charges: { total: this.charges.size, ...byStatus },
      refunds: this.refunds.size,
      challenges: this.challenges.stats(),
    };
  }

  /** Every charge and refund as the books hold them now: what the chaos suite reconciles against. */
  books(): { charges: SimCharge[]; refunds: SimRefund[] } {
    return { charges: [...this.charges.values()].map((charge) => ({ ...charge })), refunds: [...this.refunds.values()].map((refund) => ({ ...refund })) };
  }

  reset(): void {
    this.charges.clear();
    this.refunds.clear();
    this.owners.clear();
    this.disputable.clear();
    this.operations.reset();
    this.challenges.reset();
  }

  private view(charge: SimCharge, apiKey: string): ChargeView {
    const owner = this.owners.get(charge.id) === this.keyDigest(apiKey);
    return { ...charge, three_d_secure: owner ? this.challenges.authenticationOf(charge.id) : null };
  }

  private approve(charge: SimCharge, capture: boolean): Answer {
    return this.update(charge, {
      status: capture ? 'captured' : 'authorized', authorized_amount: charge.amount, captured_amount: capture ? charge.amount : 0,
      network_transaction_id: this.networkTransactionId(charge.id),
    });
  }

  /** A charge's network transaction id: 15 digits drawn from its id, as a card network's look. */
  private networkTransactionId(chargeId: string): string {
    const digest = createHmac('sha256', this.digestKey).update(`ntid\n${chargeId}`).digest();
    return `${1 + (digest[0] % 9)}${(digest.readBigUInt64BE(1) % 10n ** 14n).toString().padStart(14, '0')}`;
  }

  private decline(charge: SimCharge, declineCode: string): Answer {
    this.update(charge, { status: 'declined', authorized_amount: 0, decline_code: declineCode });
    return { status: 402, body: errorBody(declineCode, `the card was declined (${declineCode})`, { charge: { ...charge } }) };
  }

  // No PAN is kept, and an api key only where a notification must be signed with it (a challenge's, a dispute card's).
  private cardFingerprint(card: CardInput): string {
    return createHmac('sha256', this.digestKey).update(`card\n${panOf(card)}`).digest('hex');
  }

  private keyDigest(apiKey: string): string {
    return createHmac('sha256', this.digestKey).update(`key\n${apiKey}`).digest('hex');
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
    const captured = changes.status === 'captured' && charge.status !== 'captured';
    Object.assign(charge, changes, { updated_at: this.now().toISOString() });
    const disputable = captured ? this.disputable.get(charge.id) : undefined;
    // Disputed once: the script is spent with the first capture.
    if (disputable) {
      this.disputable.delete(charge.id);
      this.onDisputable?.({ ...charge }, disputable);
    }
    return { status: 200, body: { ...charge } };
  }
}
