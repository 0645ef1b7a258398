import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStripeAdapter, STRIPE_DECLINE_CODES, stripeDecline } from '../../activities/providers/stripe';
import { STRIPE_CATALOGUE, stripeApiBaseParts, stripeConfigErrors } from '../../lib/providers/stripe/credentials';
import { compileCredentialsSchema, credentialsErrors } from '../../lib/providers/credentials';
import { startStripeDouble, StripeDouble, parseForm } from '../doubles/stripe/server';

// The stripe connector without Postgres or Temporal: its decline table, catalogue checks, and the adapter
// against the local double of Stripe's API (an in-process HTTP server).

describe('the stripe decline table', () => {
  const cases: [string, string, 'hard' | 'soft'][] = [
    ['stolen_card', 'stolen_card', 'hard'],
    ['lost_card', 'lost_card', 'hard'],
    ['pickup_card', 'stolen_card', 'hard'],
    ['fraudulent', 'fraudulent', 'hard'],
    ['expired_card', 'expired_card', 'hard'],
    ['incorrect_number', 'invalid_number', 'hard'],
    ['invalid_account', 'invalid_number', 'hard'],
    ['do_not_honor', 'do_not_honor', 'hard'],
    ['restricted_card', 'card_declined', 'hard'],
    ['generic_decline', 'card_declined', 'hard'],
    ['insufficient_funds', 'insufficient_funds', 'hard'],
    ['incorrect_cvc', 'incorrect_cvc', 'hard'],
    ['processing_error', 'processing_error', 'soft'],
    ['issuer_not_available', 'issuer_unavailable', 'soft'],
    ['try_again_later', 'try_again_later', 'soft'],
    ['rate_limit', 'try_again_later', 'soft'],
    ['approve_with_id', 'try_again_later', 'soft'],
    ['reenter_transaction', 'try_again_later', 'soft'],
    ['authentication_required', 'authentication_required', 'soft'],
    ['payment_intent_authentication_failure', 'authentication_failed', 'hard'],
    ['authentication_error', 'invalid_credentials', 'soft'],
    ['resource_missing', 'charge_not_found', 'hard'],
    ['payment_intent_unexpected_state', 'invalid_state', 'hard'],
    ['a_code_stripe_adds_tomorrow', 'a_code_stripe_adds_tomorrow', 'soft'],
  ];
  it.each(cases)('%s → %s (%s)', (stripeCode, ours, decision) => {
    expect(stripeDecline(stripeCode)).toMatchObject({ code: ours, decision });
  });

  it('maps every Stripe code to a snake_case code of ours', () => {
    for (const [code, decline] of Object.entries(STRIPE_DECLINE_CODES)) {
      expect(decline.code, code).toMatch(/^[a-z][a-z_]*$/);
      expect(['hard', 'soft'], code).toContain(decline.decision);
    }
  });
});

describe('the stripe catalogue entry', () => {
  const compiled = compileCredentialsSchema(STRIPE_CATALOGUE.credentialsSchema);
  if (!compiled.ok) throw new Error(compiled.error);
  const errors = (value: unknown) => credentialsErrors(compiled.validate, value, 'body/credentials');

  it('requires secret_key (sk_test_ or sk_live_) and webhook_secret', () => {
    expect(errors({ secret_key: 'sk_test_abc123', webhook_secret: 'whsec_1' })).toEqual([]);
    expect(errors({ secret_key: 'sk_live_abc123', webhook_secret: 'whsec_1' })).toEqual([]);
    expect(errors({ secret_key: 'sk_test_abc123' }).map((e) => e.path)).toEqual(['body/credentials/webhook_secret']);
    expect(errors({ secret_key: 'pk_test_abc123', webhook_secret: 'w' }).map((e) => e.path)).toEqual(['body/credentials/secret_key']);
  });

  it('checks config.api_base: scheme, host and port; https in live; http on loopback in sandbox', () => {
    expect(stripeConfigErrors({}, false, 'body/config')).toEqual([]);
    expect(stripeConfigErrors({ api_base: 'https://api.stripe.com' }, false, 'body/config')).toEqual([]);
    expect(stripeConfigErrors({ api_base: 'http://127.0.0.1:12111' }, true, 'body/config')).toEqual([]);
    for (const [base, sandbox] of [
      ['http://127.0.0.1:12111', false], ['http://stripe.example.com', true], ['https://api.stripe.com/v1', false], ['ftp://x', true], ['nope', true], [42, true],
    ] as const) {
      expect(stripeConfigErrors({ api_base: base }, sandbox, 'body/config').map((e) => e.path), String(base)).toEqual(['body/config/api_base']);
    }
    expect(stripeApiBaseParts(undefined)).toEqual({ protocol: 'https', host: 'api.stripe.com', port: 443 });
    expect(stripeApiBaseParts('http://127.0.0.1:4555')).toEqual({ protocol: 'http', host: '127.0.0.1', port: 4555 });
  });
});

describe('the stripe adapter against the double', () => {
  let double: StripeDouble;
  const credentials = { secret_key: 'sk_test_unit_0001', webhook_secret: 'whsec_unit' };
  const card = (number: string) => ({ number, exp_month: 12, exp_year: new Date().getFullYear() + 2, cvc: '123', holder_name: 'Ada' });
  let n = 0;
  const key = () => `ch_unit_${Date.now()}_${(n += 1)}`;
  beforeAll(async () => { double = await startStripeDouble(); });
  afterAll(async () => { await double?.close(); });
  const adapter = () => createStripeAdapter({ apiBase: double.url, timeoutMs: 1000 });

  it('parses Stripe\'s form encoding', () => {
    expect(parseForm('a[b][c]=1&x[0]=y&x[1]=z&m=n')).toEqual({ a: { b: { c: '1' } }, x: ['y', 'z'], m: 'n' });
  });

  it('authorizes with automatic capture: one intent, captured, metadata carries the charge id', async () => {
    const k = key();
    const out = await adapter().authorize({ credentials, idempotencyKey: k, amount: 1500, currency: 'USD', installments: 1, card: card('4242424242424242'), capture: true });
    expect(out.outcome).toMatchObject({ kind: 'approved', authorizedAmount: 1500, capturedAmount: 1500 });
    expect(out.exchange).toMatchObject({ operation: 'authorize', idempotency_key: k, outcome: 'approved', response: { status: 200 } });
    expect(JSON.stringify(out.exchange)).not.toContain('4242424242424242');
    expect(JSON.stringify(out.exchange)).not.toContain(credentials.secret_key);
    expect(double.state().creates_by_key[k]).toBe(1);
    const intent = double.state().intents.find((pi) => pi.metadata.switchboard_charge_id === k);
    expect(intent).toMatchObject({ object: 'payment_intent', status: 'succeeded', capture_method: 'automatic', currency: 'usd' });
  });

  it('manual capture, partial capture, refunds, void', async () => {
    const a = adapter();
    const k = key();
    const auth = await a.authorize({ credentials, idempotencyKey: k, amount: 2000, currency: 'USD', installments: 1, card: card('4242424242424242') });
    expect(auth.outcome).toMatchObject({ kind: 'approved', authorizedAmount: 2000, capturedAmount: 0 });
    const ref = (auth.outcome as { providerReference: string }).providerReference;
    const cap = await a.capture({ currency: 'usd', credentials, idempotencyKey: `${k}:capture`, providerReference: ref, amount: 1200 });
    expect(cap.outcome).toMatchObject({ kind: 'approved', capturedAmount: 1200 });
    const r1 = await a.refund({ currency: 'usd', credentials, idempotencyKey: `re_${k}_1`, providerReference: ref, amount: 500 });
    const r2 = await a.refund({ currency: 'usd', credentials, idempotencyKey: `re_${k}_2`, providerReference: ref, amount: 300 });
    expect(r1.outcome).toMatchObject({ kind: 'approved', refundedAmount: 500 });
    expect(r2.outcome).toMatchObject({ kind: 'approved', refundedAmount: 800 });
    const tooMuch = await a.refund({ currency: 'usd', credentials, idempotencyKey: `re_${k}_3`, providerReference: ref, amount: 5000 });
    expect(tooMuch.outcome.kind).toBe('soft_decline');
    const found = await a.getStatus({ credentials, idempotencyKey: `re_${k}_2`, providerReference: ref });
    expect(found).toMatchObject({ lookup: 'found', operation: 'refund', outcome: { kind: 'approved', refundReference: expect.stringMatching(/^re_/) } });

    const k2 = key();
    const auth2 = await a.authorize({ credentials, idempotencyKey: k2, amount: 900, currency: 'EUR', installments: 1, card: card('5555555555554444') });
    const voided = await a.void({ credentials, idempotencyKey: `${k2}:void`, providerReference: (auth2.outcome as { providerReference: string }).providerReference });
    expect(voided.outcome).toMatchObject({ kind: 'approved', capturedAmount: 0 });
  });

  it.each([
    ['4000000000000002', 'hard_decline', 'card_declined', 'generic_decline'],
    ['4000000000009995', 'hard_decline', 'insufficient_funds', 'insufficient_funds'],
    ['4000000000009987', 'hard_decline', 'lost_card', 'lost_card'],
    ['4000000000009979', 'hard_decline', 'stolen_card', 'stolen_card'],
    ['4000000000000069', 'hard_decline', 'expired_card', 'expired_card'],
    ['4000000000000119', 'soft_decline', 'processing_error', 'processing_error'],
    ['4000002500003155', 'soft_decline', 'authentication_required', 'authentication_required'],
  ])('card %s → %s %s (Stripe: %s)', async (number, kind, code, stripeCode) => {
    const out = await adapter().authorize({ credentials, idempotencyKey: key(), amount: 1000, currency: 'USD', installments: 1, card: card(number), capture: true });
    expect(out.outcome).toMatchObject({ kind, declineCode: code });
    if (stripeCode) expect(out.exchange).toMatchObject({ response: { status: 402 }, provider_code: stripeCode });
  });

  it('replays under the same key; the key with other params is an unknown outcome, to reconcile', async () => {
    const a = adapter();
    const k = key();
    const first = await a.authorize({ credentials, idempotencyKey: k, amount: 1000, currency: 'USD', installments: 1, card: card('4242424242424242'), capture: true });
    const again = await a.authorize({ credentials, idempotencyKey: k, amount: 1000, currency: 'USD', installments: 1, card: card('4242424242424242'), capture: true });
    expect((again.outcome as { providerReference: string }).providerReference).toBe((first.outcome as { providerReference: string }).providerReference);
    const other = await a.authorize({ credentials, idempotencyKey: k, amount: 1001, currency: 'USD', installments: 1, card: card('4242424242424242'), capture: true });
    expect(other.outcome).toMatchObject({ kind: 'unknown' });
    expect(double.state().creates_by_key[k]).toBe(1);
  });

  it('a 5xx is unknown, stored under the key, and the search finds what happened', async () => {
    const a = adapter();
    const k = key();
    double.behave({ fail_with_500: true });
    const out = await a.authorize({ credentials, idempotencyKey: k, amount: 1000, currency: 'USD', installments: 1, card: card('4242424242424242'), capture: true });
    expect(out.outcome.kind).toBe('unknown');
    const replay = await a.authorize({ credentials, idempotencyKey: k, amount: 1000, currency: 'USD', installments: 1, card: card('4242424242424242'), capture: true });
    expect(replay.outcome.kind).toBe('unknown');
    const status = await a.getStatus({ credentials, idempotencyKey: k });
    expect(status).toMatchObject({ lookup: 'found', operation: 'authorize', outcome: { kind: 'approved', capturedAmount: 1000 } });
    expect(double.state().creates_by_key[k]).toBe(1);
    expect(await a.getStatus({ credentials, idempotencyKey: key() })).toMatchObject({ lookup: 'not_found' });
  });

  it('a capture answered 5xx is confirmed from the intent itself', async () => {
    const a = adapter();
    const k = key();
    const auth = await a.authorize({ credentials, idempotencyKey: k, amount: 1000, currency: 'USD', installments: 1, card: card('4242424242424242') });
    const ref = (auth.outcome as { providerReference: string }).providerReference;
    double.behave({ fail_with_500: true, match: `POST /v1/payment_intents/${ref}/capture` });
    const cap = await a.capture({ currency: 'usd', credentials, idempotencyKey: `${k}:capture`, providerReference: ref });
    expect(cap.outcome).toMatchObject({ kind: 'approved', capturedAmount: 1000 });
    expect(cap.exchange).toMatchObject({ operation: 'get_status', request: { method: 'GET', path: `/v1/payment_intents/${ref}` } });
  });

  it('a timeout after sending and a dropped connection are unknown; a refused connection is a transport error', async () => {
    const a = adapter();
    double.behave({ latency_ms: 1500 });
    expect((await a.authorize({ credentials, idempotencyKey: key(), amount: 1000, currency: 'USD', installments: 1, card: card('4242424242424242') })).outcome.kind).toBe('unknown');
    // The library retries once, by itself, under the same key, when a connection is reset (a stale
    // keep-alive socket): the replay answers the stored result, so one drop is harmless and two are unknown.
    const once = key();
    double.behave({ drop_connection: true });
    expect((await a.authorize({ credentials, idempotencyKey: once, amount: 1000, currency: 'USD', installments: 1, card: card('4242424242424242') })).outcome.kind).toBe('approved');
    expect(double.state().creates_by_key[once]).toBe(1);
    double.behave({ drop_connection: true, times: 2 });
    expect((await a.authorize({ credentials, idempotencyKey: key(), amount: 1000, currency: 'USD', installments: 1, card: card('4242424242424242') })).outcome.kind).toBe('unknown');
    const closed = createStripeAdapter({ apiBase: 'http://127.0.0.1:1', timeoutMs: 1000 });
    expect((await closed.authorize({ credentials, idempotencyKey: key(), amount: 1000, currency: 'USD', installments: 1, card: card('4242424242424242') })).outcome.kind).toBe('transport_error');
  });

  it('a key the double refuses is a soft decline (invalid_credentials)', async () => {
    const out = await adapter().authorize({ credentials: { ...credentials, secret_key: 'sk_live_nope' }, idempotencyKey: key(), amount: 1000, currency: 'USD', installments: 1, card: card('4242424242424242') });
    expect(out.outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'invalid_credentials' });
  });
});
