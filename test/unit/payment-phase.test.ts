import { describe, expect, it } from 'vitest';
import type { PaymentStatus, PaymentTransition } from '../../contracts/payments';
import { assertLeadsTo, IllegalTransition, restingPhase } from '../../workflows/payments/phase';

describe('a payment status change goes through the transition table', () => {
  // transition holding the lock, from, to → allowed?
  const cases: [PaymentTransition | undefined, PaymentStatus, PaymentStatus, boolean][] = [
    ['confirm', 'CREATED', 'PROCESSING', true],
    ['walk', 'PROCESSING', 'AUTHORIZED', true],
    ['walk', 'PROCESSING', 'REQUIRES_ACTION', true],
    ['capture', 'AUTHORIZED', 'SUCCEEDED', true],
    ['settle', 'AUTHORIZED', 'AUTHORIZED', true],
    ['captureFailed', 'SUCCEEDED', 'AUTHORIZED', true],
    ['walk', 'PROCESSING', 'CANCELED', false],
    ['capture', 'AUTHORIZED', 'CANCELED', false],
    ['authExpiry', 'AUTHORIZED', 'SUCCEEDED', false],
    ['confirm', 'CREATED', 'SUCCEEDED', false],
    [undefined, 'AUTHORIZED', 'CANCELED', false],
  ];
  for (const [by, from, to, allowed] of cases) {
    it(`${allowed ? 'lets' : 'refuses'} ${by ?? 'no transition'} take ${from} to ${to}`, () => {
      const change = () => assertLeadsTo(by, from, to);
      if (allowed) expect(change).not.toThrow();
      else expect(change).toThrow(IllegalTransition);
    });
  }
  it('throws a plain Error (a workflow task failure), not an ApplicationFailure that would fail only the update', () => {
    let thrown: unknown;
    try { assertLeadsTo('walk', 'PROCESSING', 'CANCELED'); } catch (err) { thrown = err; }
    expect(thrown).toBeInstanceOf(Error);
    expect((thrown as Error).constructor.name).toBe('IllegalTransition');
  });
});

describe('the phase a payment rests in once no command runs', () => {
  const cases: [PaymentStatus, string][] = [
    ['CREATED', 'idle'], ['FAILED', 'idle'], ['PROCESSING', 'idle'], ['REQUIRES_ACTION', 'idle'],
    ['AUTHORIZED', 'authorized'], ['SUCCEEDED', 'settled'], ['CANCELED', 'settled'], ['REFUNDED', 'settled'],
  ];
  for (const [status, kind] of cases) it(`is ${kind} for ${status}`, () => expect(restingPhase(status).kind).toBe(kind));
  it('carries no pending capture or void when it rests AUTHORIZED', () => expect(restingPhase('AUTHORIZED')).toEqual({ kind: 'authorized' }));
});
