import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStripeAdapter, DEFAULT_RETURN_URL, intentOutcome, parseStripeWebhook } from '../../activities/providers/stripe';
import type { AuthorizeInput } from '../../activities/providers/types';
import { signStripePayload, startStripeDouble, StripeDouble, StripeEvent } from '../doubles/stripe/server';
import { issueAuthentication, passChallenge, requiresActionOf, submitChallenge } from '../doubles/three-d-secure';

// 3-D Secure at Stripe without Postgres or Temporal: the adapter's authorize and completeAuthentication
// against the double, whose challenge page a test drives as the customer's browser would (an HTTP POST).

const credentials = { secret_key: 'sk_test_unit_3ds', webhook_secret: 'whsec_unit_3ds' };
const RETURN_URL = 'https://shop.example/sb/return/ch_1?lang=en';
const card = (number: string) => ({ number, exp_month: 12, exp_year: new Date().getFullYear() + 2, cvc: '123', holder_name: 'Ada' });
let n = 0;
const key = () => `ch_3ds_${Date.now()}_${(n += 1)}`;

let double: StripeDouble;
beforeAll(async () => { double = await startStripeDouble(); });
afterAll(async () => { await double?.close(); });
const adapter = () => createStripeAdapter({ apiBase: double.url, timeoutMs: 2000 });

function authorize(number: string, extra: Partial<AuthorizeInput> = {}) {
  return adapter().authorize({
    credentials, idempotencyKey: extra.idempotencyKey ?? key(), amount: 2500, currency: 'EUR', installments: 1, card: card(number), returnUrl: RETURN_URL, ...extra,
  });
}

const complete = (k: string, providerReference: string, returnParams: Record<string, string> = {}) =>
  adapter().completeAuthentication!({ credentials, idempotencyKey: `${k}:authenticate`, reference: k, providerReference, returnParams });

const eventsOf = (intentId: string) => double.state().events.filter((e) => e.data.object.id === intentId || e.data.object.payment_intent === intentId);
const intentOf = (intentId: string) => double.state().intents.find((pi) => pi.id === intentId);

describe('stripe 3-D Secure: the challenge', () => {
  it('4000002760003184 asks for a challenge: requires_action with the challenge page, return_url sent', async () => {
    const k = key();
    const out = await authorize('4000002760003184', { idempotencyKey: k });
    const { providerReference, redirectUrl } = requiresActionOf(out.outcome);
    expect(providerReference).toMatch(/^pi_/);
    expect(redirectUrl).toBe(`${double.url}/__double/3ds/${providerReference}`);
    expect(out.exchange).toMatchObject({ operation: 'authorize', outcome: 'requires_action', request: { body: { return_url: RETURN_URL } }, response: { status: 200 } });
    expect(intentOf(providerReference)).toMatchObject({
      status: 'requires_action', next_action: { type: 'redirect_to_url', redirect_to_url: { url: redirectUrl, return_url: RETURN_URL } },
    });
    expect(eventsOf(providerReference).map((e) => e.type)).toEqual(['payment_intent.created', 'payment_intent.requires_action']);

    const page = await fetch(redirectUrl);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toMatch(/<form method="post" action="\/__double\/3ds\/pi_[^"]+">/);
    expect(html).toContain('id="complete" name="action" value="approve"');
    expect(html).toContain('id="fail" name="action" value="fail"');
  });

  it('approved, the customer comes back to the return URL and completeAuthentication reports the authorization', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize('4000002760003184', { idempotencyKey: k })).outcome);
    const { location, returnParams } = await passChallenge(redirectUrl, 'approve');
    // The return URL had a query: Stripe's parameters follow with &.
    expect(location.startsWith(`${RETURN_URL}&payment_intent=${providerReference}&`)).toBe(true);
    expect(returnParams).toEqual({
      lang: 'en', payment_intent: providerReference, payment_intent_client_secret: intentOf(providerReference).client_secret, redirect_status: 'succeeded',
    });
    expect(eventsOf(providerReference).map((e) => e.type).slice(2)).toEqual(['charge.succeeded', 'payment_intent.amount_capturable_updated']);

    const done = await complete(k, providerReference, returnParams);
    expect(done.outcome).toEqual({ kind: 'approved', providerReference, authorizedAmount: 2500, capturedAmount: 0, refundedAmount: 0 });
    expect(done.exchange).toMatchObject({
      operation: 'authenticate', idempotency_key: `${k}:authenticate`, outcome: 'approved',
      request: { method: 'GET', path: `/v1/payment_intents/${providerReference}` }, response: { status: 200 },
    });
    // Stripe shows no cryptogram: nothing to pass on to another provider.
    expect(done.authentication).toBeUndefined();
    expect(JSON.stringify(done.exchange)).not.toContain('_secret_');
    const charge = (done.exchange.response?.body as { latest_charge: { payment_method_details: { card: Record<string, unknown> } } }).latest_charge;
    expect(charge.payment_method_details.card.three_d_secure).toMatchObject({ result: 'authenticated', authentication_flow: 'challenge', version: '2.2.0' });
  });

  it('approved with capture at once: succeeded, captured, and a return URL without a query gets ?', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize('4000002760003184', { idempotencyKey: k, capture: true, returnUrl: 'https://shop.example/back' })).outcome);
    const { location, returnParams } = await passChallenge(redirectUrl, 'approve');
    expect(location.startsWith(`https://shop.example/back?payment_intent=${providerReference}&payment_intent_client_secret=`)).toBe(true);
    expect(location.endsWith('&redirect_status=succeeded')).toBe(true);
    expect((await complete(k, providerReference, returnParams)).outcome).toMatchObject({ kind: 'approved', authorizedAmount: 2500, capturedAmount: 2500 });
    expect(eventsOf(providerReference).map((e) => e.type).slice(2)).toEqual(['charge.succeeded', 'payment_intent.succeeded']);
  });

  it('failed, the intent needs another payment method: hard authentication_failed; a second POST changes nothing', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize('4000002760003184', { idempotencyKey: k })).outcome);
    const { location, returnParams } = await passChallenge(redirectUrl, 'fail');
    expect(returnParams.redirect_status).toBe('failed');
    expect(intentOf(providerReference)).toMatchObject({
      status: 'requires_payment_method', next_action: null, latest_charge: null, last_payment_error: { code: 'payment_intent_authentication_failure' },
    });
    const events = eventsOf(providerReference).length;
    const again = await passChallenge(redirectUrl, 'approve');
    expect(again.location).toBe(location);
    expect(eventsOf(providerReference)).toHaveLength(events);
    expect(intentOf(providerReference).status).toBe('requires_payment_method');

    const done = await complete(k, providerReference, returnParams);
    expect(done.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'authentication_failed' });
    expect(done.exchange).toMatchObject({ outcome: 'hard_decline', decline_code: 'authentication_failed', provider_code: 'payment_intent_authentication_failure' });
  });

  it('4000008400001629: authenticated, then declined by the issuer (hard card_declined)', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize('4000008400001629', { idempotencyKey: k })).outcome);
    const { returnParams } = await passChallenge(redirectUrl, 'approve');
    expect(returnParams.redirect_status).toBe('failed');
    const done = await complete(k, providerReference, returnParams);
    expect(done.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'card_declined' });
    expect(done.exchange.provider_code).toBe('generic_decline');
    expect(eventsOf(providerReference).map((e) => e.type).slice(2)).toEqual(['charge.failed', 'payment_intent.payment_failed']);
  });

  it('4000000000003220 always asks for a challenge', async () => {
    expect((await authorize('4000000000003220')).outcome.kind).toBe('requires_action');
  });

  it('completeAuthentication before the customer is done is still requires_action, with the same page', async () => {
    const k = key();
    const first = requiresActionOf((await authorize('4000002760003184', { idempotencyKey: k })).outcome);
    const done = await complete(k, first.providerReference);
    expect(done.outcome).toEqual({ kind: 'requires_action', ...first });
  });

  it('a canceled intent never got authorized; a challenge after it is refused (409)', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize('4000002760003184', { idempotencyKey: k })).outcome);
    await adapter().void({ credentials, idempotencyKey: `${k}:void`, providerReference });
    expect((await submitChallenge(redirectUrl, 'approve')).status).toBe(409);
    expect((await complete(k, providerReference)).outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'invalid_state' });
  });

  it('the page: 404 for an intent with no challenge, 400 for a form without approve or fail', async () => {
    expect((await fetch(`${double.url}/__double/3ds/pi_nope`)).status).toBe(404);
    const { redirectUrl } = requiresActionOf((await authorize('4000002760003184')).outcome);
    const bad = await fetch(redirectUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'action=maybe' });
    expect(bad.status).toBe(400);
  });

  it('without a returnUrl the adapter sends its placeholder, so Stripe still answers a redirect', async () => {
    const out = await authorize('4000002760003184', { returnUrl: undefined });
    expect(intentOf(requiresActionOf(out.outcome).providerReference).next_action.redirect_to_url.return_url).toBe(DEFAULT_RETURN_URL);
  });

  it('use_stripe_sdk (no redirect URL: Stripe.js in the browser) is a soft authentication_required', () => {
    const intent = { id: 'pi_1', object: 'payment_intent', amount: 100, status: 'requires_action', next_action: { type: 'use_stripe_sdk', use_stripe_sdk: {} } };
    expect(intentOutcome(intent as never)).toMatchObject({ kind: 'soft_decline', declineCode: 'authentication_required', message: expect.stringContaining('use_stripe_sdk') });
  });
});

describe('stripe 3-D Secure: asking for it, and passing it on', () => {
  it('4000000000003055 approves at once, or asks for a challenge when request_three_d_secure is any', async () => {
    expect((await authorize('4000000000003055')).outcome).toMatchObject({ kind: 'approved', authorizedAmount: 2500 });
    const asked = await authorize('4000000000003055', { threeDSecure: { requested: true } });
    expect(asked.outcome.kind).toBe('requires_action');
    expect(asked.exchange.request.body).toMatchObject({ payment_method_options: { card: { request_three_d_secure: 'any' } } });
    expect(intentOf(requiresActionOf(asked.outcome).providerReference).payment_method_options).toEqual({ card: { request_three_d_secure: 'any' } });
  });

  it('4000002500003155, the step-up: a soft authentication_required, then asked for, a challenge that approves', async () => {
    const first = await authorize('4000002500003155');
    expect(first.outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'authentication_required' });
    expect(first.exchange).toMatchObject({ response: { status: 402 }, provider_code: 'authentication_required' });
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize('4000002500003155', { idempotencyKey: k, threeDSecure: { requested: true } })).outcome);
    const { returnParams } = await passChallenge(redirectUrl, 'approve');
    expect((await complete(k, providerReference, returnParams)).outcome).toMatchObject({ kind: 'approved', capturedAmount: 0 });
  });

  it('an authentication a double issued goes as three_d_secure: no challenge, and no cryptogram in the exchange', async () => {
    const authentication = issueAuthentication('visa');
    const out = await authorize('4000002760003184', { threeDSecure: { external: authentication, requested: true } });
    expect(out.outcome).toMatchObject({ kind: 'approved' });
    expect(out.exchange.request.body).toMatchObject({
      error_on_requires_action: true,
      payment_method_options: { card: { three_d_secure: { electronic_commerce_indicator: '05', transaction_id: authentication.dsTransactionId, version: '2.2.0' } } },
    });
    expect(out.exchange.request.body).not.toHaveProperty('payment_method_options.card.request_three_d_secure');
    expect(JSON.stringify(out.exchange)).not.toContain(authentication.cavv);
    const intent = intentOf((out.outcome as { providerReference: string }).providerReference);
    expect(JSON.stringify(intent)).not.toContain(authentication.cavv);
  });

  it('a forged cryptogram authenticates nothing: under error_on_requires_action, a soft authentication_required', async () => {
    const forged = { ...issueAuthentication('visa'), cavv: Buffer.alloc(20, 7).toString('base64') };
    const out = await authorize('4000002760003184', { threeDSecure: { external: forged } });
    expect(out.outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'authentication_required' });
  });

  it('4000008400001629 with an imported authentication: declined by the issuer', async () => {
    const out = await authorize('4000008400001629', { threeDSecure: { external: issueAuthentication('visa') } });
    expect(out.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'card_declined' });
  });

  it('the double refuses 3-D Secure parameters Stripe would refuse', async () => {
    const post = (body: Record<string, string>) => fetch(`${double.url}/v1/payment_intents`, {
      method: 'POST', headers: { authorization: `Bearer ${credentials.secret_key}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        amount: '1000', currency: 'eur', confirm: 'true', 'payment_method_data[type]': 'card', 'payment_method_data[card][number]': '4242424242424242', ...body,
      }).toString(),
    }).then(async (res) => ({ status: res.status, error: ((await res.json()) as { error?: { code?: string; param?: string } }).error }));
    expect(await post({ 'payment_method_options[card][request_three_d_secure]': 'always' }))
      .toMatchObject({ status: 400, error: { code: 'parameter_invalid', param: 'payment_method_options[card][request_three_d_secure]' } });
    expect(await post({ 'payment_method_options[card][three_d_secure][cryptogram]': 'x', 'payment_method_options[card][three_d_secure][version]': '2.2.0' }))
      .toMatchObject({ status: 400, error: { code: 'parameter_missing', param: 'payment_method_options[card][three_d_secure][transaction_id]' } });
    expect(await post({ return_url: 'not a url' })).toMatchObject({ status: 400, error: { code: 'url_invalid', param: 'return_url' } });
    // Without a return_url, Stripe leaves the challenge to Stripe.js.
    const bare = await post({ 'payment_method_data[card][number]': '4000002760003184' });
    expect(bare.status).toBe(200);
  });
});

describe('stripe 3-D Secure: the webhooks', () => {
  const parse = (event: StripeEvent) => {
    const rawBody = JSON.stringify(event);
    const verdict = parseStripeWebhook({ rawBody, headers: { 'stripe-signature': signStripePayload(rawBody, credentials.webhook_secret) }, credentials });
    if (!verdict.verified) throw new Error(verdict.error);
    return verdict.events[0];
  };

  it('requires_action reports nothing; the end of the challenge reports the authorization', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize('4000002760003184', { idempotencyKey: k })).outcome);
    await passChallenge(redirectUrl, 'approve');
    const reported = eventsOf(providerReference).map(parse);
    expect(reported.map((e) => [e.type, e.operation, e.outcome?.kind])).toEqual([
      ['payment_intent.created', undefined, undefined],
      ['payment_intent.requires_action', undefined, undefined],
      ['charge.succeeded', undefined, undefined],
      ['payment_intent.amount_capturable_updated', 'authorize', 'approved'],
    ]);
    expect(reported[3]).toMatchObject({ chargeId: k, providerReference });
    expect(reported[3]).not.toHaveProperty('authentication');
  });

  it('a failed challenge is payment_failed with payment_intent_authentication_failure: a hard authentication_failed', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize('4000002760003184', { idempotencyKey: k, capture: true })).outcome);
    await passChallenge(redirectUrl, 'fail');
    const failed = eventsOf(providerReference).map(parse).find((e) => e.type === 'payment_intent.payment_failed');
    expect(failed).toMatchObject({
      operation: 'authorize', chargeId: k, providerReference, outcome: { kind: 'hard_decline', declineCode: 'authentication_failed' }, providerCode: 'payment_intent_authentication_failure',
    });
    const events = eventsOf(providerReference);
    expect(events[events.length - 1].request).toEqual({ id: null, idempotency_key: null });
  });
});
