import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADYEN_ERROR_CODES, ADYEN_REFUSAL_CODES, ADYEN_REFUSAL_REASONS, ADYEN_WEBHOOK_REPLY, adyenError, adyenRefusal, adyenRefusalCodeOf,
  createAdyenAdapter, parseAdyenWebhook,
} from '../../activities/providers/adyen';
import type { ProcessorEvent, ProviderOutcome, WebhookVerdict } from '../../activities/providers/types';
import { ADYEN_CATALOGUE, adyenConfigErrors, adyenLiveApiBase } from '../../lib/providers/adyen/credentials';
import { compileCredentialsSchema, credentialsErrors } from '../../lib/providers/credentials';
import { AdyenDouble, notificationBody, signItem, startAdyenDouble, TEST_HOLDER_NAMES } from '../doubles/adyen/server';
import webhooksContract from '../doubles/adyen/contract/Webhooks-v1.json';

// The adyen connector without Postgres or Temporal: its decline table, catalogue checks, the adapter
// against the local double of Adyen's Checkout API (an in-process HTTP server), and notifications.

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const credentials = { api_key: 'AQE_unit_test_key_0001', merchant_account: 'SwitchboardECOM', hmac_key: HMAC_KEY };

describe('the adyen decline table', () => {
  const cases: [string, string, 'hard' | 'soft'][] = [
    ['2', 'card_declined', 'hard'],
    ['3', 'card_declined', 'hard'],
    ['4', 'processing_error', 'soft'],
    ['5', 'card_declined', 'hard'],
    ['6', 'expired_card', 'hard'],
    ['7', 'card_declined', 'hard'],
    ['8', 'invalid_number', 'hard'],
    ['9', 'issuer_unavailable', 'soft'],
    ['10', 'card_not_supported', 'soft'],
    ['11', 'authentication_failed', 'hard'],
    ['12', 'insufficient_funds', 'hard'],
    ['14', 'fraudulent', 'hard'],
    ['15', 'processing_error', 'soft'],
    ['16', 'shopper_cancelled', 'hard'],
    ['20', 'fraudulent', 'hard'],
    ['22', 'fraudulent', 'hard'],
    ['23', 'card_declined', 'hard'],
    ['24', 'incorrect_cvc', 'hard'],
    ['25', 'card_declined', 'hard'],
    ['26', 'card_declined', 'hard'],
    ['27', 'card_declined', 'hard'],
    ['31', 'fraudulent', 'hard'],
    ['32', 'incorrect_address', 'hard'],
    ['38', 'authentication_required', 'soft'],
    ['42', 'authentication_required', 'soft'],
    ['46', 'card_declined', 'hard'],
    ['99', 'card_declined', 'soft'],
  ];
  it.each(cases)('refusalReasonCode %s → %s (%s)', (adyenCode, ours, decision) => {
    expect(adyenRefusal(adyenCode)).toMatchObject({ code: ours, decision });
  });

  it('classifies every published refusal reason, and names each by its text', () => {
    for (const [code, text] of Object.entries(ADYEN_REFUSAL_REASONS)) {
      expect(ADYEN_REFUSAL_CODES[code], `${code} ${text}`).toBeDefined();
      expect(adyenRefusalCodeOf(text), text).toBe(code);
      expect(adyenRefusalCodeOf(text.toUpperCase()), text).toBe(code);
    }
    for (const [code, decline] of [...Object.entries(ADYEN_REFUSAL_CODES), ...Object.entries(ADYEN_ERROR_CODES)]) {
      expect(decline.code, code).toMatch(/^[a-z][a-z_]*$/);
      expect(['hard', 'soft'], code).toContain(decline.decision);
    }
    expect(adyenRefusalCodeOf('Something Adyen adds tomorrow')).toBeUndefined();
  });

  it.each([
    ['000', 'invalid_credentials', 'soft'],
    ['010', 'invalid_credentials', 'soft'],
    ['901', 'invalid_credentials', 'soft'],
    ['101', 'invalid_number', 'hard'],
    ['103', 'incorrect_cvc', 'hard'],
    ['129', 'expired_card', 'hard'],
    ['702', 'invalid_request', 'soft'],
    ['138', 'currency_not_supported', 'soft'],
    ['167', 'charge_not_found', 'hard'],
    ['14_999', 'invalid_request', 'soft'],
  ])('errorCode %s → %s (%s)', (adyenCode, ours, decision) => {
    expect(adyenError(adyenCode)).toMatchObject({ code: ours, decision });
  });
});

describe('the adyen catalogue entry', () => {
  const compiled = compileCredentialsSchema(ADYEN_CATALOGUE.credentialsSchema);
  if (!compiled.ok) throw new Error(compiled.error);
  const errors = (value: unknown) => credentialsErrors(compiled.validate, value, 'body/credentials').map((e) => e.path);

  it('requires api_key, merchant_account and a hex hmac_key; live_url_prefix is optional', () => {
    expect(errors(credentials)).toEqual([]);
    expect(errors({ ...credentials, live_url_prefix: '1797a841fbb37ca7-AdyenDemo' })).toEqual([]);
    expect(errors({ merchant_account: 'M', hmac_key: HMAC_KEY })).toEqual(['body/credentials/api_key']);
    expect(errors({ api_key: 'k', hmac_key: HMAC_KEY })).toEqual(['body/credentials/merchant_account']);
    expect(errors({ api_key: 'k', merchant_account: 'M' })).toEqual(['body/credentials/hmac_key']);
    expect(errors({ ...credentials, hmac_key: 'not-hex' })).toEqual(['body/credentials/hmac_key']);
    expect(errors({ ...credentials, hmac_key: 'ABC' })).toEqual(['body/credentials/hmac_key']);
    expect(errors({ ...credentials, live_url_prefix: 'has.dots/and-slashes' })).toEqual(['body/credentials/live_url_prefix']);
    expect(errors({ ...credentials, live_url_prefix: '' })).toEqual(['body/credentials/live_url_prefix']);
    expect(errors({ ...credentials, webhook_secret: 'x' })).toEqual(['body/credentials/webhook_secret']);
  });

  it('checks config.api_base as for stripe: scheme, host and port; https in live; http on loopback in sandbox', () => {
    expect(adyenConfigErrors({}, false, 'body/config')).toEqual([]);
    expect(adyenConfigErrors({ api_base: 'https://proxy.example.com:8443' }, false, 'body/config')).toEqual([]);
    expect(adyenConfigErrors({ api_base: 'http://127.0.0.1:12111' }, true, 'body/config')).toEqual([]);
    expect(adyenConfigErrors({ api_base: 'http://localhost:12111' }, true, 'body/config')).toEqual([]);
    for (const [base, sandbox] of [
      ['http://127.0.0.1:12111', false], ['http://adyen.example.com', true], ['https://checkout-test.adyen.com/v71', false],
      ['https://checkout-test.adyen.com?x=1', true], ['https://user:pw@checkout-test.adyen.com', true], ['ftp://x', true], ['nope', true], [42, true],
    ] as const) {
      expect(adyenConfigErrors({ api_base: base }, sandbox, 'body/config').map((e) => e.path), String(base)).toEqual(['body/config/api_base']);
    }
    expect(adyenConfigErrors({ api_base: 'https://x.example.com/v71' }, false, 'body/config')[0].message).toContain('/v71/…');
  });

  it('declares no status look-up (Checkout has none by reference) and the four card networks', () => {
    expect(ADYEN_CATALOGUE.capabilities).toMatchObject({ statusLookup: false, separateCapture: true, partialCapture: true, partialRefund: true, void: true });
    expect(ADYEN_CATALOGUE.defaultMethods.map((m) => m.network)).toEqual(['VISA', 'MASTERCARD', 'AMEX', 'DISCOVER']);
    expect(ADYEN_CATALOGUE.defaultMethods[0].txn_mappings[0].strategy_identifier).toBe('adyen');
    expect(adyenLiveApiBase('1797a841fbb37ca7-AdyenDemo')).toBe('https://1797a841fbb37ca7-AdyenDemo-checkout-live.adyenpayments.com/checkout');
  });
});

// ---------------------------------------------------------------------------------------------------
// The adapter against the double

const card = (holder = 'Ada Lovelace', number = '4111111111111111') => ({ number, exp_month: 3, exp_year: new Date().getFullYear() + 2, cvc: '737', holder_name: holder });
let n = 0;
const key = () => `ch_unit${Date.now()}${(n += 1)}`;
const ref = (outcome: ProviderOutcome) => ('providerReference' in outcome ? outcome.providerReference : '');

/** A receiver of the double's notifications, verifying them as the API will (parseWebhook). */
async function startReceiver() {
  const verdicts: WebhookVerdict[] = [];
  let failures = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (failures > 0) {
        failures -= 1;
        res.writeHead(500).end('busy');
        return;
      }
      const verdict = parseAdyenWebhook({ rawBody: Buffer.concat(chunks).toString('utf8'), headers: {}, credentials });
      verdicts.push(verdict);
      if (!verdict.verified) return void res.writeHead(401).end();
      res.writeHead(verdict.reply.status, { 'content-type': verdict.reply.contentType }).end(verdict.reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/provider-webhooks/ppc_unit`,
    events: (): ProcessorEvent[] => verdicts.flatMap((v) => (v.verified ? v.events : [])),
    failNext: (count: number) => { failures = count; },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

async function until<T>(read: () => T | undefined, ms = 3_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A double and a receiver of its notifications, for the tests of one describe block. */
function doubleWithReceiver() {
  const world = {} as { double: AdyenDouble; receiver: Awaited<ReturnType<typeof startReceiver>> };
  beforeAll(async () => {
    world.double = await startAdyenDouble();
    world.receiver = await startReceiver();
  });
  afterAll(async () => {
    await world.double?.close();
    await world.receiver?.close();
  });
  return world;
}

describe('the adyen adapter against the double', () => {
  const world = doubleWithReceiver();
  beforeAll(() => world.double.setWebhook({ url: world.receiver.url, hmacKey: HMAC_KEY }));
  // Generous, so that a first call on a loaded machine is not taken for a lost answer; the timeout test sets its own.
  const adapter = (timeoutMs = 10_000) => createAdyenAdapter({ apiBase: world.double.url, environment: 'sandbox', timeoutMs });
  const authorize = (k: string, extra: { capture?: boolean; holder?: string; number?: string; amount?: number; currency?: string; timeoutMs?: number } = {}) => adapter(extra.timeoutMs).authorize({
    credentials, idempotencyKey: k, amount: extra.amount ?? 2000, currency: extra.currency ?? 'EUR', installments: 1, card: card(extra.holder, extra.number), capture: extra.capture,
  });

  it('authorizes for a later capture: approved, nothing captured, manual capture asked for', async () => {
    const k = key();
    const out = await authorize(k);
    expect(out.outcome).toMatchObject({ kind: 'approved', authorizedAmount: 2000, capturedAmount: 0, refundedAmount: 0, providerReference: expect.stringMatching(/^[A-Z0-9]{16}$/) });
    expect(out.exchange).toMatchObject({
      operation: 'authorize', idempotency_key: k, outcome: 'approved', response: { status: 200 },
      request: { method: 'POST', path: '/v71/payments', body: { reference: k, additionalData: { manualCapture: 'true' }, paymentMethod: { type: 'scheme', last4: '1111' } } },
    });
    const payment = world.double.state().payments.find((p) => p.merchantReference === k);
    expect(payment).toMatchObject({ manualCapture: true, captured: 0, merchantAccount: 'SwitchboardECOM', amount: { value: 2000, currency: 'EUR' } });
  });

  it('authorizes and captures at once (captureDelayHours 0): approved and captured, no capture call needed', async () => {
    const k = key();
    const out = await authorize(k, { capture: true, amount: 1500 });
    expect(out.outcome).toMatchObject({ kind: 'approved', authorizedAmount: 1500, capturedAmount: 1500 });
    expect(out.exchange.request.body).toMatchObject({ captureDelayHours: 0 });
    expect(out.exchange.request.body).not.toHaveProperty('additionalData');
    expect(world.double.state().requests.filter((r) => r.idempotency_key?.startsWith(k))).toHaveLength(1);
    // Adyen reports the authorization, then the capture it made by itself.
    const events = await until(() => {
      const found = world.receiver.events().filter((e) => e.providerReference === ref(out.outcome));
      return found.length >= 2 ? found : undefined;
    });
    expect(events.map((e) => [e.type, e.operation, e.chargeId])).toEqual([['AUTHORISATION', 'authorize', k], ['CAPTURE', 'capture', k]]);
    expect(events[1].outcome).toMatchObject({ kind: 'approved', capturedAmount: 1500 });
  });

  it('never lets the card, the CVC or the API key into the exchange', async () => {
    const out = await authorize(key(), { holder: 'REFUSED' });
    const stored = JSON.stringify(out.exchange);
    for (const secret of ['4111111111111111', '737', credentials.api_key, HMAC_KEY]) expect(stored).not.toContain(secret);
    expect(stored).not.toContain('Ada');
  });

  it.each([
    ['REFUSED', 'hard_decline', 'card_declined', '2'],
    ['BLOCKED_CARD', 'hard_decline', 'card_declined', '5'],
    ['EXPIRED_CARD', 'hard_decline', 'expired_card', '6'],
    ['NOT_ENOUGH_BALANCE', 'hard_decline', 'insufficient_funds', '12'],
    ['CVC_DECLINED', 'hard_decline', 'incorrect_cvc', '24'],
    ['FRAUD', 'hard_decline', 'fraudulent', '20'],
    ['ISSUER_UNAVAILABLE', 'soft_decline', 'issuer_unavailable', '9'],
    ['ACQUIRER_ERROR', 'soft_decline', 'processing_error', '4'],
    ['AUTHENTICATION_REQUIRED', 'soft_decline', 'authentication_required', '38'],
    ['ERROR', 'soft_decline', 'processing_error', '4'],
    ['CANCELLED', 'soft_decline', 'processing_error', '15'],
    ['CHALLENGE_SHOPPER', 'soft_decline', 'authentication_required', 'ChallengeShopper'],
    ['IDENTIFY_SHOPPER', 'soft_decline', 'authentication_required', 'IdentifyShopper'],
  ])('holder %s → %s %s (Adyen: %s)', async (holder, kind, code, adyenCode) => {
    const out = await authorize(key(), { holder });
    expect(out.outcome).toMatchObject({ kind, declineCode: code });
    expect(out.exchange).toMatchObject({ response: { status: 200 }, provider_code: adyenCode, decline_code: code });
  });

  it('an invalid card number is refused by the double (Invalid Card Number, hard)', async () => {
    const out = await authorize(key(), { number: '4111111111111112' });
    expect(out.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'invalid_number' });
    expect(out.exchange.provider_code).toBe('8');
  });

  it('a payment Adyen only received is unknown, and its AUTHORISATION notification settles it', async () => {
    const k = key();
    const out = await authorize(k, { holder: 'RECEIVED' });
    expect(out.outcome).toMatchObject({ kind: 'unknown', error: expect.stringContaining('Received') });
    const event = await until(() => world.receiver.events().find((e) => e.chargeId === k && e.type === 'AUTHORISATION'));
    expect(event.outcome).toMatchObject({ kind: 'approved', authorizedAmount: 2000, capturedAmount: 0 });
  });

  it('a partial capture, a void and two partial refunds are pending; their notifications complete them', async () => {
    const a = adapter();
    const k = key();
    const psp = ref((await authorize(k, { amount: 3000 })).outcome);
    const capture = await a.capture({ credentials, idempotencyKey: `${k}:capture`, providerReference: psp, amount: 2000, currency: 'EUR' });
    expect(capture.outcome).toEqual({ kind: 'pending', providerReference: psp, operationReference: expect.stringMatching(/^[A-Z0-9]{16}$/) });
    expect(capture.exchange).toMatchObject({
      operation: 'capture', outcome: 'pending', response: { status: 201 },
      request: { path: `/v71/payments/${psp}/captures`, body: { amount: { value: 2000, currency: 'EUR' }, reference: `${k}:capture` } },
    });
    const r1 = await a.refund({ credentials, idempotencyKey: `re_${k}1`, providerReference: psp, amount: 500, currency: 'EUR' });
    const r2 = await a.refund({ credentials, idempotencyKey: `re_${k}2`, providerReference: psp, amount: 700, currency: 'EUR' });
    for (const r of [r1, r2]) expect(r.outcome).toMatchObject({ kind: 'pending', providerReference: psp });
    expect((r1.outcome as { operationReference: string }).operationReference).not.toBe((r2.outcome as { operationReference: string }).operationReference);
    const mods = world.double.state().modifications.filter((m) => m.paymentPspReference === psp);
    expect(mods.map((m) => [m.type, m.amount?.value, m.reference])).toEqual([['captures', 2000, `${k}:capture`], ['refunds', 500, `re_${k}1`], ['refunds', 700, `re_${k}2`]]);

    const events = await until(() => {
      const found = world.receiver.events().filter((e) => e.providerReference === psp && e.type !== 'AUTHORISATION');
      return found.length >= 3 ? found : undefined;
    });
    expect(events.find((e) => e.type === 'CAPTURE')).toMatchObject({ operation: 'capture', chargeId: k, outcome: { kind: 'approved', capturedAmount: 2000 } });
    expect(events.filter((e) => e.type === 'REFUND').map((e) => [e.refundId, e.outcome?.kind, (e.outcome as { refundedAmount: number }).refundedAmount]))
      .toEqual([[`re_${k}1`, 'approved', 500], [`re_${k}2`, 'approved', 700]]);

    const k2 = key();
    const psp2 = ref((await authorize(k2)).outcome);
    const voided = await a.void({ credentials, idempotencyKey: `${k2}:void`, providerReference: psp2 });
    expect(voided.outcome).toMatchObject({ kind: 'pending', providerReference: psp2 });
    expect(voided.exchange.request).toMatchObject({ path: `/v71/payments/${psp2}/cancels`, body: { reference: `${k2}:void` } });
    const cancelled = await until(() => world.receiver.events().find((e) => e.type === 'CANCELLATION' && e.providerReference === psp2));
    expect(cancelled).toMatchObject({ operation: 'void', chargeId: k2, outcome: { kind: 'approved' } });
  });

  it('a capture Adyen refuses later is reported by its notification (CAPTURE success false → capture_failed)', async () => {
    const k = key();
    const psp = ref((await authorize(k)).outcome);
    world.double.behave({ fail_next: 'capture' });
    const capture = await adapter().capture({ credentials, idempotencyKey: `${k}:capture`, providerReference: psp, amount: 2000, currency: 'EUR' });
    expect(capture.outcome.kind).toBe('pending');
    const event = await until(() => world.receiver.events().find((e) => e.type === 'CAPTURE' && e.providerReference === psp));
    expect(event).toMatchObject({ operation: 'capture', chargeId: k, outcome: { kind: 'hard_decline', declineCode: 'capture_failed' }, eventId: expect.stringMatching(/^CAPTURE:[A-Z0-9]+:false$/) });
  });

  it('a capture without an amount is refused before sending (Adyen\'s capture needs one)', async () => {
    const out = await adapter().capture({ currency: 'usd', credentials, idempotencyKey: 'ch_x:capture', providerReference: 'ABC' });
    expect(out.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'invalid_request' });
    expect(world.double.state().requests.some((r) => r.idempotency_key === 'ch_x:capture')).toBe(false);
  });

  it('replays under the same key: one payment at Adyen, the same answer', async () => {
    const a = adapter();
    const k = key();
    const first = await authorize(k);
    const again = await a.authorize({ credentials, idempotencyKey: k, amount: 2000, currency: 'EUR', installments: 1, card: { ...card(), cvc: undefined } });
    expect(ref(again.outcome)).toBe(ref(first.outcome));
    expect(world.double.state().creates_by_key[k]).toBe(1);
    expect(world.double.state().requests.filter((r) => r.idempotency_key === k).map((r) => r.replayed ?? false)).toEqual([false, true]);
  });

  it('a 5xx is unknown; the retry under the same key gets what Adyen did', async () => {
    const k = key();
    world.double.behave({ fail_with_500: true });
    const out = await authorize(k);
    expect(out.outcome).toMatchObject({ kind: 'unknown', error: expect.stringContaining('HTTP 500') });
    expect(out.exchange).toMatchObject({ response: { status: 500 }, provider_code: '000' });
    const retry = await authorize(k);
    expect(retry.outcome).toMatchObject({ kind: 'approved' });
    expect(world.double.state().creates_by_key[k]).toBe(1);
  });

  it('a timeout after sending and a dropped connection are unknown; a refused connection is a transport error', async () => {
    world.double.behave({ latency_ms: 3000 });
    const slow = await authorize(key(), { timeoutMs: 1000 });
    expect(slow.outcome.kind).toBe('unknown');
    expect(slow.exchange.response).toBeUndefined();
    world.double.behave({ drop_connection: true });
    expect((await authorize(key())).outcome.kind).toBe('unknown');
    const closed = createAdyenAdapter({ apiBase: 'http://127.0.0.1:1', timeoutMs: 1000 });
    const refused = await closed.authorize({ credentials, idempotencyKey: key(), amount: 1000, currency: 'EUR', installments: 1, card: card() });
    expect(refused.outcome).toMatchObject({ kind: 'transport_error', error: expect.stringContaining('ECONNREFUSED') });
  });

  it('a key Adyen refuses is a soft decline (invalid_credentials)', async () => {
    const out = await adapter().authorize({ credentials: { ...credentials, api_key: 'invalid_key' }, idempotencyKey: key(), amount: 1000, currency: 'EUR', installments: 1, card: card() });
    expect(out.outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'invalid_credentials' });
    expect(out.exchange).toMatchObject({ response: { status: 401, body: { errorType: 'security' } }, provider_code: '000' });
  });

  it('a request Adyen refuses is an error answer: 422 soft on an authorization, hard on a modification; 403 for the account', async () => {
    const out = await authorize(key(), { currency: 'EURO' });
    expect(out.outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'invalid_request' });
    expect(out.exchange).toMatchObject({ response: { status: 422, body: { errorType: 'validation', errorCode: '702' } }, provider_code: '702' });
    const capture = await adapter().capture({ credentials, idempotencyKey: 'ch_y:capture', providerReference: 'ABC', amount: 100, currency: 'EURO' });
    expect(capture.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'invalid_request' });
    const noAccount = await adapter().authorize({ credentials: { ...credentials, merchant_account: '' }, idempotencyKey: key(), amount: 1000, currency: 'EUR', installments: 1, card: card() });
    expect(noAccount.outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'invalid_credentials' });
    expect(noAccount.exchange).toMatchObject({ response: { status: 403 }, provider_code: '901' });
  });

  it('live without live_url_prefix (and no api_base) fails before sending', async () => {
    const live = createAdyenAdapter({ environment: 'production', timeoutMs: 1000 });
    const out = await live.authorize({ credentials, idempotencyKey: key(), amount: 1000, currency: 'EUR', installments: 1, card: card() });
    expect(out.outcome).toMatchObject({ kind: 'transport_error', error: expect.stringContaining('live_url_prefix missing') });
    // An api_base (a proxy, a double) stands in for the live prefix.
    const proxied = createAdyenAdapter({ environment: 'production', apiBase: world.double.url, timeoutMs: 1000 });
    expect((await proxied.authorize({ credentials, idempotencyKey: key(), amount: 1000, currency: 'EUR', installments: 1, card: card() })).outcome.kind).toBe('approved');
  });

  it('has no look-up by reference: getStatus fails and says so', async () => {
    const status = await adapter().getStatus({ credentials, idempotencyKey: 'ch_anything' });
    expect(status).toMatchObject({ lookup: 'failed', error: expect.stringContaining('no look-up by reference'), exchange: { operation: 'get_status', idempotency_key: 'ch_anything' } });
  });
});

// ---------------------------------------------------------------------------------------------------
// Notifications

const base = (fields: Record<string, unknown>) => ({
  amount: { currency: 'EUR', value: 1000 }, eventCode: 'AUTHORISATION', eventDate: '2026-01-01T01:00:00+01:00', merchantAccountCode: 'SwitchboardECOM',
  merchantReference: 'ch_01TEST', paymentMethod: 'visa', pspReference: 'QFQTPCQ8HXSKGK82', reason: '', success: 'true', ...fields,
});
const parse = (items: Record<string, unknown>[], hmacKey = HMAC_KEY) => parseAdyenWebhook({ rawBody: JSON.stringify(notificationBody(items)), headers: {}, credentials: { ...credentials, hmac_key: hmacKey } });
const eventOf = (item: Record<string, unknown>) => {
  const verdict = parse([signItem(item, HMAC_KEY)]);
  if (!verdict.verified) throw new Error(verdict.error);
  return verdict.events[0];
};

describe('adyen notifications (parseWebhook)', () => {
  it('verifies a signed item and answers [accepted]', () => {
    const verdict = parse([signItem(base({ reason: '874574:1111:03/2030', additionalData: { cardSummary: '1111', expiryDate: '3/2030', cardBin: '411111' } }), HMAC_KEY)]);
    expect(verdict).toMatchObject({ verified: true, rejected: 0, reply: ADYEN_WEBHOOK_REPLY });
    if (!verdict.verified) return;
    const [event] = verdict.events;
    expect(event).toMatchObject({
      eventId: 'AUTHORISATION:QFQTPCQ8HXSKGK82:true', type: 'AUTHORISATION', operation: 'authorize', chargeId: 'ch_01TEST', providerReference: 'QFQTPCQ8HXSKGK82',
      outcome: { kind: 'approved', providerReference: 'QFQTPCQ8HXSKGK82', authorizedAmount: 1000, capturedAmount: 0, refundedAmount: 0 },
    });
    // Stored without the signature or card data: the last 4 stay.
    expect(event.payload).toMatchObject({ pspReference: 'QFQTPCQ8HXSKGK82', reason: '874574:1111', additionalData: { cardSummary: '1111' } });
    expect(JSON.stringify(event.payload)).not.toMatch(/hmacSignature|expiryDate|411111|03\/2030/);
  });

  it('refuses a batch whose items are unsigned, badly signed or altered', () => {
    expect(parse([base({})])).toMatchObject({ verified: false });
    expect(parse([signItem(base({}), HMAC_KEY)], 'AA'.repeat(32))).toMatchObject({ verified: false, error: expect.stringContaining('hmacSignature') });
    const altered = { ...signItem(base({}), HMAC_KEY), amount: { currency: 'EUR', value: 1 } };
    expect(parse([altered])).toMatchObject({ verified: false });
    expect(parse([{ ...signItem(base({}), HMAC_KEY), additionalData: { hmacSignature: 'not base64 at all' } }])).toMatchObject({ verified: false });
    expect(parseAdyenWebhook({ rawBody: 'nope', headers: {}, credentials })).toMatchObject({ verified: false, error: expect.stringContaining('not JSON') });
    expect(parseAdyenWebhook({ rawBody: '{"live":"false","notificationItems":[]}', headers: {}, credentials })).toMatchObject({ verified: false });
    expect(parseAdyenWebhook({ rawBody: JSON.stringify(notificationBody([signItem(base({}), HMAC_KEY)])), headers: {}, credentials: { api_key: 'k' } }))
      .toMatchObject({ verified: false, error: expect.stringContaining('hmac_key') });
  });

  it('applies the good items of a mixed batch and counts the rejected ones', () => {
    const good = signItem(base({ pspReference: 'GOOD000000000001' }), HMAC_KEY);
    const bad = { ...signItem(base({ pspReference: 'BAD0000000000001' }), HMAC_KEY), success: 'false' };
    const verdict = parse([good, bad]);
    expect(verdict).toMatchObject({ verified: true, rejected: 1 });
    if (verdict.verified) expect(verdict.events.map((e) => e.providerReference)).toEqual(['GOOD000000000001']);
  });

  it.each([
    ['AUTHORISATION refused', base({ success: 'false', reason: 'CVC Declined' }),
      { operation: 'authorize', chargeId: 'ch_01TEST', outcome: { kind: 'hard_decline', declineCode: 'incorrect_cvc' }, providerCode: '24' }],
    ['AUTHORISATION refused, 3-D Secure failed (hard)', base({ success: 'false', reason: '3D Not Authenticated' }),
      { operation: 'authorize', outcome: { kind: 'hard_decline', declineCode: 'authentication_failed', message: '3D Not Authenticated' }, providerCode: '11' }],
    ['AUTHORISATION refused, its refusalReasonCode first', base({ success: 'false', reason: 'Something else', additionalData: { refusalReasonCode: '11' } }),
      { operation: 'authorize', outcome: { kind: 'hard_decline', declineCode: 'authentication_failed' }, providerCode: '11' }],
    ['AUTHORISATION refused, authentication required (soft)', base({ success: 'false', reason: 'Authentication required' }),
      { operation: 'authorize', outcome: { kind: 'soft_decline', declineCode: 'authentication_required' }, providerCode: '38' }],
    ['AUTHORISATION refused, unknown reason', base({ success: 'false', reason: 'Something new' }),
      { operation: 'authorize', outcome: { kind: 'soft_decline', declineCode: 'card_declined' }, providerCode: 'Something new' }],
    ['CAPTURE', base({ eventCode: 'CAPTURE', merchantReference: 'ch_01TEST:capture', pspReference: 'CAP0000000000001', originalReference: 'QFQTPCQ8HXSKGK82', amount: { currency: 'EUR', value: 600 } }),
      { operation: 'capture', chargeId: 'ch_01TEST', providerReference: 'QFQTPCQ8HXSKGK82', outcome: { kind: 'approved', capturedAmount: 600 } }],
    ['CAPTURE failed', base({ eventCode: 'CAPTURE', merchantReference: 'ch_01TEST:capture', originalReference: 'QFQTPCQ8HXSKGK82', success: 'false', reason: 'Insufficient balance on payment' }),
      { operation: 'capture', chargeId: 'ch_01TEST', outcome: { kind: 'hard_decline', declineCode: 'capture_failed' }, providerCode: 'Insufficient balance on payment' }],
    ['CAPTURE_FAILED', base({ eventCode: 'CAPTURE_FAILED', merchantReference: 'ch_01TEST:capture', originalReference: 'QFQTPCQ8HXSKGK82' }),
      { operation: 'capture', chargeId: 'ch_01TEST', outcome: { kind: 'hard_decline', declineCode: 'capture_failed' } }],
    ['CANCELLATION', base({ eventCode: 'CANCELLATION', merchantReference: 'ch_01TEST:void', originalReference: 'QFQTPCQ8HXSKGK82' }),
      { operation: 'void', chargeId: 'ch_01TEST', providerReference: 'QFQTPCQ8HXSKGK82', outcome: { kind: 'approved', capturedAmount: 0 } }],
    ['CANCELLATION failed', base({ eventCode: 'CANCELLATION', merchantReference: 'ch_01TEST:void', originalReference: 'QFQTPCQ8HXSKGK82', success: 'false' }),
      { operation: 'void', outcome: { kind: 'hard_decline', declineCode: 'void_failed' } }],
    ['REFUND', base({ eventCode: 'REFUND', merchantReference: 're_01TEST', pspReference: 'REF0000000000001', originalReference: 'QFQTPCQ8HXSKGK82', amount: { currency: 'EUR', value: 400 } }),
      { operation: 'refund', refundId: 're_01TEST', providerReference: 'QFQTPCQ8HXSKGK82', outcome: { kind: 'approved', refundedAmount: 400, refundReference: 'REF0000000000001' } }],
    ['REFUND failed', base({ eventCode: 'REFUND', merchantReference: 're_01TEST', originalReference: 'QFQTPCQ8HXSKGK82', success: 'false' }),
      { operation: 'refund', refundId: 're_01TEST', outcome: { kind: 'hard_decline', declineCode: 'refund_failed' } }],
    ['REFUND_FAILED', base({ eventCode: 'REFUND_FAILED', merchantReference: 're_01TEST', originalReference: 'QFQTPCQ8HXSKGK82' }),
      { operation: 'refund', refundId: 're_01TEST', outcome: { kind: 'hard_decline', declineCode: 'refund_failed' }, providerCode: 'REFUND_FAILED' }],
    ['REFUNDED_REVERSED', base({ eventCode: 'REFUNDED_REVERSED', merchantReference: 're_01TEST', originalReference: 'QFQTPCQ8HXSKGK82' }),
      { operation: 'refund', refundId: 're_01TEST', outcome: { kind: 'hard_decline', declineCode: 'refund_failed' } }],
  ])('%s', (_name, item, expected) => {
    expect(eventOf(item)).toMatchObject(expected);
  });

  it('stores and acknowledges other events (reports, chargebacks) without an operation', () => {
    const report = eventOf(base({ eventCode: 'REPORT_AVAILABLE', merchantReference: '', reason: 'https://example.com/report.csv' }));
    expect(report).toMatchObject({ type: 'REPORT_AVAILABLE', eventId: 'REPORT_AVAILABLE:QFQTPCQ8HXSKGK82:true' });
    expect(report).not.toHaveProperty('operation');
    expect(report).not.toHaveProperty('outcome');
    const chargeback = eventOf(base({ eventCode: 'CHARGEBACK', originalReference: 'QFQTPCQ8HXSKGK82', pspReference: 'CB00000000000001' }));
    expect(chargeback).toMatchObject({ type: 'CHARGEBACK', chargeId: 'ch_01TEST', providerReference: 'QFQTPCQ8HXSKGK82' });
    expect(chargeback).not.toHaveProperty('operation');
  });

  it('reads Adyen\'s published examples', () => {
    for (const [name, example] of Object.entries(webhooksContract.components.examples)) {
      const item = (example.value.notificationItems[0] as { NotificationRequestItem: Record<string, unknown> }).NotificationRequestItem;
      const event = eventOf(item);
      expect(event.type, name).toBe(item.eventCode);
      expect(event.eventId, name).toBe(`${String(item.eventCode)}:${String(item.pspReference)}:${String(item.success)}`);
    }
  });

  it('gives the same eventId to an item Adyen sends again', () => {
    const item = signItem(base({ eventCode: 'CAPTURE', originalReference: 'QFQTPCQ8HXSKGK82', pspReference: 'CAP0000000000009' }), HMAC_KEY);
    const first = parse([item]);
    const again = parse([{ ...item, eventDate: '2026-01-01T02:00:00+01:00' }]);
    expect(first.verified && again.verified && first.events[0].eventId === again.events[0].eventId).toBe(true);
  });
});

describe('the adyen double\'s notifications', () => {
  const world = doubleWithReceiver();
  const adapter = () => createAdyenAdapter({ apiBase: world.double.url, timeoutMs: 1000 });

  it('lists the holder names it understands', () => {
    expect(TEST_HOLDER_NAMES).toMatchObject({
      REFUSED: { resultCode: 'Refused', refusalReasonCode: '2' }, NOT_ENOUGH_BALANCE: { refusalReasonCode: '12' }, FRAUD_CANCELLED: { refusalReasonCode: '22' },
      ERROR: { resultCode: 'Error' }, RECEIVED: { resultCode: 'Received' }, CHALLENGE_SHOPPER: { resultCode: 'ChallengeShopper' },
    });
  });

  it('holds notifications until released, and can send them twice and out of order', async () => {
    world.double.holdNotifications(true);
    const k = key();
    const psp = ref((await adapter().authorize({ credentials, idempotencyKey: k, amount: 900, currency: 'EUR', installments: 1, card: card(), capture: true })).outcome);
    world.double.setWebhook({ url: world.receiver.url, hmacKey: HMAC_KEY });
    expect(world.double.pendingNotifications().map((item) => item.eventCode)).toEqual(['AUTHORISATION', 'CAPTURE']);
    expect(world.double.notificationsSent()).toEqual([]);
    await world.double.releaseNotifications({ duplicate: true, reverse: true });
    const events = world.receiver.events().filter((e) => e.providerReference === psp);
    expect(events.map((e) => e.type)).toEqual(['CAPTURE', 'AUTHORISATION', 'CAPTURE', 'AUTHORISATION']);
    expect(new Set(events.map((e) => e.eventId)).size).toBe(2);
    expect(world.double.notificationsSent().map((s) => [s.eventCode, s.accepted, s.attempts])).toEqual([['AUTHORISATION', true, 2], ['CAPTURE', true, 2]]);
    expect(world.double.pendingNotifications()).toEqual([]);
    world.double.holdNotifications(false);
  });

  it('sends a notification again while the receiver does not accept it', async () => {
    world.receiver.failNext(2);
    const k = key();
    await adapter().authorize({ credentials, idempotencyKey: k, amount: 900, currency: 'EUR', installments: 1, card: card() });
    await world.double.notificationsIdle();
    const sent = world.double.notificationsSent().find((s) => s.item.merchantReference === k);
    expect(sent).toMatchObject({ eventCode: 'AUTHORISATION', attempts: 3, accepted: true, lastStatus: 200 });
  });
});
