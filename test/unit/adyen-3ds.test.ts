import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authenticationOf, createAdyenAdapter, parseAdyenWebhook, paymentOutcome } from '../../activities/providers/adyen';
import type { CompleteAuthenticationInput } from '../../activities/providers/types';
import type { AuthorizeInput, ProcessorEvent } from '../../activities/providers/types';
import { AdyenDouble, notificationBody, signItem, startAdyenDouble } from '../doubles/adyen/server';
import { issueAuthentication, passChallenge, requiresActionOf } from '../doubles/three-d-secure';

// 3-D Secure at Adyen without Postgres or Temporal: the adapter's authorize and completeAuthentication
// against the double, whose challenge page a test drives as the shopper's browser would (an HTTP POST),
// and the AUTHORISATION notifications that follow.

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const credentials = { api_key: 'AQE_unit_3ds_key', merchant_account: 'SwitchboardECOM', hmac_key: HMAC_KEY };
const RETURN_URL = 'https://shop.example/sb/return/ch_1?lang=en';
const card = (number = '4111111111111111', holder = 'Ada Lovelace') => ({ number, exp_month: 3, exp_year: new Date().getFullYear() + 2, cvc: '737', holder_name: holder });
let n = 0;
const key = () => `ch_3ds${Date.now()}${(n += 1)}`;

let double: AdyenDouble;
// Notifications stay queued (no webhook): the tests read them and verify them as the API would.
beforeAll(async () => { double = await startAdyenDouble(); });
afterAll(async () => { await double?.close(); });
const adapter = () => createAdyenAdapter({ apiBase: double.url, environment: 'sandbox', timeoutMs: 2000 });

function authorize(extra: Partial<AuthorizeInput> & { number?: string; holder?: string } = {}) {
  const { number, holder, ...rest } = extra;
  return adapter().authorize({
    credentials, idempotencyKey: key(), amount: 2500, currency: 'EUR', installments: 1, card: card(number, holder), returnUrl: RETURN_URL, ...rest,
  });
}

const complete = (k: string, input: Partial<CompleteAuthenticationInput> & { providerReference: string }) =>
  adapter().completeAuthentication({ credentials, idempotencyKey: `${k}:authenticate`, reference: k, returnParams: {}, ...input });

/** The AUTHORISATION (and CAPTURE) notifications of a payment, as parseWebhook reports them. */
function notified(psp: string): ProcessorEvent[] {
  const items = double.pendingNotifications().filter((item) => item.pspReference === psp || item.originalReference === psp);
  if (!items.length) return [];
  const verdict = parseAdyenWebhook({ rawBody: JSON.stringify(notificationBody(items.map((item) => signItem(item, HMAC_KEY)))), headers: {}, credentials });
  if (!verdict.verified) throw new Error(verdict.error);
  return verdict.events;
}

const paymentOf = (psp: string) => double.state().payments.find((p) => p.pspReference === psp)!;

describe('adyen 3-D Secure: the redirect', () => {
  it('REDIRECT_SHOPPER answers RedirectShopper with a GET redirect: requires_action with the challenge page', async () => {
    const out = await authorize({ holder: 'REDIRECT_SHOPPER' });
    const { providerReference, redirectUrl } = requiresActionOf(out.outcome);
    expect(providerReference).toMatch(/^[A-Z0-9]{16}$/);
    expect(redirectUrl).toBe(`${double.url}/__double/3ds/${providerReference}`);
    expect(out.exchange).toMatchObject({
      operation: 'authorize', outcome: 'requires_action', provider_code: 'RedirectShopper', request: { body: { returnUrl: RETURN_URL } },
      response: { status: 200, body: { resultCode: 'RedirectShopper', pspReference: providerReference, action: { type: 'redirect', method: 'GET', url: redirectUrl } } },
    });
    expect(notified(providerReference)).toEqual([]);

    const page = await fetch(redirectUrl);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`<form method="post" action="/__double/3ds/${providerReference}">`);
    expect(html).toContain('id="complete" name="action" value="approve"');
    expect(html).toContain('id="fail" name="action" value="fail"');
  });

  it('approved: back with a redirectResult, /payments/details authorises, and the 3-D Secure result is passed on', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize({ holder: 'REDIRECT_SHOPPER', idempotencyKey: k })).outcome);
    const { location, returnParams } = await passChallenge(redirectUrl, 'approve');
    expect(location).toBe(`${RETURN_URL}&redirectResult=${encodeURIComponent(paymentOf(providerReference).redirectResult)}`);
    expect(Object.keys(returnParams)).toEqual(['lang', 'redirectResult']);

    const done = await complete(k, { providerReference, returnParams, amount: 2500, capture: false });
    expect(done.outcome).toEqual({ kind: 'approved', providerReference, authorizedAmount: 2500, capturedAmount: 0, refundedAmount: 0 });
    expect(done.authentication).toEqual({ version: '2.2.0', eci: '05', cavv: expect.stringMatching(/^[A-Za-z0-9+/]{27}=$/), dsTransactionId: expect.any(String) });
    expect(done.exchange).toMatchObject({
      operation: 'authenticate', idempotency_key: expect.stringMatching(new RegExp(`^${k}:authenticate:[0-9a-f]{16}$`)), outcome: 'approved',
      request: { method: 'POST', path: '/v71/payments/details', body: { details: { redirectResult: '[given]' } } },
      response: { status: 200, body: { resultCode: 'Authorised', additionalData: { eci: '05', threeDSVersion: '2.2.0' } } },
    });
    const stored = JSON.stringify(done.exchange);
    expect(stored).not.toContain(done.authentication!.cavv);
    expect(stored).not.toContain(returnParams.redirectResult);

    // The AUTHORISATION notification carries the same result; the stored payload keeps no CAVV.
    const [authorisation, capture] = notified(providerReference);
    expect(capture).toBeUndefined();
    expect(authorisation).toMatchObject({ type: 'AUTHORISATION', operation: 'authorize', chargeId: k, outcome: { kind: 'approved' }, authentication: done.authentication });
    expect(JSON.stringify(authorisation.payload)).not.toContain(done.authentication!.cavv);
  });

  it('approved when asked to capture at once: Adyen captured it, so the approval is a captured one', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize({ number: '4000002760003184', capture: true, idempotencyKey: k })).outcome);
    const { returnParams } = await passChallenge(redirectUrl, 'approve');
    expect((await complete(k, { providerReference, returnParams, amount: 2500, capture: true })).outcome)
      .toMatchObject({ kind: 'approved', authorizedAmount: 2500, capturedAmount: 2500 });
    expect(notified(providerReference).map((e) => [e.type, e.operation, e.outcome?.kind])).toEqual([['AUTHORISATION', 'authorize', 'approved'], ['CAPTURE', 'capture', 'approved']]);
  });

  it('approved, without the authorize\'s amount (Adyen\'s details answer has none): unknown, the notification settles it', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize({ holder: 'REDIRECT_SHOPPER', idempotencyKey: k })).outcome);
    const { returnParams } = await passChallenge(redirectUrl, 'approve');
    const done = await complete(k, { providerReference, returnParams });
    expect(done.outcome).toMatchObject({ kind: 'unknown', error: expect.stringContaining('AUTHORISATION notification') });
    expect(done.authentication).toBeDefined();
  });

  it('failed: refused 11 3D Not Authenticated, a hard authentication_failed; a second POST changes nothing', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize({ number: '4000002760003184', idempotencyKey: k })).outcome);
    const { location, returnParams } = await passChallenge(redirectUrl, 'fail');
    expect(await passChallenge(redirectUrl, 'approve')).toMatchObject({ location });
    expect(paymentOf(providerReference)).toMatchObject({ resultCode: 'Refused', refusalReasonCode: '11', authorised: false });

    const done = await complete(k, { providerReference, returnParams, amount: 2500 });
    expect(done.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'authentication_failed', message: '3D Not Authenticated' });
    expect(done.exchange).toMatchObject({ decline_code: 'authentication_failed', provider_code: '11' });
    expect(done.authentication).toBeUndefined();
    const events = notified(providerReference);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'AUTHORISATION', eventId: `AUTHORISATION:${providerReference}:false`, operation: 'authorize', chargeId: k,
      outcome: { kind: 'hard_decline', declineCode: 'authentication_failed' }, providerCode: '11',
    });
  });

  it('4000008400001629: authenticated, then refused by the issuer (2, hard)', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize({ number: '4000008400001629', idempotencyKey: k })).outcome);
    const { returnParams } = await passChallenge(redirectUrl, 'approve');
    const done = await complete(k, { providerReference, returnParams, amount: 2500 });
    expect(done.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'card_declined' });
    expect(done.exchange.provider_code).toBe('2');
    expect(notified(providerReference)).toMatchObject([{ type: 'AUTHORISATION', outcome: { kind: 'hard_decline', declineCode: 'card_declined' } }]);
  });

  it('without a redirectResult nothing is asked: still requires_action, with the page the engine gives', async () => {
    const k = key();
    const first = requiresActionOf((await authorize({ holder: 'REDIRECT_SHOPPER', idempotencyKey: k })).outcome);
    const before = double.state().requests.length;
    const done = await complete(k, { providerReference: first.providerReference, redirectUrl: first.redirectUrl, returnParams: { lang: 'en' } });
    expect(done.outcome).toEqual({ kind: 'requires_action', ...first });
    expect(done.exchange).toMatchObject({ operation: 'authenticate', outcome: 'requires_action', request: { method: 'NONE' } });
    expect(double.state().requests).toHaveLength(before);
  });

  it('a redirectResult from before the challenge ended: /payments/details answers RedirectShopper, still requires_action', async () => {
    const k = key();
    const first = requiresActionOf((await authorize({ holder: 'REDIRECT_SHOPPER', idempotencyKey: k })).outcome);
    const early = { redirectResult: paymentOf(first.providerReference).redirectResult };
    const done = await complete(k, { providerReference: first.providerReference, redirectUrl: first.redirectUrl, returnParams: early });
    expect(done.outcome).toEqual({ kind: 'requires_action', ...first });
    expect(done.exchange).toMatchObject({ provider_code: 'RedirectShopper', response: { body: { resultCode: 'RedirectShopper' } } });
  });

  it('/payments/details is idempotent: the same key answers the first answer again', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize({ holder: 'REDIRECT_SHOPPER', idempotencyKey: k })).outcome);
    const { returnParams } = await passChallenge(redirectUrl, 'approve');
    const first = await complete(k, { providerReference, returnParams, amount: 2500 });
    const again = await complete(k, { providerReference, returnParams, amount: 2500 });
    expect(again.outcome).toEqual(first.outcome);
    expect(double.state().requests.filter((r) => r.idempotency_key?.startsWith(`${k}:authenticate:`)).map((r) => r.replayed ?? false)).toEqual([false, true]);
  });

  it('a redirectResult Adyen does not know is refused (422): no verdict, the payment still waits', async () => {
    const done = await complete(key(), { providerReference: 'ABCDEFGHIJKLMNOP', returnParams: { redirectResult: 'forged' }, amount: 100 });
    expect(done.outcome).toMatchObject({ kind: 'requires_action', providerReference: 'ABCDEFGHIJKLMNOP' });
    expect(done.exchange).toMatchObject({ response: { status: 422 }, provider_code: '702' });
  });

  it('a forged return first does not take the key of the shopper\'s real return: it still authorizes', async () => {
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize({ holder: 'REDIRECT_SHOPPER', idempotencyKey: k })).outcome);
    const forged = await complete(k, { providerReference, returnParams: { redirectResult: 'forged' }, amount: 2500 });
    expect(forged.outcome.kind).toBe('requires_action');
    const { returnParams } = await passChallenge(redirectUrl, 'approve');
    expect((await complete(k, { providerReference, returnParams, amount: 2500 })).outcome.kind).toBe('approved');
  });

  it('another payment\'s redirectResult brought to this charge settles nothing here: still waiting, and its own return authorizes it', async () => {
    const a = key();
    const b = key();
    const first = requiresActionOf((await authorize({ holder: 'REDIRECT_SHOPPER', idempotencyKey: a })).outcome);
    const second = requiresActionOf((await authorize({ holder: 'REDIRECT_SHOPPER', idempotencyKey: b, amount: 990_000 })).outcome);
    const { returnParams: ofA } = await passChallenge(first.redirectUrl, 'approve');

    // B's return endpoint called with A's redirectResult: Adyen answers Authorised — for A.
    const forged = await complete(b, { providerReference: second.providerReference, returnParams: ofA, amount: 990_000 });
    expect(forged.outcome).toEqual({ kind: 'requires_action', providerReference: second.providerReference, redirectUrl: '' });
    expect(forged.exchange).toMatchObject({
      outcome: 'requires_action', error: expect.stringContaining(`pspReference ${first.providerReference}, merchantReference ${a}`),
      response: { status: 200, body: { resultCode: 'Authorised', pspReference: first.providerReference } },
    });

    // Both payments go on as if nothing had happened: each one's own return settles it.
    const { returnParams: ofB } = await passChallenge(second.redirectUrl, 'approve');
    expect((await complete(b, { providerReference: second.providerReference, returnParams: ofB, amount: 990_000 })).outcome)
      .toMatchObject({ kind: 'approved', providerReference: second.providerReference, authorizedAmount: 990_000 });
    expect((await complete(a, { providerReference: first.providerReference, returnParams: ofA, amount: 2500 })).outcome)
      .toMatchObject({ kind: 'approved', providerReference: first.providerReference, authorizedAmount: 2500 });
  });

  it('the page: 404 for a payment with no challenge, 400 for a form without approve or fail', async () => {
    expect((await fetch(`${double.url}/__double/3ds/NOPE`)).status).toBe(404);
    const { redirectUrl } = requiresActionOf((await authorize({ holder: 'REDIRECT_SHOPPER' })).outcome);
    expect((await fetch(redirectUrl, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'action=' })).status).toBe(400);
  });

  it('the double checks /payments/details against the contract', async () => {
    const res = await fetch(`${double.url}/v71/payments/details`, {
      method: 'POST', headers: { 'x-api-key': credentials.api_key, 'content-type': 'application/json' }, body: JSON.stringify({ details: { redirectResult: 'x' }, merchantAccount: 'M' }),
    });
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ errorCode: '702', message: expect.stringContaining('merchantAccount') });
  });
});

describe('adyen 3-D Secure: asking for it, passing it on, and what is not supported', () => {
  it('4000000000003055 authorises at once, or redirects when attemptAuthentication is always', async () => {
    expect((await authorize({ number: '4000000000003055' })).outcome).toMatchObject({ kind: 'approved' });
    const asked = await authorize({ number: '4000000000003055', threeDSecure: { requested: true } });
    expect(asked.outcome.kind).toBe('requires_action');
    expect(asked.exchange.request.body).toMatchObject({ authenticationData: { attemptAuthentication: 'always' } });
  });

  it('4000002500003155, the step-up: refused 38 (soft authentication_required), then asked for, a challenge that authorises', async () => {
    const first = await authorize({ number: '4000002500003155' });
    expect(first.outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'authentication_required' });
    expect(first.exchange.provider_code).toBe('38');
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize({ number: '4000002500003155', threeDSecure: { requested: true }, idempotencyKey: k })).outcome);
    const { returnParams } = await passChallenge(redirectUrl, 'approve');
    expect((await complete(k, { providerReference, returnParams, amount: 2500 })).outcome).toMatchObject({ kind: 'approved' });
  });

  it('an authentication a double issued goes as mpiData: no challenge, and no CAVV in the exchange', async () => {
    // The result of a challenge at this double, passed on to another payment (as to another provider).
    const k = key();
    const { providerReference, redirectUrl } = requiresActionOf((await authorize({ holder: 'REDIRECT_SHOPPER', idempotencyKey: k })).outcome);
    const { returnParams } = await passChallenge(redirectUrl, 'approve');
    const { authentication } = await complete(k, { providerReference, returnParams, amount: 2500 });
    for (const external of [authentication!, issueAuthentication('visa')]) {
      const out = await authorize({ number: '4000002760003184', threeDSecure: { external, requested: true } });
      expect(out.outcome).toMatchObject({ kind: 'approved' });
      expect(out.exchange.request.body).toEqual(expect.objectContaining({
        mpiData: { eci: external.eci, dsTransID: external.dsTransactionId, threeDSVersion: external.version, authenticationResponse: 'Y', directoryResponse: 'Y' },
      }));
      expect(out.exchange.request.body).not.toHaveProperty('authenticationData');
      expect(JSON.stringify(out.exchange)).not.toContain(external.cavv);
    }
    expect((await authorize({ holder: 'REDIRECT_SHOPPER', threeDSecure: { external: issueAuthentication() } })).outcome.kind).toBe('approved');
  });

  it('mpiData a double did not issue authenticates nothing; 4000008400001629 with a good one is refused', async () => {
    const forged = { ...issueAuthentication(), cavv: Buffer.alloc(20, 9).toString('base64') };
    expect((await authorize({ number: '4000002760003184', threeDSecure: { external: forged } })).outcome.kind).toBe('requires_action');
    expect((await authorize({ number: '4000008400001629', threeDSecure: { external: issueAuthentication() } })).outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'card_declined' });
  });

  it('native 3-D Secure 2 (IdentifyShopper, ChallengeShopper) and a POST redirect are soft authentication_required', async () => {
    expect((await authorize({ holder: 'CHALLENGE_SHOPPER' })).outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'authentication_required' });
    const post = paymentOutcome(
      { resultCode: 'RedirectShopper', pspReference: 'PSP', action: { type: 'redirect', method: 'POST', url: 'https://acs.example/challenge', data: { PaReq: 'x' } } },
      { amount: 100, captured: false, reference: 'ch_1' },
    );
    expect(post.outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'authentication_required', message: expect.stringContaining('POST redirect') });
    const get = paymentOutcome({ resultCode: 'RedirectShopper', action: { type: 'redirect', url: 'https://acs.example/c' } }, { captured: false, reference: 'ch_1' });
    expect(get.outcome).toEqual({ kind: 'requires_action', providerReference: 'ch_1', redirectUrl: 'https://acs.example/c' });
  });

  it('reads the 3-D Secure result only when additionalData has all of it', () => {
    expect(authenticationOf({ cavv: 'AAAA', eci: '05', threeDSVersion: '2.2.0', dsTransID: 'ds-1', cardSummary: '1111' }))
      .toEqual({ cavv: 'AAAA', eci: '05', version: '2.2.0', dsTransactionId: 'ds-1' });
    expect(authenticationOf({ eci: '05', threeDSVersion: '2.2.0', dsTransID: 'ds-1' })).toBeUndefined();
    expect(authenticationOf(undefined)).toBeUndefined();
  });
});
