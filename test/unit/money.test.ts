import { describe, expect, it } from 'vitest';
import { formatMoney, plainAmount } from '../../lib/money';

describe('amounts as operators read them', () => {
  it('take their decimals from the currency: two for USD, none for JPY, three for KWD', () => {
    expect(plainAmount(2599, 'USD')).toBe('25.99 USD');
    expect(plainAmount(500, 'JPY')).toBe('500 JPY');
    expect(plainAmount(1234, 'kwd')).toBe('1.234 KWD');
    expect(formatMoney(500, 'JPY')).toBe('¥500');
  });
});
