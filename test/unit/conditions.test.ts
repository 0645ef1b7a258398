import { describe, expect, it } from 'vitest';
import { Conditions, matchesConditions, PaymentFacts, validateConditions } from '../../lib/routing/conditions';

const payment: PaymentFacts = {
  amount: 5_000,
  currency: 'USD',
  installments: 3,
  card: { network: 'VISA', country: 'US' },
  customer: { country: 'CA' },
  metadata: { channel: 'web', tier: 'gold' },
};

const guest: PaymentFacts = { amount: 5_000, currency: 'USD', installments: 1, card: { network: 'VISA' } };

describe('matchesConditions', () => {
  const cases: [string, Conditions, boolean][] = [
    ['eq on a number', { amount: { eq: 5_000 } }, true],
    ['eq on a different number', { amount: { eq: 4_999 } }, false],
    ['neq', { currency: { neq: 'EUR' } }, true],
    ['neq on the same value', { currency: { neq: 'USD' } }, false],
    ['in', { currency: { in: ['EUR', 'USD'] } }, true],
    ['in without the value', { currency: { in: ['EUR', 'GBP'] } }, false],
    ['nin', { 'card.network': { nin: ['AMEX', 'DISCOVER'] } }, true],
    ['nin with the value', { 'card.network': { nin: ['VISA'] } }, false],
    ['gt', { amount: { gt: 4_999 } }, true],
    ['gt at the boundary', { amount: { gt: 5_000 } }, false],
    ['gte at the boundary', { amount: { gte: 5_000 } }, true],
    ['lt at the boundary', { amount: { lt: 5_000 } }, false],
    ['lte at the boundary', { amount: { lte: 5_000 } }, true],
    ['a range: all operators of one field must hold', { amount: { gte: 1_000, lt: 500_000 } }, true],
    ['a range the amount is outside', { amount: { gte: 1_000, lt: 5_000 } }, false],
    ['installments', { installments: { gt: 1 } }, true],
    ['card.network', { 'card.network': { eq: 'VISA' } }, true],
    ['card.country', { 'card.country': { eq: 'US' } }, true],
    ['customer.country', { 'customer.country': { in: ['CA', 'MX'] } }, true],
    ['metadata', { 'metadata.channel': { eq: 'web' } }, true],
    ['metadata with another value', { 'metadata.channel': { in: ['pos', 'moto'] } }, false],
    ['every field of one object must hold', { currency: { eq: 'USD' }, 'card.network': { eq: 'AMEX' } }, false],
    ['the documented example', { currency: { in: ['USD', 'EUR'] }, amount: { gte: 1_000, lt: 500_000 }, 'card.network': { eq: 'VISA' } }, true],
    ['an empty object matches everything', {}, true],
    ['any: one branch is enough', { any: [{ currency: { eq: 'EUR' } }, { amount: { gt: 1_000 } }] }, true],
    ['any: no branch holds', { any: [{ currency: { eq: 'EUR' } }, { amount: { gt: 10_000 } }] }, false],
    ['all: every branch holds', { all: [{ currency: { eq: 'USD' } }, { amount: { gt: 1_000 } }] }, true],
    ['all: one branch fails', { all: [{ currency: { eq: 'USD' } }, { amount: { gt: 10_000 } }] }, false],
    ['nested any inside all', { all: [{ currency: { eq: 'USD' } }, { any: [{ 'card.network': { eq: 'AMEX' } }, { 'metadata.tier': { eq: 'gold' } }] }] }, true],
    ['nested all inside any', { any: [{ all: [{ currency: { eq: 'EUR' } }, { amount: { gt: 1 } }] }, { all: [{ installments: { eq: 3 } }, { 'card.country': { eq: 'US' } }] }] }, true],
    ['a combinator beside fields: both must hold', { currency: { eq: 'USD' }, any: [{ amount: { gt: 10_000 } }] }, false],
  ];

  it.each(cases)('%s', (_name, conditions, expected) => {
    expect(validateConditions(conditions)).toEqual([]);
    expect(matchesConditions(conditions, payment)).toBe(expected);
  });

  describe('with a missing fact', () => {
    const missing: [string, Conditions, boolean][] = [
      ['eq is false', { 'customer.country': { eq: 'US' } }, false],
      ['in is false', { 'card.country': { in: ['US', 'CA'] } }, false],
      ['neq is true (the value is not that one)', { 'customer.country': { neq: 'US' } }, true],
      ['nin is true (the value is not in the list)', { 'metadata.channel': { nin: ['web'] } }, true],
      ['a missing metadata key fails eq', { 'metadata.channel': { eq: 'web' } }, false],
    ];

    it.each(missing)('%s', (_name, conditions, expected) => {
      expect(matchesConditions(conditions, guest)).toBe(expected);
    });
  });

  it('fails closed on a field it does not know (unvalidated input)', () => {
    expect(matchesConditions({ 'card.brand': { eq: 'VISA' } } as Conditions, payment)).toBe(false);
    expect(matchesConditions({ amount: { between: [1, 2] } } as unknown as Conditions, payment)).toBe(false);
  });
});

describe('validateConditions', () => {
  const invalid: [string, unknown, { path: string }[]][] = [
    ['a non-object', ['amount'], [{ path: '/' }]],
    ['null', null, [{ path: '/' }]],
    ['an unknown field', { 'card.brand': { eq: 'VISA' } }, [{ path: '/card.brand' }]],
    ['an empty metadata key', { 'metadata.': { eq: 'x' } }, [{ path: '/metadata.' }]],
    ['an unknown operator', { amount: { between: [1, 2] } }, [{ path: '/amount/between' }]],
    ['an empty operator object', { amount: {} }, [{ path: '/amount' }]],
    ['an operator object that is a value', { amount: 1000 }, [{ path: '/amount' }]],
    ['a string for amount', { amount: { gte: '1000' } }, [{ path: '/amount/gte' }]],
    ['a fraction for installments', { installments: { eq: 1.5 } }, [{ path: '/installments/eq' }]],
    ['a number for currency', { currency: { eq: 840 } }, [{ path: '/currency/eq' }]],
    ['a lower-case currency', { currency: { eq: 'usd' } }, [{ path: '/currency/eq' }]],
    ['a three-letter country', { 'card.country': { eq: 'USA' } }, [{ path: '/card.country/eq' }]],
    ['a lower-case network', { 'card.network': { eq: 'visa' } }, [{ path: '/card.network/eq' }]],
    ['a number for metadata', { 'metadata.tier': { eq: 1 } }, [{ path: '/metadata.tier/eq' }]],
    ['an ordering operator on a string field', { currency: { gt: 'EUR' } }, [{ path: '/currency/gt' }]],
    ['in that is not an array', { currency: { in: 'USD' } }, [{ path: '/currency/in' }]],
    ['an empty in', { currency: { nin: [] } }, [{ path: '/currency/nin' }]],
    ['a bad element of in', { currency: { in: ['USD', 'eur'] } }, [{ path: '/currency/in/1' }]],
    ['an empty any', { any: [] }, [{ path: '/any' }]],
    ['all that is not an array', { all: { amount: { gt: 1 } } }, [{ path: '/all' }]],
    ['a bad condition inside any', { any: [{ amount: { gt: 1 } }, { currency: { in: [1] } }] }, [{ path: '/any/1/currency/in/0' }]],
    ['a non-object inside all', { all: ['x'] }, [{ path: '/all/0' }]],
    ['a slash in a metadata key is escaped', { 'metadata.a/b': { eq: 1 } }, [{ path: '/metadata.a~1b/eq' }]],
    ['every error, not just the first', { amount: { gt: 'x' }, currency: { eq: 1 } }, [{ path: '/amount/gt' }, { path: '/currency/eq' }]],
  ];

  it.each(invalid)('rejects %s', (_name, conditions, expected) => {
    const errors = validateConditions(conditions);
    expect(errors).toEqual(expected.map((error) => ({ ...error, message: expect.any(String) })));
  });

  it('rejects nesting deeper than the limit', () => {
    let deep: unknown = { amount: { gt: 1 } };
    for (let i = 0; i < 10; i++) deep = { all: [deep] };
    expect(validateConditions(deep)).toHaveLength(1);
  });

  it('explains what was expected', () => {
    expect(validateConditions({ currency: { gt: 'EUR' } })[0].message).toMatch(/numeric fields/);
    expect(validateConditions({ 'card.brand': { eq: 'VISA' } })[0].message).toMatch(/unknown field "card.brand"/);
  });

  it('accepts every field with its kind of value', () => {
    expect(validateConditions({
      amount: { gte: 1, lte: 99_999_999, neq: 50, nin: [7] },
      installments: { in: [1, 3, 6] },
      currency: { eq: 'USD' },
      'card.network': { in: ['VISA', 'MASTERCARD'] },
      'card.country': { neq: 'US' },
      'customer.country': { nin: ['RU'] },
      'metadata.order_type': { eq: 'subscription, renewal' },
      all: [{ any: [{ amount: { gt: 1 } }] }],
    })).toEqual([]);
  });
});
