// What a processor answers about money is checked against what we asked before anything is recorded:
// an approval of another amount or currency is no approval of ours (a processor bug, a proxy or a
// tampered answer), so it becomes `unknown` and the charge is reconciled by its key. Pure.

import type { ProviderOutcome } from './types';

/** An amount (minor units) and an ISO 4217 currency; either absent when the request or answer does not carry it. */
export interface Money {
  amount?: number;
  currency?: string;
}

const MISMATCH = 'answer does not match the request:';

/** The outcomes that say money moved, or will: only these are held to what was asked. */
const GUARDED: ReadonlySet<ProviderOutcome['kind']> = new Set(['approved', 'pending', 'requires_action']);

/**
 * Why an answer does not match the request, or undefined when it does. Only what both sides state is
 * compared: a capture asked without an amount (the whole authorization) is checked on its currency only.
 * Currencies compare case-insensitively (Stripe answers `usd` to `USD`).
 */
export function answerMismatch(asked: Money, answered: Money): string | undefined {
  const wrong: string[] = [];
  if (asked.amount !== undefined && answered.amount !== undefined && asked.amount !== answered.amount) {
    wrong.push(`amount ${answered.amount} answered, ${asked.amount} asked`);
  }
  if (asked.currency !== undefined && answered.currency !== undefined && asked.currency.toUpperCase() !== answered.currency.toUpperCase()) {
    wrong.push(`currency ${answered.currency} answered, ${asked.currency} asked`);
  }
  return wrong.length ? wrong.join('; ') : undefined;
}

/**
 * The outcome, or `unknown` when it says money moved (approved, pending, requires_action) by an answer
 * that names another amount or currency than asked, or another object (`otherObject`: why the answer is
 * not about our request). Declines and failures pass as they are: they move no money.
 */
export function guardAnswer(outcome: ProviderOutcome, asked: Money, answered: Money, otherObject?: string): ProviderOutcome {
  if (!GUARDED.has(outcome.kind)) return outcome;
  const why = otherObject ?? answerMismatch(asked, answered);
  return why ? { kind: 'unknown', error: `${MISMATCH} ${why}` } : outcome;
}

/** The exchange record of an answer the guard refused, with why (the answer itself is kept as it came). */
export function withReason<T extends { error?: string }>(exchange: T, outcome: ProviderOutcome): T {
  return outcome.kind === 'unknown' && outcome.error.startsWith(MISMATCH) ? { ...exchange, error: outcome.error } : exchange;
}
