import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createStripeAdapter, parseStripeWebhook } from '../../activities/providers/stripe';
import type { ProcessorEvent, WebhookRequest } from '../../activities/providers/types';
import { signStripePayload, startStripeDouble, StripeDouble, StripeEvent } from '../doubles/stripe/server';

// Stripe's side of the inbound webhook path without Postgres or Temporal: the signature check and the
// normalization of each event (parseWebhook), and the double sending signed events as Stripe does.

const SECRET = 'whsec_unit_webhooks';
const credentials = { secret_key: 'sk_test_unit_webhooks', webhook_secret: SECRET };
const now = () => Math.floor(Date.now() / 1000);

function event(type: string, object: Record<string, unknown>): Record<string, unknown> {
  return {
    id: `evt_${Math.random().toString(36).slice(2)}`, object: 'event', api_version: '2025-02-24.acacia', created: now(),
    data: { object }, livemode: false, pending_webhooks: 1, request: { id: 'req_1', idempotency_key: 'ch_1' }, type,
  };
}

function forged(body: unknown, { secret = SECRET, timestamp = now() } = {}): WebhookRequest {
  const rawBody = typeof body === 'string' ? body : JSON.stringify(body, null, 2);
  return { rawBody, headers: { 'stripe-signature': signStripePayload(rawBody, secret, timestamp) }, credentials };
}

function parsedOne(body: unknown): ProcessorEvent {
  const verdict = parseStripeWebhook(forged(body));
  if (!verdict.verified) throw new Error(verdict.error);
  expect(verdict.events).toHaveLength(1);
  return verdict.events[0];
}

const intent = (fields: Record<string, unknown>) => ({
  id: 'pi_1', object: 'payment_intent', amount: 2000, amount_capturable: 0, amount_received: 0, capture_method: 'manual', currency: 'usd',
  client_secret: 'pi_1_secret_shh', latest_charge: 'ch_x', last_payment_error: null, metadata: { switchboard_charge_id: 'ch_sb_1' }, status: 'requires_capture',
  ...fields,
});
const refund = (fields: Record<string, unknown>) => ({
  id: 're_1', object: 'refund', amount: 500, charge: 'ch_x', currency: 'usd', metadata: { switchboard_refund_id: 're_sb_1' }, payment_intent: 'pi_1', status: 'succeeded',
  ...fields,
});
const declined = (code: string, declineCode?: string) => intent({
  status: 'requires_payment_method', capture_method: 'automatic',
  last_payment_error: { type: 'card_error', code, ...(declineCode ? { decline_code: declineCode } : {}), message: 'Your card was declined.' },
});

describe('parseWebhook: the signature', () => {
  const body = event('payment_intent.created', intent({ status: 'requires_confirmation' }));

  it('accepts a body signed with the config\'s webhook_secret and answers what Stripe expects', () => {
    const verdict = parseStripeWebhook(forged(body));
    expect(verdict).toMatchObject({ verified: true, rejected: 0, reply: { status: 200, body: '{"received":true}', contentType: 'application/json' } });
    expect(verdict.verified && verdict.events.map((e) => [e.eventId, e.type])).toEqual([[body.id, 'payment_intent.created']]);
  });

  it('refuses a missing or malformed header, another secret, a changed body and an old timestamp', () => {
    const good = forged(body);
    const cases: [string, WebhookRequest, RegExp][] = [
      ['no header', { ...good, headers: {} }, /Stripe-Signature/],
      ['malformed header', { ...good, headers: { 'stripe-signature': 'nonsense' } }, /timestamp/i],
      ['another secret', forged(body, { secret: 'whsec_other' }), /No signatures found matching/],
      ['a changed body', { ...good, rawBody: good.rawBody.replace('2000', '9000') }, /No signatures found matching/],
      ['re-serialized JSON', { ...good, rawBody: JSON.stringify(JSON.parse(good.rawBody)) }, /No signatures found matching/],
      ['a timestamp 301 s old', forged(body, { timestamp: now() - 301 }), /tolerance/],
      ['no webhook_secret in the credentials', { ...good, credentials: { secret_key: 'sk_test_x' } }, /webhook_secret/],
    ];
    for (const [what, request, error] of cases) {
      const verdict = parseStripeWebhook(request);
      expect(verdict.verified, what).toBe(false);
      expect(!verdict.verified && verdict.error, what).toMatch(error);
    }
    expect(parseStripeWebhook(forged(body, { timestamp: now() - 290 })).verified).toBe(true);
  });

  it('refuses a signed body that is not JSON, or not an event', () => {
    expect(parseStripeWebhook(forged('{"id": "evt_1", '))).toMatchObject({ verified: false, error: expect.stringMatching(/not JSON/) });
    expect(parseStripeWebhook(forged({ hello: 'world' }))).toMatchObject({ verified: false, error: 'the body is not a Stripe event' });
  });
});

/** What every event on an intent or a refund names: our id from its metadata and the intent. */
function idsOf(object: Record<string, unknown>): Partial<ProcessorEvent> {
  const metadata = object.metadata as Record<string, string>;
  if (object.object === 'refund') return { refundId: metadata.switchboard_refund_id, providerReference: object.payment_intent as string };
  return { chargeId: metadata.switchboard_charge_id, providerReference: object.id as string };
}

describe('parseWebhook: what each event reports', () => {
  const approved = (fields: Record<string, unknown>) => ({ kind: 'approved', providerReference: 'pi_1', authorizedAmount: 2000, refundedAmount: 0, ...fields });
  const cases: [string, string, Record<string, unknown>, Partial<ProcessorEvent>][] = [
    ['an authorization (manual capture)', 'payment_intent.amount_capturable_updated', intent({ amount_capturable: 2000 }),
      { operation: 'authorize', chargeId: 'ch_sb_1', providerReference: 'pi_1', outcome: approved({ capturedAmount: 0 }) as never }],
    ['an authorization captured at once', 'payment_intent.succeeded', intent({ capture_method: 'automatic', status: 'succeeded', amount_received: 2000 }),
      { operation: 'authorize', chargeId: 'ch_sb_1', outcome: approved({ capturedAmount: 2000 }) as never }],
    ['a manual (partial) capture', 'payment_intent.succeeded', intent({ status: 'succeeded', amount_received: 1200 }),
      { operation: 'capture', chargeId: 'ch_sb_1', outcome: approved({ capturedAmount: 1200 }) as never }],
    ['a hard decline (decline_code first)', 'payment_intent.payment_failed', declined('card_declined', 'insufficient_funds'),
      { operation: 'authorize', chargeId: 'ch_sb_1', outcome: { kind: 'hard_decline', declineCode: 'insufficient_funds', message: 'Your card was declined.' }, providerCode: 'insufficient_funds' }],
    ['a failed 3-D Secure challenge (hard)', 'payment_intent.payment_failed',
      intent({ status: 'requires_payment_method', last_payment_error: { type: 'invalid_request_error', code: 'payment_intent_authentication_failure', message: 'The provided PaymentMethod has failed authentication.' } }),
      { operation: 'authorize', outcome: { kind: 'hard_decline', declineCode: 'authentication_failed', message: 'The provided PaymentMethod has failed authentication.' }, providerCode: 'payment_intent_authentication_failure' }],
    ['a soft decline', 'payment_intent.payment_failed', declined('processing_error'),
      { operation: 'authorize', outcome: { kind: 'soft_decline', declineCode: 'processing_error', message: 'Your card was declined.' }, providerCode: 'processing_error' }],
    ['a void', 'payment_intent.canceled', intent({ status: 'canceled' }),
      { operation: 'void', chargeId: 'ch_sb_1', outcome: approved({ capturedAmount: 0 }) as never }],
    ['a refund that succeeded', 'refund.created', refund({}),
      { operation: 'refund', refundId: 're_sb_1', providerReference: 'pi_1', outcome: { kind: 'approved', providerReference: 'pi_1', authorizedAmount: 500, capturedAmount: 500, refundedAmount: 500, refundReference: 're_1' } }],
    ['a pending refund that succeeded', 'refund.updated', refund({}), { operation: 'refund', refundId: 're_sb_1', outcome: expect.objectContaining({ kind: 'approved', refundReference: 're_1' }) }],
    ['the same on the older event name', 'charge.refund.updated', refund({}), { operation: 'refund', refundId: 're_sb_1', outcome: expect.objectContaining({ kind: 'approved' }) }],
    ['a refund that failed', 'refund.failed', refund({ status: 'failed', failure_reason: 'expired_or_canceled_card' }),
      { operation: 'refund', refundId: 're_sb_1', providerReference: 'pi_1', outcome: { kind: 'hard_decline', declineCode: 'refund_failed', message: 'expired_or_canceled_card' }, providerCode: 'expired_or_canceled_card' }],
    ['a refund canceled', 'refund.updated', refund({ status: 'canceled' }),
      { operation: 'refund', outcome: expect.objectContaining({ kind: 'hard_decline', declineCode: 'refund_failed' }), providerCode: 'canceled' }],
  ];
  it.each(cases)('%s (%s)', (_what, type, object, expected) => {
    const body = event(type, object);
    expect(parsedOne(body)).toEqual({ eventId: body.id, type, ...idsOf(object), ...expected, payload: expect.any(Object) });
  });

  const quiet: [string, string, Record<string, unknown>, Partial<ProcessorEvent>][] = [
    ['an intent created', 'payment_intent.created', intent({ status: 'requires_confirmation' }), { chargeId: 'ch_sb_1', providerReference: 'pi_1' }],
    ['3-D Secure asked for (its end comes later)', 'payment_intent.requires_action', intent({ status: 'requires_action' }), { chargeId: 'ch_sb_1', providerReference: 'pi_1' }],
    ['an intent processing', 'payment_intent.processing', intent({ status: 'processing' }), { chargeId: 'ch_sb_1', providerReference: 'pi_1' }],
    ['an event whose intent is elsewhere by now', 'payment_intent.amount_capturable_updated', intent({ status: 'succeeded', amount_received: 2000 }), { chargeId: 'ch_sb_1', providerReference: 'pi_1' }],
    ['a refund pending', 'refund.created', refund({ status: 'pending' }), { refundId: 're_sb_1', providerReference: 'pi_1' }],
    ['a refund waiting for the customer', 'refund.updated', refund({ status: 'requires_action' }), { refundId: 're_sb_1', providerReference: 'pi_1' }],
    ['an intent Switchboard did not make', 'payment_intent.succeeded', intent({ metadata: {}, status: 'processing' }), { providerReference: 'pi_1' }],
    ['the charge refunded (the refund events carry it)', 'charge.refunded', { id: 'ch_x', object: 'charge', amount_refunded: 500, payment_intent: 'pi_1' }, {}],
    ['a type it does not know', 'customer.created', { id: 'cus_1', object: 'customer' }, {}],
  ];
  it.each(quiet)('reports no operation for %s (%s)', (_what, type, object, expected) => {
    const body = event(type, object);
    expect(parsedOne(body)).toEqual({ eventId: body.id, type, ...expected, payload: expect.any(Object) });
  });

  it('stores the event without card data or client secret', () => {
    const charge = {
      id: 'ch_x', object: 'charge', amount: 2000, payment_intent: 'pi_1',
      payment_method_details: { type: 'card', card: { brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2031, number: '4242424242424242', cvc: '987', fingerprint: 'fp_abc', checks: { cvc_check: 'pass' } } },
    };
    const failed = declined('card_declined', 'generic_decline');
    (failed as any).last_payment_error.payment_method = { id: 'pm_1', object: 'payment_method', card: { brand: 'visa', last4: '0002', exp_month: 1, exp_year: 2030, fingerprint: 'fp_def' } };
    for (const body of [event('charge.succeeded', charge), event('payment_intent.payment_failed', failed)]) {
      const { payload } = parsedOne(body);
      const text = JSON.stringify(payload);
      // The CVC as the JSON string it would be: the event's `created` is a number that may hold the digits 987.
      for (const secret of ['4242424242424242', '"987"', 'pi_1_secret_shh', 'client_secret', 'fp_abc', 'fp_def']) expect(text).not.toContain(secret);
      expect(payload).toMatchObject({ id: body.id, type: body.type, data: { object: { id: (body.data as { object: { id: string } }).object.id } } });
    }
    const { payload } = parsedOne(event('charge.succeeded', charge));
    expect((payload as any).data.object.payment_method_details.card).toEqual({ brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2031 });
  });
});

describe('the double sends webhooks as Stripe does', () => {
  let double: StripeDouble;
  let receiver: Server;
  let received: { rawBody: string; headers: Record<string, string | undefined> }[] = [];
  /** How many of the next requests the receiver answers 500. */
  let failNext = 0;
  const card = { number: '4242424242424242', exp_month: 12, exp_year: new Date().getFullYear() + 2, cvc: '123' };
  let n = 0;
  const key = () => `ch_wh_${Date.now()}_${(n += 1)}`;
  const adapter = () => createStripeAdapter({ apiBase: double.url, timeoutMs: 2000 });
  const parse = (delivery: { rawBody: string; headers: Record<string, string | undefined> }) => {
    const verdict = parseStripeWebhook({ ...delivery, credentials });
    if (!verdict.verified) throw new Error(verdict.error);
    return verdict.events[0];
  };
  const types = () => received.map((r) => (JSON.parse(r.rawBody) as StripeEvent).type);

  beforeAll(async () => {
    double = await startStripeDouble();
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (failNext > 0) {
          failNext -= 1;
          res.writeHead(500).end();
          return;
        }
        received.push({ rawBody: Buffer.concat(chunks).toString('utf8'), headers: req.headers as Record<string, string | undefined> });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    double.setWebhook({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/provider-webhooks/ppc_1`, secret: SECRET });
  });
  afterEach(async () => {
    double.holdWebhooks(false);
    await double.webhooksIdle();
    received = [];
    failNext = 0;
  });
  afterAll(async () => {
    await double?.close();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  it('signs each event so that parseWebhook accepts it, and reports the authorization', async () => {
    const k = key();
    const auth = await adapter().authorize({ credentials, idempotencyKey: k, amount: 2000, currency: 'USD', installments: 1, card });
    await double.webhooksIdle();
    expect(types()).toEqual(['payment_intent.created', 'charge.succeeded', 'payment_intent.amount_capturable_updated']);
    const first = JSON.parse(received[0].rawBody) as StripeEvent;
    expect(first).toMatchObject({
      id: expect.stringMatching(/^evt_/), object: 'event', api_version: '2025-02-24.acacia', livemode: false, pending_webhooks: 1,
      request: { id: expect.stringMatching(/^req_/), idempotency_key: k }, data: { object: { object: 'payment_intent', metadata: { switchboard_charge_id: k } } },
    });
    expect(received[0].headers['stripe-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(received[0].headers['content-type']).toMatch(/^application\/json/);
    const reported = received.map(parse);
    expect(reported[2]).toMatchObject({
      type: 'payment_intent.amount_capturable_updated', operation: 'authorize', chargeId: k,
      outcome: { kind: 'approved', providerReference: (auth.outcome as { providerReference: string }).providerReference, authorizedAmount: 2000, capturedAmount: 0 },
    });
    expect(JSON.stringify(received.map((r) => r.rawBody))).not.toContain(card.number);
    expect(double.webhooksSent().filter((d) => d.status === 200).map((d) => d.eventId)).toEqual(expect.arrayContaining(reported.map((r) => r.eventId)));
  });

  it('reports capture, void and a declined card', async () => {
    const a = adapter();
    const k = key();
    const auth = await a.authorize({ credentials, idempotencyKey: k, amount: 2000, currency: 'USD', installments: 1, card });
    const reference = (auth.outcome as { providerReference: string }).providerReference;
    await a.capture({ currency: 'usd', credentials, idempotencyKey: `${k}:capture`, providerReference: reference, amount: 1500 });
    const k2 = key();
    const auth2 = await a.authorize({ credentials, idempotencyKey: k2, amount: 900, currency: 'USD', installments: 1, card });
    await a.void({ credentials, idempotencyKey: `${k2}:void`, providerReference: (auth2.outcome as { providerReference: string }).providerReference });
    const k3 = key();
    await a.authorize({ credentials, idempotencyKey: k3, amount: 900, currency: 'USD', installments: 1, card: { ...card, number: '4000000000009995' }, capture: true });
    await double.webhooksIdle();
    const operations = received.map(parse).filter((e) => e.operation).map((e) => [e.type, e.operation, e.chargeId, e.outcome?.kind]);
    expect(operations).toEqual([
      ['payment_intent.amount_capturable_updated', 'authorize', k, 'approved'],
      ['payment_intent.succeeded', 'capture', k, 'approved'],
      ['payment_intent.amount_capturable_updated', 'authorize', k2, 'approved'],
      ['payment_intent.canceled', 'void', k2, 'approved'],
      ['payment_intent.payment_failed', 'authorize', k3, 'hard_decline'],
    ]);
    expect(received.map(parse).find((e) => e.type === 'payment_intent.payment_failed')).toMatchObject({ outcome: { declineCode: 'insufficient_funds' }, providerCode: 'insufficient_funds' });
  });

  it('retries with backoff while the endpoint answers 5xx', async () => {
    const a = adapter();
    const auth = await a.authorize({ credentials, idempotencyKey: key(), amount: 1000, currency: 'USD', installments: 1, card });
    await double.webhooksIdle();
    received = [];
    failNext = 4;
    await a.void({ credentials, idempotencyKey: `${key()}:void`, providerReference: (auth.outcome as { providerReference: string }).providerReference });
    await double.webhooksIdle();
    expect(types()).toEqual(['payment_intent.canceled']);
    const attempts = double.webhooksSent().filter((d) => d.eventId === parse(received[0]).eventId);
    expect(attempts.map((d) => [d.attempt, d.status])).toEqual([[1, 500], [2, 500], [3, 500], [4, 500], [5, 200]]);
    const gaps = attempts.slice(1).map((d, i) => d.at - attempts[i].at);
    expect(gaps[0]).toBeGreaterThanOrEqual(45);
    for (let i = 1; i < gaps.length; i += 1) expect(gaps[i]).toBeGreaterThan(gaps[i - 1]);
  });

  it('holds events, then releases them reversed and duplicated', async () => {
    double.holdWebhooks(true);
    const k = key();
    await adapter().authorize({ credentials, idempotencyKey: k, amount: 1000, currency: 'USD', installments: 1, card, capture: true });
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(received).toEqual([]);
    const held = double.pendingWebhooks();
    expect(held.map((e) => e.type)).toEqual(['payment_intent.created', 'charge.succeeded', 'payment_intent.succeeded']);
    await double.releaseWebhooks({ reverse: true, duplicate: true });
    expect(types()).toEqual(['payment_intent.succeeded', 'payment_intent.succeeded', 'charge.succeeded', 'charge.succeeded', 'payment_intent.created', 'payment_intent.created']);
    expect(received.map((r) => parse(r).eventId)).toEqual([held[2].id, held[2].id, held[1].id, held[1].id, held[0].id, held[0].id]);
    expect(double.pendingWebhooks()).toEqual([]);
  });

  it('a refund answered pending is a pending outcome, and settles by refund.updated', async () => {
    const a = adapter();
    const k = key();
    const auth = await a.authorize({ credentials, idempotencyKey: k, amount: 2000, currency: 'USD', installments: 1, card, capture: true });
    const reference = (auth.outcome as { providerReference: string }).providerReference;

    double.behave({ refund_status: 'pending', times: 2 });
    const pending = await a.refund({ currency: 'usd', credentials, idempotencyKey: `re_${k}_1`, providerReference: reference, amount: 500 });
    expect(pending.outcome).toEqual({ kind: 'pending', providerReference: reference, operationReference: expect.stringMatching(/^re_/) });
    expect(pending.exchange).toMatchObject({ operation: 'refund', outcome: 'pending' });
    const reId = (pending.outcome as { operationReference: string }).operationReference;
    expect(await a.getStatus({ credentials, idempotencyKey: `re_${k}_1`, providerReference: reference })).toMatchObject({ lookup: 'found', operation: 'refund', outcome: { kind: 'pending' } });
    const failing = await a.refund({ currency: 'usd', credentials, idempotencyKey: `re_${k}_2`, providerReference: reference, amount: 300 });
    const failingId = (failing.outcome as { operationReference: string }).operationReference;

    double.settleRefund(reId, 'succeeded');
    double.settleRefund(failingId, 'failed');
    // A settled refund settles no further, except that Stripe can still fail one that succeeded.
    expect(() => double.settleRefund(failingId, 'succeeded')).toThrow(/is failed: it cannot become succeeded/);
    await double.webhooksIdle();
    const refundEvents = received.map(parse).filter((e) => e.type.startsWith('refund.')).map((e) => [e.type, e.refundId, e.operation, e.outcome?.kind]);
    expect(refundEvents).toEqual([
      ['refund.created', `re_${k}_1`, undefined, undefined],
      ['refund.created', `re_${k}_2`, undefined, undefined],
      ['refund.updated', `re_${k}_1`, 'refund', 'approved'],
      ['refund.updated', `re_${k}_2`, 'refund', 'hard_decline'],
      ['refund.failed', `re_${k}_2`, 'refund', 'hard_decline'],
    ]);
    const updated = received.map((r) => JSON.parse(r.rawBody) as StripeEvent).find((e) => e.type === 'refund.updated')!;
    expect(updated).toMatchObject({ data: { previous_attributes: { status: 'pending' } }, request: { id: null, idempotency_key: null } });
    // Stripe gives back what a failed refund had taken from the charge: 2000 − 500 is left to refund.
    expect((await a.refund({ currency: 'usd', credentials, idempotencyKey: `re_${k}_3`, providerReference: reference, amount: 1500 })).outcome).toMatchObject({ kind: 'approved', refundedAmount: 2000 });
  });

  it('a refund failed at once is refund_failed', async () => {
    const a = adapter();
    const k = key();
    const auth = await a.authorize({ credentials, idempotencyKey: k, amount: 2000, currency: 'USD', installments: 1, card, capture: true });
    double.behave({ refund_status: 'failed' });
    const out = await a.refund({ currency: 'usd', credentials, idempotencyKey: `re_${k}_1`, providerReference: (auth.outcome as { providerReference: string }).providerReference, amount: 500 });
    expect(out.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'refund_failed', message: 'expired_or_canceled_card' });
  });
});
