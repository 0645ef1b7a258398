/**
 * Pure card rules (docs/merchant-resources.md#card-vault): PAN shape and Luhn, network from the BIN, expiry, CVC length.
 * Nothing here logs or keeps a number; callers pass the PAN in and get facts about it back.
 */

export type CardNetwork = 'VISA' | 'MASTERCARD' | 'AMEX' | 'DISCOVER' | 'UNKNOWN';

export interface CardInput {
  number: string;
  exp_month: number;
  exp_year: number;
  cvc: string;
}

/** A reason a card is refused, named by the card field it concerns. Never carries the value itself. */
export interface CardProblem {
  field: 'number' | 'exp_month' | 'exp_year' | 'cvc';
  message: string;
}

export interface ValidCard {
  pan: string;
  network: CardNetwork;
  last4: string;
  expMonth: number;
  expYear: number;
  cvc: string;
}

/** The PAN as digits: spaces are how people write numbers, so they are dropped; nothing else is. */
export function normalizePan(number: string): string {
  return number.replace(/ /g, '');
}

export function luhnValid(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i += 1) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

function prefixIn(pan: string, length: number, from: number, to: number): boolean {
  if (pan.length < length) return false;
  const prefix = Number(pan.slice(0, length));
  return prefix >= from && prefix <= to;
}

/** The card network from the leading digits (BIN ranges). */
export function cardNetwork(pan: string): CardNetwork {
  if (pan.startsWith('4')) return 'VISA';
  if (prefixIn(pan, 2, 51, 55) || prefixIn(pan, 4, 2221, 2720)) return 'MASTERCARD';
  if (pan.startsWith('34') || pan.startsWith('37')) return 'AMEX';
  if (pan.startsWith('6011') || prefixIn(pan, 3, 644, 649) || pan.startsWith('65')) return 'DISCOVER';
  return 'UNKNOWN';
}

/** Two-digit years are this century's (26 → 2026). */
export function fullExpYear(year: number): number {
  return year < 100 ? 2000 + year : year;
}

/** A card is good through the last moment of its expiry month (UTC). */
export function isExpired(expMonth: number, expYear: number, now: Date = new Date()): boolean {
  const year = fullExpYear(expYear);
  const nowYear = now.getUTCFullYear();
  const nowMonth = now.getUTCMonth() + 1;
  return year < nowYear || (year === nowYear && expMonth < nowMonth);
}

/** Validates a card as entered; returns the normalized card or every problem found. */
export function validateCard(card: CardInput, now: Date = new Date()): { card: ValidCard } | { problems: CardProblem[] } {
  const problems: CardProblem[] = [];
  const pan = normalizePan(card.number);
  let network: CardNetwork = 'UNKNOWN';
  if (!/^\d+$/.test(pan)) {
    problems.push({ field: 'number', message: 'must contain digits only' });
  } else if (pan.length < 12 || pan.length > 19) {
    problems.push({ field: 'number', message: 'must have 12 to 19 digits' });
  } else if (!luhnValid(pan)) {
    problems.push({ field: 'number', message: 'is not a valid card number' });
  } else {
    network = cardNetwork(pan);
  }

  const monthValid = Number.isInteger(card.exp_month) && card.exp_month >= 1 && card.exp_month <= 12;
  const year = fullExpYear(card.exp_year);
  const yearValid = Number.isInteger(card.exp_year) && year >= 2000 && year <= now.getUTCFullYear() + 50;
  if (!monthValid) problems.push({ field: 'exp_month', message: 'must be a month from 1 to 12' });
  if (!yearValid) problems.push({ field: 'exp_year', message: 'is not a plausible year' });
  if (monthValid && yearValid && isExpired(card.exp_month, year, now)) {
    problems.push({ field: 'exp_year', message: 'the card has expired' });
  }

  const cvcLengths = network === 'AMEX' ? [4] : network === 'UNKNOWN' ? [3, 4] : [3];
  if (!/^\d+$/.test(card.cvc) || !cvcLengths.includes(card.cvc.length)) {
    problems.push({ field: 'cvc', message: `must be ${cvcLengths.join(' or ')} digits` });
  }

  if (problems.length) return { problems };
  return { card: { pan, network, last4: pan.slice(-4), expMonth: card.exp_month, expYear: year, cvc: card.cvc } };
}
