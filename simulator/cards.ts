// The simulator's card brain: test cards with scripted outcomes, network from the BIN, Luhn.
// The one place in Switchboard where a PAN is read; it is never stored, logged or echoed (last4 only).

export type CardNetwork = 'VISA' | 'MASTERCARD' | 'AMEX' | 'DISCOVER' | 'UNKNOWN';

export interface CardVerdict {
  network: CardNetwork;
  last4: string;
  /** Absent when the card is approved. */
  declineCode?: string;
  /** Present for the 3-D Secure test cards (when nothing else declined the card). */
  threeDSecure?: ThreeDSecureCard;
  /** Present for the dispute test cards: what happens a while after the charge is captured. */
  dispute?: DisputeScript;
}

/**
 * How a dispute test card is disputed once captured: `fraudulent`, a chargeback (funds withdrawn with a
 * fee); `inquiry`, a retrieval request that moves no money until lost; `warning`, an early fraud warning
 * that closes by itself.
 */
export type DisputeScript = 'fraudulent' | 'inquiry' | 'warning';

/**
 * How a 3-D Secure test card behaves. `required`: challenged on every authorization; `optional`: supports
 * 3-D Secure, challenged only when the authorization asks for it; `step_up`: declined
 * `authentication_required` unless the authorization asks for 3-D Secure, then challenged.
 */
export interface ThreeDSecureCard {
  authentication: 'required' | 'optional' | 'step_up';
  /** What the issuer answers once the cardholder authenticated (absent: approved). */
  declineAfterAuthentication?: string;
}

export interface CardInput {
  number: string;
  exp_month: number;
  exp_year: number;
  cvc?: string;
}

// Scripted outcomes (docs/sandbox-processor.md#the-sandbox-processor-simulator); any other Luhn-valid, unexpired card is approved.
const TEST_CARDS: Readonly<Record<string, string>> = {
  '4000000000000002': 'card_declined',
  '4000000000009995': 'insufficient_funds',
  '4000000000000069': 'expired_card',
  '4000000000000119': 'processing_error',
};

// Stripe's dispute test cards, with the same meanings (docs/sandbox-processor.md#disputes-in-the-sandbox).
const DISPUTE_CARDS: Readonly<Record<string, DisputeScript>> = {
  '4000000000000259': 'fraudulent',
  '4000000000001976': 'inquiry',
  '4000000000005423': 'warning',
};

// Stripe's 3-D Secure test cards, with the same meanings (docs/sandbox-processor.md#3-d-secure-in-the-sandbox).
const THREE_D_SECURE_CARDS: Readonly<Record<string, ThreeDSecureCard>> = {
  '4000002760003184': { authentication: 'required' },
  '4000008400001629': { authentication: 'required', declineAfterAuthentication: 'card_declined' },
  '4000000000003055': { authentication: 'optional' },
  '4000002500003155': { authentication: 'step_up' },
};

const NETWORK_PREFIXES: readonly [RegExp, CardNetwork][] = [
  [/^4/, 'VISA'],
  [/^3[47]/, 'AMEX'],
  [/^(5[1-5]|222[1-9]|22[3-9]\d|2[3-6]\d\d|27[01]\d|2720)/, 'MASTERCARD'],
  [/^(6011|64[4-9]|65)/, 'DISCOVER'],
];

export function networkOf(pan: string): CardNetwork {
  return NETWORK_PREFIXES.find(([prefix]) => prefix.test(pan))?.[1] ?? 'UNKNOWN';
}

export function luhnValid(pan: string): boolean {
  let sum = 0;
  for (let i = 0; i < pan.length; i++) {
    let digit = Number(pan[pan.length - 1 - i]);
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

/** The card number without the spaces and dashes people type. */
export function panOf(card: CardInput): string {
  return card.number.replace(/[\s-]/g, '');
}

export function judgeCard(card: CardInput, now: Date): CardVerdict {
  const pan = panOf(card);
  const verdict = { network: networkOf(pan), last4: pan.slice(-4) };
  if (!/^\d{12,19}$/.test(pan) || !luhnValid(pan)) return { ...verdict, declineCode: 'invalid_number' };
  const scripted = TEST_CARDS[pan];
  if (scripted) return { ...verdict, declineCode: scripted };
  // A card is valid through the last day of its expiry month.
  const expiresAt = Date.UTC(card.exp_year, card.exp_month, 1);
  if (!(expiresAt > now.getTime())) return { ...verdict, declineCode: 'expired_card' };
  if (card.cvc !== undefined && !/^\d{3,4}$/.test(card.cvc)) return { ...verdict, declineCode: 'incorrect_cvc' };
  const threeDSecure = THREE_D_SECURE_CARDS[pan];
  const dispute = DISPUTE_CARDS[pan];
  return { ...verdict, ...(threeDSecure ? { threeDSecure } : {}), ...(dispute ? { dispute } : {}) };
}

/** What an authorization does first: approve, decline, or challenge the cardholder (3-D Secure). */
export type AuthorizationStep =
  | { kind: 'approve' }
  | { kind: 'decline'; declineCode: string }
  | { kind: 'challenge'; declineAfterAuthentication?: string };

/**
 * The first step of an authorization of a judged card. `requested`: the authorization asks for 3-D
 * Secure; `authenticated`: it carries authentication data the simulator issued for this card, which
 * stands for a challenge passed (no second challenge; the issuer's answer after authentication).
 * `merchantInitiated`: an off-session stored-credential transaction, nobody there to challenge: the
 * step-up card approves it when it references an earlier approval (`networkTransactionId`), a card that
 * always authenticates declines it `authentication_required` (the merchant brings the customer back).
 */
export function authorizationStep(
  verdict: CardVerdict, threeDSecure: { requested: boolean; authenticated: boolean; merchantInitiated?: { networkTransactionId?: string } },
): AuthorizationStep {
  if (verdict.declineCode) return { kind: 'decline', declineCode: verdict.declineCode };
  const card = verdict.threeDSecure;
  // A card without 3-D Secure ignores the request, as an issuer not enrolled does.
  if (!card) return { kind: 'approve' };
  const after = card.declineAfterAuthentication;
  if (threeDSecure.authenticated) return after ? { kind: 'decline', declineCode: after } : { kind: 'approve' };
  const mit = threeDSecure.merchantInitiated;
  if (mit) {
    const asks = card.authentication === 'required' || (card.authentication === 'step_up' && !mit.networkTransactionId);
    return asks ? { kind: 'decline', declineCode: 'authentication_required' } : { kind: 'approve' };
  }
  if (card.authentication === 'required' || threeDSecure.requested) return { kind: 'challenge', ...(after ? { declineAfterAuthentication: after } : {}) };
  if (card.authentication === 'step_up') return { kind: 'decline', declineCode: 'authentication_required' };
  return { kind: 'approve' };
}
