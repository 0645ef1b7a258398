// The simulator's card brain: test cards with scripted outcomes, network from the BIN, Luhn.
// The one place in Switchboard where a PAN is read; it is never stored, logged or echoed (last4 only).

export type CardNetwork = 'VISA' | 'MASTERCARD' | 'AMEX' | 'DISCOVER' | 'UNKNOWN';

export interface CardVerdict {
  network: CardNetwork;
  last4: string;
  /** Absent when the card is approved. */
  declineCode?: string;
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

export function judgeCard(card: CardInput, now: Date): CardVerdict {
  const pan = card.number.replace(/[\s-]/g, '');
  const verdict = { network: networkOf(pan), last4: pan.slice(-4) };
  if (!/^\d{12,19}$/.test(pan) || !luhnValid(pan)) return { ...verdict, declineCode: 'invalid_number' };
  const scripted = TEST_CARDS[pan];
  if (scripted) return { ...verdict, declineCode: scripted };
  // A card is valid through the last day of its expiry month.
  const expiresAt = Date.UTC(card.exp_year, card.exp_month, 1);
  if (!(expiresAt > now.getTime())) return { ...verdict, declineCode: 'expired_card' };
  if (card.cvc !== undefined && !/^\d{3,4}$/.test(card.cvc)) return { ...verdict, declineCode: 'incorrect_cvc' };
  return verdict;
}
