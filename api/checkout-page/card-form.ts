import { validateCard, type CardInput, type CardProblem } from '../../lib/cards';

// The hosted page's form, read and checked as a person typed it: the card number with spaces, the
// expiry as "MM / YY", the security code, and an optional name. The checks are lib/cards.ts's; the
// messages are the customer's, one per field.

export type CardField = 'number' | 'expiry' | 'cvc' | 'name';

export interface CardFormCard extends CardInput { holder_name?: string }

export type CardFormResult =
  | { card: CardFormCard; echo: { expiry: string; name: string } }
  | { errors: Partial<Record<CardField, string>>; echo: { expiry: string; name: string } };

const MAX_NAME = 200;

/** "12 / 27", "12/27", "1227", "12 / 2027" → month and year; anything else is not an expiry. */
export function parseExpiry(text: string): { month: number; year: number } | undefined {
  const match = /^\s*(\d{1,2})\s*[/-]?\s*(\d{2}|\d{4})\s*$/.exec(text);
  return match ? { month: Number(match[1]), year: Number(match[2]) } : undefined;
}

/** The customer's message for a problem lib/cards.ts found (which names the API's fields). */
export function problemMessage(problem: Pick<CardProblem, 'field' | 'message'>): { field: CardField; message: string } {
  switch (problem.field) {
    case 'number':
      return { field: 'number', message: 'Enter a valid card number.' };
    case 'exp_month':
    case 'exp_year':
      return { field: 'expiry', message: problem.message.includes('expired') ? 'Your card has expired.' : 'Enter the expiry date as MM / YY.' };
    default: {
      const digits = /(\d(?: or \d)?) digits/.exec(problem.message)?.[1] ?? '3';
      return { field: 'cvc', message: `Enter the ${digits.replace(' or ', '- or ')}-digit security code.` };
    }
  }
}

const text = (value: unknown, max: number): string => (typeof value === 'string' ? value.slice(0, max) : '');

/**
 * The card in a submitted form, or an error per field. What may be shown again (`echo`) never holds the
 * number or the security code.
 */
export function readCardForm(form: Record<string, unknown>, now: Date = new Date()): CardFormResult {
  const number = text(form.number, 40).replace(/[\s-]/g, '');
  const expiryText = text(form.expiry, 20).trim();
  const cvc = text(form.cvc, 10).trim();
  const name = text(form.name, MAX_NAME + 1).trim();
  const echo = { expiry: expiryText, name: name.slice(0, MAX_NAME) };
  const errors: Partial<Record<CardField, string>> = {};
  if (!number) errors.number = 'Enter your card number.';
  const expiry = parseExpiry(expiryText);
  if (!expiryText) errors.expiry = 'Enter the expiry date.';
  else if (!expiry) errors.expiry = 'Enter the expiry date as MM / YY.';
  if (!cvc) errors.cvc = 'Enter the security code.';
  if (name.length > MAX_NAME) errors.name = `Use at most ${MAX_NAME} characters.`;

  const card: CardFormCard = { number, exp_month: expiry?.month ?? 0, exp_year: expiry?.year ?? 0, cvc, ...(name ? { holder_name: name } : {}) };
  const checked = validateCard(card, now);
  if ('problems' in checked) {
    for (const problem of checked.problems) {
      const { field, message } = problemMessage(problem);
      errors[field] ??= message;
    }
  }
  return Object.keys(errors).length ? { errors, echo } : { card, echo };
}

/** The field an API error names (`body/payment_method/card/exp_year` → `expiry`), if it names one. */
export function fieldOfPath(path: string): CardField | undefined {
  const last = path.split('/').at(-1);
  if (last === 'number') return 'number';
  if (last === 'exp_month' || last === 'exp_year') return 'expiry';
  if (last === 'cvc') return 'cvc';
  if (last === 'holder_name') return 'name';
  return undefined;
}
