import { describe, expect, it } from 'vitest';
import { answerMismatch, guardAnswer, withReason, type Money } from '../../activities/providers/answer-guard';
import type { ProviderOutcome } from '../../activities/providers/types';

// The guard every adapter holds a processor's answer to: the money it says it moved must be the money
// asked for, or the outcome is unknown (reconciled by key), never a success.

const approved = (authorized: number, captured = 0): ProviderOutcome => ({
  kind: 'approved', providerReference: 'pi_1', authorizedAmount: authorized, capturedAmount: captured, refundedAmount: 0,
});

describe('answerMismatch', () => {
  const cases: [string, Money, Money, string | undefined][] = [
    ['same amount and currency', { amount: 1234, currency: 'USD' }, { amount: 1234, currency: 'USD' }, undefined],
    ['currency in another case (Stripe answers lower case)', { amount: 1234, currency: 'USD' }, { amount: 1234, currency: 'usd' }, undefined],
    ['a capture of 500 answered 500 (less than authorized, as asked)', { amount: 500, currency: 'EUR' }, { amount: 500, currency: 'EUR' }, undefined],
    ['another amount', { amount: 1234, currency: 'USD' }, { amount: 1, currency: 'USD' }, 'amount 1 answered, 1234 asked'],
    ['a partial approval nobody asked for', { amount: 1000, currency: 'EUR' }, { amount: 600, currency: 'EUR' }, 'amount 600 answered, 1000 asked'],
    ['another currency', { amount: 1234, currency: 'USD' }, { amount: 1234, currency: 'jpy' }, 'currency jpy answered, USD asked'],
    ['both', { amount: 10, currency: 'USD' }, { amount: 20, currency: 'EUR' }, 'amount 20 answered, 10 asked; currency EUR answered, USD asked'],
    ['no amount asked (capture the whole authorization): the currency only', { currency: 'USD' }, { amount: 999, currency: 'USD' }, undefined],
    ['no amount asked, another currency', { currency: 'USD' }, { amount: 999, currency: 'EUR' }, 'currency EUR answered, USD asked'],
    ['an answer that states no amount', { amount: 1234, currency: 'USD' }, {}, undefined],
    ['an amount of 0 answered for one asked', { amount: 1234, currency: 'USD' }, { amount: 0, currency: 'USD' }, 'amount 0 answered, 1234 asked'],
  ];
  it.each(cases)('%s', (_name, asked, answered, expected) => {
    expect(answerMismatch(asked, answered)).toBe(expected);
  });
});

describe('guardAnswer', () => {
  const asked: Money = { amount: 1234, currency: 'USD' };
  const cases: [string, ProviderOutcome, Money, string | undefined, ProviderOutcome['kind']][] = [
    ['an approval of what was asked stands', approved(1234, 1234), { amount: 1234, currency: 'usd' }, undefined, 'approved'],
    ['an approval of another amount is unknown', approved(1), { amount: 1, currency: 'usd' }, undefined, 'unknown'],
    ['an approval in another currency is unknown', approved(1234), { amount: 1234, currency: 'eur' }, undefined, 'unknown'],
    ['an approval about another object is unknown', approved(1234), { amount: 1234, currency: 'USD' }, 'payment intent pi_2 answered, pi_1 asked', 'unknown'],
    ['a received modification of another amount is unknown', { kind: 'pending', providerReference: 'P1', operationReference: 'M1' }, { amount: 99, currency: 'USD' }, undefined, 'unknown'],
    ['a challenge for another amount is unknown', { kind: 'requires_action', providerReference: 'pi_1', redirectUrl: 'https://acs.example' }, { amount: 99, currency: 'USD' }, undefined, 'unknown'],
    ['a decline passes as it is (no money moved)', { kind: 'hard_decline', declineCode: 'lost_card' }, { amount: 99, currency: 'USD' }, undefined, 'hard_decline'],
    ['an unknown stays unknown', { kind: 'unknown', error: 'HTTP 500' }, { amount: 99, currency: 'USD' }, undefined, 'unknown'],
    ['a transport error passes', { kind: 'transport_error', error: 'ECONNREFUSED' }, { amount: 99 }, undefined, 'transport_error'],
  ];
  it.each(cases)('%s', (_name, outcome, answered, other, kind) => {
    const guarded = guardAnswer(outcome, asked, answered, other);
    expect(guarded.kind).toBe(kind);
    if (kind === outcome.kind) expect(guarded).toBe(outcome);
    else expect(guarded).toEqual({ kind: 'unknown', error: expect.stringMatching(/^answer does not match the request: /) });
  });

  it('names what did not match, and the exchange record keeps it', () => {
    const guarded = guardAnswer(approved(1), asked, { amount: 1, currency: 'usd' });
    expect(guarded).toEqual({ kind: 'unknown', error: 'answer does not match the request: amount 1 answered, 1234 asked' });
    const exchange: { operation: string; error?: string } = { operation: 'authorize' };
    expect(withReason(exchange, guarded)).toEqual({ operation: 'authorize', error: 'answer does not match the request: amount 1 answered, 1234 asked' });
    // Other unknown outcomes keep their exchange as it was.
    expect(withReason(exchange, { kind: 'unknown', error: 'HTTP 500' })).toEqual({ operation: 'authorize' });
  });
});
