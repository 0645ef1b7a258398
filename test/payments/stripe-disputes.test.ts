import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createStripeAdapter, parseStripeWebhook } from '../../activities/providers/stripe';
import type { ProcessorEvent } from '../../activities/providers/types';
import { startStripeDouble, StripeDouble } from '../doubles/stripe/server';

// The stripe connector's disputes at the HTTP boundary: the adapter answering disputes the local double
// of Stripe's API raises for its dispute test cards, and the double's signed charge.dispute.* events read
// by the webhook parser. No Postgres or Temporal: the engine's side is in the dispute end-to-end tests.

const SECRET = 'whsec_connector_disputes';
const credentials = { secret_key: 'sk_test_connector_disputes', webhook_secret: SECRET };
const CARDS = { fraud: '4000000000000259', inquiry: '4000000000001976', warning: '4000000000005423', plain: '4242424242424242' } as const;

let double: StripeDouble;
let receiver: Server;
const received: ProcessorEvent[] = [];
let n = 0;
const adapter = () => createStripeAdapter({ apiBase: double.url, timeoutMs: 2000 });
const card = (number: string) => ({ number, exp_month: 12, exp_year: new Date().getFullYear() + 2, cvc: '123' });

async function until<T>(find: () => T | undefined, what: string, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Pays with a card (captured at once unless `capture: false`); answers the intent's id. */
async function pay(number: string, capture = true): Promise<{ chargeId: string; intent: string }> {
  const chargeId = `ch_dsp_${Date.now()}_${(n += 1)}`;
  const auth = await adapter().authorize({ credentials, idempotencyKey: chargeId, amount: 2000, currency: 'USD', installments: 1, card: card(number), capture });
  expect(auth.outcome.kind).toBe('approved');
  return { chargeId, intent: (auth.outcome as { providerReference: string }).providerReference };
}

const eventsOf = (intent: string) => received.filter((e) => e.dispute?.providerReference === intent);
const eventOf = (intent: string, type: string) => until(() => eventsOf(intent).find((e) => e.type === type), `${type} of ${intent}`);

beforeAll(async () => {
  double = await startStripeDouble();
  double.disputeTiming({ after_capture_ms: 50, decision_ms: 150 });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const verdict = parseStripeWebhook({ rawBody: Buffer.concat(chunks).toString('utf8'), headers: req.headers as Record<string, string | undefined>, credentials });
      if (!verdict.verified) return void res.writeHead(401).end();
      received.push(...verdict.events);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  double.setWebhook({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/provider-webhooks/ppc_1`, secret: SECRET });
});
afterEach(() => {
  double.disputeTiming({ after_capture_ms: 50, decision_ms: 150 });
});
afterAll(async () => {
  await double?.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

describe('a chargeback (4000000000000259)', () => {
  it('comes after capture with its funds withdrawn; submitted evidence with winning_evidence wins it back', async () => {
    const { intent } = await pay(CARDS.fraud);
    const created = await eventOf(intent, 'charge.dispute.created');
    expect(created.dispute).toMatchObject({
      processorDisputeId: expect.stringMatching(/^du_/), providerReference: intent, status: 'NEEDS_RESPONSE', reason: 'fraudulent', processorReason: 'fraudulent',
      amount: 2000, currency: 'USD', isInquiry: false, evidenceDueBy: expect.any(String),
    });
    expect(Date.parse(created.dispute!.evidenceDueBy!) - Date.now()).toBeGreaterThan(6 * 86_400_000);
    const withdrawn = await eventOf(intent, 'charge.dispute.funds_withdrawn');
    expect(withdrawn.dispute?.funds).toEqual({ kind: 'withdrawn', amount: 2000, fee: 1500, currency: 'USD' });

    const id = created.dispute!.processorDisputeId;
    const evidence = { customer_name: 'Jenny Rosen', uncategorized_text: 'Signed delivery receipt: winning_evidence' };
    const answer = await adapter().submitDisputeEvidence({ credentials, processorDisputeId: id, idempotencyKey: 'dp_win:submit', evidence, reason: 'fraudulent' });
    expect(answer).toMatchObject({ result: 'done', exchange: { operation: 'dispute_submit', idempotency_key: 'dp_win:submit', outcome: 'approved', request: { method: 'POST', path: `/v1/disputes/${id}`, body: { evidence: ['customer_name', 'uncategorized_text'], submit: true } }, response: { status: 200 } } });
    // The record names the evidence given, not what it says; nor the secret key.
    expect(JSON.stringify(answer.exchange)).not.toContain('Jenny Rosen');
    expect(JSON.stringify(answer.exchange)).not.toContain(credentials.secret_key);
    expect(double.state().dispute_requests.find((r) => r.idempotency_key === 'dp_win:submit')).toMatchObject({ dispute: id, action: 'update', submit: true, evidence, status: 200 });
    expect((await eventOf(intent, 'charge.dispute.updated')).dispute?.status).toBe('UNDER_REVIEW');
    expect((await eventOf(intent, 'charge.dispute.closed')).dispute?.status).toBe('WON');
    const reinstated = await eventOf(intent, 'charge.dispute.funds_reinstated');
    expect(reinstated.dispute).toMatchObject({ status: 'WON', funds: { kind: 'reinstated', amount: 2000, fee: 1500, currency: 'USD' } });
  });

  it('is lost when the evidence does not convince, and nothing comes back', async () => {
    const { intent } = await pay(CARDS.fraud);
    const id = (await eventOf(intent, 'charge.dispute.created')).dispute!.processorDisputeId;
    const answer = await adapter().submitDisputeEvidence({ credentials, processorDisputeId: id, idempotencyKey: 'dp_lose:submit', evidence: { uncategorized_text: 'We shipped it.' }, reason: 'fraudulent' });
    expect(answer.result).toBe('done');
    expect((await eventOf(intent, 'charge.dispute.closed')).dispute?.status).toBe('LOST');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(eventsOf(intent).map((e) => e.type)).not.toContain('charge.dispute.funds_reinstated');
  });

  it('is accepted (closed): lost at once', async () => {
    const { intent } = await pay(CARDS.fraud);
    const id = (await eventOf(intent, 'charge.dispute.created')).dispute!.processorDisputeId;
    const answer = await adapter().acceptDispute({ credentials, processorDisputeId: id, idempotencyKey: 'dp_accept:accept' });
    expect(answer).toMatchObject({ result: 'done', exchange: { operation: 'dispute_accept', outcome: 'approved', request: { path: `/v1/disputes/${id}/close` } } });
    expect((await eventOf(intent, 'charge.dispute.closed')).dispute?.status).toBe('LOST');
    expect(double.state().disputes.find((d) => d.id === id).status).toBe('lost');
  });

  it('takes one submission: the same request again replays it, another is refused; a closed dispute refuses all', async () => {
    const { intent } = await pay(CARDS.fraud);
    const id = (await eventOf(intent, 'charge.dispute.created')).dispute!.processorDisputeId;
    const a = adapter();
    const submit = { credentials, processorDisputeId: id, idempotencyKey: 'dp_twice:submit', evidence: { uncategorized_text: 'receipt' }, reason: 'fraudulent' as const };
    expect((await a.submitDisputeEvidence(submit)).result).toBe('done');
    expect((await a.submitDisputeEvidence(submit)).result).toBe('done');
    const again = await a.submitDisputeEvidence({ ...submit, idempotencyKey: 'dp_twice:submit:2' });
    expect(again).toMatchObject({ result: 'refused', reason: expect.stringMatching(/already been submitted/), exchange: { outcome: 'hard_decline', response: { status: 400 } } });
    await eventOf(intent, 'charge.dispute.closed');
    const late = await a.acceptDispute({ credentials, processorDisputeId: id, idempotencyKey: 'dp_twice:accept' });
    expect(late).toMatchObject({ result: 'refused', reason: expect.stringMatching(/already closed/) });
    expect(double.state().dispute_requests.filter((r) => r.dispute === id).map((r) => [r.action, r.status])).toEqual([['update', 200], ['update', 400], ['close', 400]]);
  });

  it('refuses an answer past evidence_details.due_by', async () => {
    double.disputeTiming({ after_capture_ms: 50, decision_ms: 150, evidence_due_ms: 500 });
    const { intent } = await pay(CARDS.fraud);
    const created = await eventOf(intent, 'charge.dispute.created');
    await new Promise((resolve) => setTimeout(resolve, Date.parse(created.dispute!.evidenceDueBy!) - Date.now() + 1100));
    const id = created.dispute!.processorDisputeId;
    const a = adapter();
    const submitted = await a.submitDisputeEvidence({ credentials, processorDisputeId: id, idempotencyKey: 'dp_late:submit', evidence: { uncategorized_text: 'winning_evidence' }, reason: 'fraudulent' });
    expect(submitted).toMatchObject({ result: 'refused', reason: expect.stringMatching(/past due/) });
    expect(await a.acceptDispute({ credentials, processorDisputeId: id, idempotencyKey: 'dp_late:accept' })).toMatchObject({ result: 'refused', reason: expect.stringMatching(/past due/) });
  });

  it('comes only once a manual capture is made, and refunds of the charge are refused meanwhile', async () => {
    const { intent, chargeId } = await pay(CARDS.fraud, false);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(eventsOf(intent)).toEqual([]);
    const a = adapter();
    await a.capture({ credentials, currency: 'usd', idempotencyKey: `${chargeId}:capture`, providerReference: intent });
    await eventOf(intent, 'charge.dispute.funds_withdrawn');
    const refund = await a.refund({ credentials, idempotencyKey: `re_${chargeId}`, providerReference: intent, amount: 500, currency: 'USD' });
    expect(refund.outcome.kind).toMatch(/_decline$/);
    expect(refund.exchange.provider_code).toBe('charge_disputed');
  });
});

describe('inquiries', () => {
  it('an inquiry (4000000000001976) waits for an answer without money moving, and closes once answered', async () => {
    const { intent } = await pay(CARDS.inquiry);
    const created = await eventOf(intent, 'charge.dispute.created');
    expect(created.dispute).toMatchObject({ status: 'WARNING_NEEDS_RESPONSE', isInquiry: true, reason: 'general' });
    const id = created.dispute!.processorDisputeId;
    expect((await adapter().submitDisputeEvidence({ credentials, processorDisputeId: id, idempotencyKey: 'dp_inq:submit', evidence: { product_description: 'A mug' }, reason: 'general' })).result).toBe('done');
    expect((await eventOf(intent, 'charge.dispute.updated')).dispute?.status).toBe('WARNING_UNDER_REVIEW');
    expect((await eventOf(intent, 'charge.dispute.closed')).dispute?.status).toBe('WARNING_CLOSED');
    expect(eventsOf(intent).filter((e) => e.dispute?.funds)).toEqual([]);
  });

  it('an early fraud warning (4000000000005423) closes by itself', async () => {
    const { intent } = await pay(CARDS.warning);
    expect((await eventOf(intent, 'charge.dispute.created')).dispute).toMatchObject({ status: 'WARNING_NEEDS_RESPONSE', isInquiry: true, reason: 'fraudulent' });
    expect((await eventOf(intent, 'charge.dispute.closed')).dispute?.status).toBe('WARNING_CLOSED');
    expect(eventsOf(intent).map((e) => e.type)).toEqual(['charge.dispute.created', 'charge.dispute.closed']);
  });

  it('an ordinary card is not disputed', async () => {
    const { intent } = await pay(CARDS.plain);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(double.state().disputes.filter((d) => d.payment_intent === intent)).toEqual([]);
  });
});

describe('when Stripe does not answer', () => {
  it('an action whose answer is lost is done when the dispute shows it (Stripe replays a stored 5xx), else failed', async () => {
    const { intent } = await pay(CARDS.fraud);
    const id = (await eventOf(intent, 'charge.dispute.created')).dispute!.processorDisputeId;
    const a = adapter();
    // Closed, then answered 500: the dispute (looked up) is lost, so the accept is done.
    double.behave({ match: 'POST /v1/disputes', fail_with_500: true });
    const five = await a.acceptDispute({ credentials, processorDisputeId: id, idempotencyKey: 'dp_500:accept' });
    expect(five).toMatchObject({ result: 'done', exchange: { operation: 'dispute_accept', outcome: 'approved', request: { method: 'GET', path: `/v1/disputes/${id}` } } });
    // Answered 500 and not done (refused underneath, the dispute being closed): failed.
    double.behave({ match: 'POST /v1/disputes', fail_with_500: true });
    const notDone = await a.submitDisputeEvidence({ credentials, processorDisputeId: id, idempotencyKey: 'dp_500:submit', evidence: { uncategorized_text: 'x' }, reason: 'fraudulent' });
    expect(notDone).toMatchObject({ result: 'failed', error: expect.stringMatching(/500/), exchange: { operation: 'dispute_submit', outcome: 'unknown', response: { status: 500 } } });
    // The library tries a dropped request again under its key (and gets the stored answer): every try dropped.
    double.behave({ match: 'POST /v1/disputes', drop_connection: true, times: 5 });
    const dropped = await a.submitDisputeEvidence({ credentials, processorDisputeId: id, idempotencyKey: 'dp_drop:submit', evidence: { uncategorized_text: 'x' }, reason: 'fraudulent' });
    expect(dropped).toMatchObject({ result: 'failed', exchange: { outcome: 'unknown' } });
    expect(dropped.exchange.response).toBeUndefined();
    double.behave({ times: 0 });
    const nowhere = await createStripeAdapter({ apiBase: 'http://127.0.0.1:9', timeoutMs: 2000 })
      .acceptDispute({ credentials, processorDisputeId: id, idempotencyKey: 'dp_refused:accept' });
    expect(nowhere).toMatchObject({ result: 'failed', error: expect.stringMatching(/ECONNREFUSED/), exchange: { outcome: 'transport_error' } });
    const missing = await a.acceptDispute({ credentials, processorDisputeId: 'du_nothere', idempotencyKey: 'dp_none:accept' });
    expect(missing).toMatchObject({ result: 'refused', reason: 'No such dispute: \'du_nothere\'', exchange: { provider_code: 'resource_missing', response: { status: 404 } } });
  });
});
