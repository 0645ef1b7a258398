import { describe, expect, it } from 'vitest';
import { allows, FINAL_PAYMENT_STATUSES, leadsTo, PAYMENT_STATUSES, PAYMENT_TRANSITIONS, PaymentTransition } from '../../contracts/payments';

/** The payment state machine as docs/payments.md states it: which status each command and timer may start from. */
const EXPECTED: Record<PaymentTransition, string[]> = {
  confirm: ['CREATED', 'FAILED'],
  walk: ['PROCESSING'],
  capture: ['AUTHORIZED'],
  cancel: ['CREATED', 'FAILED', 'AUTHORIZED', 'REQUIRES_ACTION'],
  paymentExpiry: ['CREATED', 'FAILED'],
  authExpiry: ['AUTHORIZED'],
  settle: ['AUTHORIZED'],
  captureFailed: ['SUCCEEDED'],
};

describe('the payment transition table', () => {
  for (const [transition, from] of Object.entries(EXPECTED) as [PaymentTransition, string[]][]) {
    it(`lets ${transition} start from ${from.join(', ')} and nothing else`, () => {
      expect(PAYMENT_STATUSES.filter((status) => allows(transition, status)).sort()).toEqual([...from].sort());
    });
  }

  it('takes nothing once a payment has succeeded or been canceled, but a capture the processor reports failed after all', () => {
    for (const status of FINAL_PAYMENT_STATUSES) {
      const from = Object.keys(PAYMENT_TRANSITIONS).filter((t) => allows(t as PaymentTransition, status));
      expect(from).toEqual(status === 'SUCCEEDED' ? ['captureFailed'] : []);
    }
    expect(PAYMENT_TRANSITIONS.captureFailed.to).toEqual(['AUTHORIZED']);
  });

  it('ends a cancel or an expiry in CANCELED, a capture in SUCCEEDED', () => {
    for (const t of ['cancel', 'paymentExpiry', 'authExpiry'] as const) expect(PAYMENT_TRANSITIONS[t].to).toEqual(['CANCELED']);
    expect(leadsTo('capture', 'SUCCEEDED')).toBe(true);
    expect(leadsTo('walk', 'CANCELED')).toBe(false);
  });

  it('lets a walk whose confirm was refused unsealed leave the payment as it was, CREATED or FAILED', () => {
    expect(leadsTo('walk', 'CREATED')).toBe(true);
    expect(leadsTo('walk', 'FAILED')).toBe(true);
  });

  it('refuses a status it does not know', () => {
    expect(allows('confirm', 'created')).toBe(false);
  });
});
