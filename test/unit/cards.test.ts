import { describe, expect, it } from 'vitest';
import { cardNetwork, CardNetwork, isExpired, luhnValid, normalizePan, validateCard } from '../../lib/cards';

const NOW = new Date('2026-06-15T12:00:00.000Z');

describe('luhnValid', () => {
  it.each([
    ['4242424242424242', true],
    ['4242424242424241', false],
    ['5555555555554444', true],
    ['378282246310005', true],
    ['6011111111111117', true],
    ['4000000000000002', true],
    ['79927398713', true],
    ['79927398710', false],
    ['0000000000000000', true],
    ['4242-4242-4242-4242', false],
    ['', false],
  ])('%s → %s', (digits, valid) => {
    expect(luhnValid(digits)).toBe(valid);
  });
});

describe('cardNetwork', () => {
  it.each<[string, CardNetwork]>([
    ['4242424242424242', 'VISA'],
    ['4000000000000002', 'VISA'],
    ['5105105105105100', 'MASTERCARD'],
    ['5555555555554444', 'MASTERCARD'],
    ['5000000000000009', 'UNKNOWN'],
    ['5600000000000000', 'UNKNOWN'],
    ['2221000000000009', 'MASTERCARD'],
    ['2720990000000000', 'MASTERCARD'],
    ['2220990000000000', 'UNKNOWN'],
    ['2721000000000000', 'UNKNOWN'],
    ['340000000000009', 'AMEX'],
    ['378282246310005', 'AMEX'],
    ['350000000000000', 'UNKNOWN'],
    ['6011111111111117', 'DISCOVER'],
    ['6440000000000000', 'DISCOVER'],
    ['6490000000000000', 'DISCOVER'],
    ['6430000000000000', 'UNKNOWN'],
    ['6500000000000000', 'DISCOVER'],
    ['6012000000000000', 'UNKNOWN'],
    ['3530111333300000', 'UNKNOWN'],
  ])('%s → %s', (pan, network) => {
    expect(cardNetwork(pan)).toBe(network);
  });
});

describe('isExpired', () => {
  it.each([
    [6, 2026, false],
    [5, 2026, true],
    [12, 2025, true],
    [1, 2027, false],
    [7, 26, false],
    [5, 26, true],
  ])('%i/%i at 2026-06 → %s', (month, year, expired) => {
    expect(isExpired(month, year, NOW)).toBe(expired);
  });
});

describe('validateCard', () => {
  const good = { number: '4242 4242 4242 4242', exp_month: 12, exp_year: 2030, cvc: '123' };

  it('normalizes spaces and returns the network, last4 and four-digit year', () => {
    expect(normalizePan(good.number)).toBe('4242424242424242');
    expect(validateCard(good, NOW)).toEqual({
      card: { pan: '4242424242424242', network: 'VISA', last4: '4242', expMonth: 12, expYear: 2030, cvc: '123' },
    });
    expect(validateCard({ ...good, exp_year: 30 }, NOW)).toMatchObject({ card: { expYear: 2030 } });
    expect(validateCard({ ...good, number: '3782 822463 10005', cvc: '1234' }, NOW)).toMatchObject({ card: { network: 'AMEX' } });
  });

  it.each<[string, Partial<typeof good>, string, string]>([
    ['letters', { number: '4242abcd42424242' }, 'number', 'must contain digits only'],
    ['dashes', { number: '4242-4242-4242-4242' }, 'number', 'must contain digits only'],
    ['too short', { number: '42424242424' }, 'number', 'must have 12 to 19 digits'],
    ['too long', { number: '42424242424242424242' }, 'number', 'must have 12 to 19 digits'],
    ['bad Luhn', { number: '4242424242424241' }, 'number', 'is not a valid card number'],
    ['month 0', { exp_month: 0 }, 'exp_month', 'must be a month from 1 to 12'],
    ['month 13', { exp_month: 13 }, 'exp_month', 'must be a month from 1 to 12'],
    ['expired last month', { exp_month: 5, exp_year: 2026 }, 'exp_year', 'the card has expired'],
    ['year far away', { exp_year: 2200 }, 'exp_year', 'is not a plausible year'],
    ['cvc too short', { cvc: '12' }, 'cvc', 'must be 3 digits'],
    ['cvc not digits', { cvc: 'abc' }, 'cvc', 'must be 3 digits'],
    ['amex cvc of three', { number: '378282246310005', cvc: '123' }, 'cvc', 'must be 4 digits'],
  ])('refuses %s', (_name, change, field, message) => {
    const result = validateCard({ ...good, ...change }, NOW);
    expect(result).toEqual({ problems: [{ field, message }] });
  });

  it('reports every problem at once and never echoes the number', () => {
    const result = validateCard({ number: '1234567890123', exp_month: 13, exp_year: 2020, cvc: '1' }, NOW);
    expect('problems' in result && result.problems.map((p) => p.field)).toEqual(['number', 'exp_month', 'cvc']);
    expect(JSON.stringify(result)).not.toContain('1234567890123');
  });
});
