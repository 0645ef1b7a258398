// The 3-D Secure side of the simulated processor's books: the challenges charges wait on, and the
// authentication data issued when a cardholder passes one (per charge, and per card, so that data given
// back on a later authorize is recognized). Apart from ledger.ts, which moves the money: a challenge only
// tells the ledger how it ended.

import { randomBytes, randomUUID } from 'node:crypto';

/** 3-D Secure authentication data, as the simulator issues it and accepts it back (external authentication). */
export interface AuthenticationData {
  version: string;
  eci: string;
  cavv: string;
  ds_transaction_id: string;
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

/** A challenge and what its end needs to know, never shown whole. */
export interface ChallengeRecord {
  view: Challenge;
  capture: boolean;
  declineAfterAuthentication?: string;
  /** The card's fingerprint, to remember the authentication data issued for it. */
  card: string;
  /** The key the authorize was made with: it signs the notification. Never shown. */
  apiKey: string;
}

/** The authentication data the simulator issues when a cardholder passes a challenge. */
const ISSUED_VERSION = '2.2.0';
const ISSUED_ECI = '05';

export class Challenges {
  /** Charge id → its challenge (a challenge's id is its charge's). */
  private challenges = new Map<string, ChallengeRecord>();
  /** Charge id → the authentication data its challenge issued. */
  private authentications = new Map<string, AuthenticationData>();
  /** Card fingerprint → every authentication data issued for the card. */
  private issued = new Map<string, AuthenticationData[]>();

  open(record: ChallengeRecord): void {
    this.challenges.set(record.view.charge_id, record);
  }

  find(id: string): Challenge | undefined {
    const record = this.challenges.get(id);
    return record && { ...record.view };
  }

  list(): Challenge[] {
    return [...this.challenges.values()].map((record) => ({ ...record.view }));
  }

  /**
   * The cardholder's answer, recorded once: `approve` issues authentication data for the charge and its
   * card. Undefined when the challenge was already over (or never existed).
   */
  complete(id: string, action: 'approve' | 'fail', at: string): ChallengeRecord | undefined {
    const record = this.challenges.get(id);
    if (!record || record.view.state !== 'pending') return undefined;
    Object.assign(record.view, { state: action === 'approve' ? 'approved' : 'failed', completed_at: at } satisfies Partial<Challenge>);
    if (action === 'approve') {
      const data: AuthenticationData = {
        version: ISSUED_VERSION, eci: ISSUED_ECI, cavv: randomBytes(20).toString('base64'), ds_transaction_id: randomUUID(),
      };
      this.authentications.set(id, data);
      this.issued.set(record.card, [...(this.issued.get(record.card) ?? []), data]);
    }
    return record;
  }

  /** A charge voided while its challenge was pending: the challenge closes. */
  cancel(id: string, at: string): void {
    const challenge = this.challenges.get(id)?.view;
    if (challenge?.state === 'pending') Object.assign(challenge, { state: 'canceled', completed_at: at } satisfies Partial<Challenge>);
  }

  /** The authentication data a charge's challenge issued, if it passed. */
  authenticationOf(chargeId: string): AuthenticationData | null {
    return this.authentications.get(chargeId) ?? null;
  }

  /** External authentication data counts only when the simulator issued exactly it, for this card. */
  wasIssued(card: string, external: AuthenticationData | undefined): boolean {
    if (!external) return false;
    return (this.issued.get(card) ?? []).some((data) =>
      data.cavv === external.cavv && data.eci === external.eci && data.version === external.version && data.ds_transaction_id === external.ds_transaction_id);
  }

  stats(): Record<ChallengeState, number> & { total: number } {
    const byState: Record<ChallengeState, number> = { pending: 0, approved: 0, failed: 0, canceled: 0 };
    for (const { view } of this.challenges.values()) byState[view.state]++;
    return { total: this.challenges.size, ...byState };
  }

  reset(): void {
    this.challenges.clear();
    this.authentications.clear();
    this.issued.clear();
  }
}
