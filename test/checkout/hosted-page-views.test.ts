import { describe, expect, it } from 'vitest';
import { formatMoney, minorUnitDigits } from '../../lib/money';
import { parseExpiry, readCardForm } from '../../api/checkout-page/card-form';
import { pageState, refusalMessage, TOO_MANY_ATTEMPTS } from '../../api/checkout-page/state';
import { isCheckoutPageUrl } from '../../api/checkout-page/checkout';
import { expiredPage, formPage, type CheckoutView } from '../../api/checkout-page/views';
import { pagePolicy } from '../../api/checkout-page/html';

// The hosted checkout page's pure parts (SB_NO_STACK=1 runs them alone): money, the form's reading,
// the state a session's page is in, and what the HTML may and may not contain.

const NOW = new Date('2026-05-01T12:00:00Z');
const LATER = '2026-05-01T13:00:00Z';

const view = (over: Partial<CheckoutView> = {}): CheckoutView => ({
  sessionId: 'cs_01ABC', merchantName: 'Shop', testMode: false, amount: 1234, currency: 'USD',
  lineItems: [{ name: 'T-shirt', quantity: 2, unit_amount: 617 }], cancelUrl: 'https://shop.example/cart', ...over,
});

describe('money by minor units', () => {
  it.each([
    [1234, 'USD', '$12.34'],
    [1234, 'usd', '$12.34'],
    [500, 'JPY', '¥500'],
    [1234, 'KWD', 'KWD 1.234'],
    [1234, 'EUR', '€12.34'],
    [1234, 'XYZ', 'XYZ 12.34'],
  ])('%i %s reads %s', (amount, currency, text) => {
    expect(formatMoney(amount, currency).replace(/\u00a0/g, ' ')).toBe(text);
  });

  it('knows each currency\'s decimals', () => {
    expect([minorUnitDigits('USD'), minorUnitDigits('JPY'), minorUnitDigits('BHD'), minorUnitDigits('nope')]).toEqual([2, 0, 3, 2]);
  });
});

describe('the card form', () => {
  it.each([
    ['12 / 27', { month: 12, year: 27 }], ['12/27', { month: 12, year: 27 }], ['1227', { month: 12, year: 27 }],
    ['3 / 2030', { month: 3, year: 2030 }], ['12-27', { month: 12, year: 27 }], ['tomorrow', undefined], ['12 / 7', undefined],
  ])('reads the expiry %j', (text, expected) => {
    expect(parseExpiry(text)).toEqual(expected);
  });

  it('reads a card as typed, spaces and all', () => {
    expect(readCardForm({ number: '4242 4242 4242 4242', expiry: '12 / 30', cvc: '123', name: ' Ada Lovelace ' }, NOW)).toEqual({
      card: { number: '4242424242424242', exp_month: 12, exp_year: 30, cvc: '123', holder_name: 'Ada Lovelace' },
      echo: { expiry: '12 / 30', name: 'Ada Lovelace' },
    });
  });

  it('names each wrong field in the customer\'s words, and never keeps the number or code to show again', () => {
    const read = readCardForm({ number: '4242 4242 4242 4241', expiry: '01 / 25', cvc: '12' }, NOW);
    expect(read).toEqual({
      errors: { number: 'Enter a valid card number.', expiry: 'Your card has expired.', cvc: 'Enter the 3- or 4-digit security code.' },
      echo: { expiry: '01 / 25', name: '' },
    });
    expect(JSON.stringify(read)).not.toContain('4241');
  });

  it('asks for what is missing', () => {
    expect(readCardForm({}, NOW)).toMatchObject({ errors: { number: 'Enter your card number.', expiry: 'Enter the expiry date.', cvc: 'Enter the security code.' } });
    expect(readCardForm({ number: '4242424242424242', expiry: '13 / 30', cvc: '123' }, NOW)).toMatchObject({ errors: { expiry: 'Enter the expiry date as MM / YY.' } });
  });
});

describe('the page a session is in', () => {
  const open = { status: 'OPEN' as const, expires_at: LATER };
  const payment = (status: string, code?: string, url?: string) => ({
    status: status as never, last_error: code ? { code } : null, next_action: url ? { redirect_to_url: { url } } : null,
  });

  it.each([
    ['a new session', open, payment('CREATED'), { kind: 'open' }],
    ['any issuer decline, in one generic sentence', open, payment('FAILED', 'incorrect_cvc'), { kind: 'open', message: 'Your card was declined.' }],
    ['insufficient funds, the same sentence', open, payment('FAILED', 'insufficient_funds'), { kind: 'open', message: 'Your card was declined.' }],
    ['a payment that refuses more attempts', open, payment('FAILED', 'too_many_attempts'), { kind: 'closed', message: TOO_MANY_ATTEMPTS }],
    ['3-D Secure', open, payment('REQUIRES_ACTION', undefined, 'https://bank.example/3ds'), { kind: 'authenticate', url: 'https://bank.example/3ds' }],
    ['a payment on its way', open, payment('PROCESSING'), { kind: 'processing' }],
    ['a payment row not written yet', open, undefined, { kind: 'processing' }],
    ['a paid payment before its session says so', open, payment('SUCCEEDED'), { kind: 'paid' }],
    ['an authorization (auto_capture off)', open, payment('AUTHORIZED'), { kind: 'paid' }],
    ['a completed session', { status: 'COMPLETE' as const, expires_at: LATER }, payment('SUCCEEDED'), { kind: 'paid' }],
    ['an expired session', { status: 'EXPIRED' as const, expires_at: LATER }, payment('CANCELED'), { kind: 'expired' }],
    ['a session past its expiry not yet marked', { status: 'OPEN' as const, expires_at: '2026-05-01T11:00:00Z' }, payment('CREATED'), { kind: 'expired' }],
  ])('%s', (_name, session, pay, expected) => {
    expect(pageState(session, pay, NOW)).toEqual(expected);
  });
});

describe('what the customer is told of a refused confirm', () => {
  it.each([
    ['too_many_declines', 'Too many declined attempts. Please wait a while before you try again.'],
    ['no_eligible_provider', 'This card cannot be used for this payment. Please use another card.'],
    ['validation_failed', 'This payment could not be started. Please try again in a moment.'],
  ])('%s', (reason, message) => {
    expect(refusalMessage(reason)).toBe(message);
  });
});

describe('a hosted page as a return_url', () => {
  it.each([
    ['https://pay.example.com/checkout/cs_01ABC', true],
    ['https://pay.example.com/checkout/cs_01ABC?payment_intent=pay_1', true],
    ['https://pay.example.com.evil.test/checkout/cs_01ABC', false],
    ['https://pay.example.com/checkout/cs_01ABC/../../elsewhere', false],
    ['https://pay.example.com/v1/payments', false],
    ['https://shop.example.com/checkout/cs_01ABC', false],
  ])('%s → %s', (url, own) => {
    expect(isCheckoutPageUrl('https://pay.example.com', url)).toBe(own);
  });
});

describe('the HTML', () => {
  it('escapes what the merchant named', () => {
    const html = formPage(view({ merchantName: '<script>alert(1)</script>', lineItems: [{ name: '"><img src=x onerror=alert(1)>', quantity: 1, unit_amount: 1234 }], cancelUrl: 'https://shop.example/?a="b"' }));
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('<img');
    expect(html).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
    expect(html).toContain('href="https://shop.example/?a=&#34;b&#34;"');
  });

  it('labels every field, names the button by the total, and echoes only the expiry and the name', () => {
    const html = formPage(view(), { values: { expiry: '12 / 30', name: 'Ada' }, errors: { number: 'Enter a valid card number.' } });
    for (const label of ['Card number', 'Expiry (MM / YY)', 'CVC', 'Name on card']) expect(html).toContain(`>${label}`);
    expect(html).toContain('>Pay $12.34</button>');
    expect(html).toContain('value="12 / 30"');
    expect(html).toMatch(/<input id="number"[^>]*aria-invalid="true" aria-describedby="number-error">/);
    expect(html).not.toMatch(/<input id="(number|cvc)"[^>]*value=/);
  });

  it('has no form once the session is over', () => {
    expect(expiredPage(view())).not.toContain('<form');
    expect(expiredPage(view())).not.toContain('<input');
  });

  it('has a policy that loads nothing from elsewhere and is never framed', () => {
    expect(pagePolicy(['https://shop.example'])).toBe(
      "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; form-action 'self' https://shop.example; frame-ancestors 'none'; base-uri 'none'",
    );
  });
});
