import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAdyenAdapter, parseAdyenWebhook } from '../../activities/providers/adyen';
import type { ProcessorEvent } from '../../activities/providers/types';
import type { DisputeStatus } from '../../lib/providers/disputes';
import { AdyenDouble, startAdyenDouble } from '../doubles/adyen/server';

// The adyen connector's disputes against the double, without Postgres or Temporal: the dispute test cards
// dispute a captured payment by signed notifications (verified and parsed here as the API does), and the
// adapter answers through the Disputes API v30: a defense won or lost, an acceptance, an inquiry, a second
// defense and one after the defense period refused, a 5xx failed.

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const credentials = { api_key: 'AQE_dispute_test_key_0001', merchant_account: 'SwitchboardECOM', hmac_key: HMAC_KEY };

let double: AdyenDouble;
let server: Server;
const events: ProcessorEvent[] = [];
let n = 0;

beforeAll(async () => {
  double = await startAdyenDouble();
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const verdict = parseAdyenWebhook({ rawBody: Buffer.concat(chunks).toString('utf8'), headers: {}, credentials });
      if (!verdict.verified) return void res.writeHead(401).end();
      events.push(...verdict.events);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('[accepted]');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  double.setWebhook({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, hmacKey: HMAC_KEY });
});

afterAll(async () => {
  await double?.close();
  await new Promise<void>((resolve) => { server?.closeAllConnections(); server?.close(() => resolve()); });
});

beforeEach(() => {
  double.behave({ times: 0 });
  double.disputeTiming({ after_capture_ms: 20, defense_period_ms: 60_000, decision_ms: 50 });
});

const adapter = () => createAdyenAdapter({ apiBase: double.url, timeoutMs: 5_000 });

async function until<T>(read: () => T | undefined, ms = 5_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A captured payment with `number`, and its dispute's pspReference once its first notification came. */
async function disputed(number: string): Promise<{ chargeId: string; payment: string; dispute: string }> {
  const chargeId = `ch_dispute${Date.now()}${(n += 1)}`;
  const out = await adapter().authorize({
    credentials, idempotencyKey: chargeId, amount: 2500, currency: 'EUR', installments: 1, capture: true,
    card: { number, exp_month: 3, exp_year: new Date().getFullYear() + 2, cvc: '737', holder_name: 'Ada Lovelace' },
  });
  expect(out.outcome.kind).toBe('approved');
  const payment = 'providerReference' in out.outcome ? out.outcome.providerReference : '';
  const first = await until(() => events.find((e) => e.dispute?.providerReference === payment));
  return { chargeId, payment, dispute: first.dispute!.processorDisputeId };
}

const statusOf = (dispute: string, status: DisputeStatus) => until(() => events.find((e) => e.dispute?.processorDisputeId === dispute && e.dispute.status === status));
const input = (dispute: string, suffix = 'submit') => ({ credentials, processorDisputeId: dispute, idempotencyKey: `dp_${dispute}:${suffix}` });

describe('adyen disputes against the double', () => {
  it('0259: a chargeback, defended with winning evidence, is won and the money comes back', async () => {
    const { chargeId, payment, dispute } = await disputed('4000000000000259');
    const opened = await statusOf(dispute, 'NEEDS_RESPONSE');
    expect(opened.dispute).toMatchObject({ chargeId, providerReference: payment, reason: 'fraudulent', processorReason: '10.4', amount: 2500, currency: 'EUR', isInquiry: false });
    expect(opened.dispute?.evidenceDueBy).toBeDefined();
    const withdrawn = await until(() => events.find((e) => e.dispute?.processorDisputeId === dispute && e.type === 'CHARGEBACK'));
    expect(withdrawn.dispute?.funds).toEqual({ kind: 'withdrawn', amount: 2500, fee: 0, currency: 'EUR' });

    const out = await adapter().submitDisputeEvidence({ ...input(dispute), reason: 'fraudulent', evidence: { customer_name: 'Ada', uncategorized_text: 'winning_evidence' } });
    expect(out).toMatchObject({ result: 'done', exchange: { operation: 'dispute_submit', outcome: 'approved', request: { path: '/ca/services/DisputeService/v30/defendDispute' } } });
    expect(JSON.stringify(out.exchange)).not.toContain('winning_evidence');
    const won = await statusOf(dispute, 'WON');
    expect(won.dispute?.funds).toEqual({ kind: 'reinstated', amount: 2500, fee: 0, currency: 'EUR' });
    const held = double.disputes().find((d) => d.pspReference === dispute)!;
    expect(held).toMatchObject({ status: 'Won', defenseReasonCode: 'CompellingEvidence' });
    expect(held.documents[0]).toMatchObject({ defenseDocumentTypeCode: 'CompellingEvidence', contentType: 'application/pdf', text: expect.stringContaining('winning_evidence') });

    // The same submission retried replays (one key per call); a second defense is refused, as Adyen does.
    expect((await adapter().submitDisputeEvidence({ ...input(dispute), reason: 'fraudulent', evidence: { uncategorized_text: 'winning_evidence' } })).result).toBe('done');
    const again = await adapter().submitDisputeEvidence({ ...input(dispute, 'submit2'), reason: 'fraudulent', evidence: { uncategorized_text: 'more' } });
    expect(again).toMatchObject({ result: 'refused', reason: 'Dispute is already defended', exchange: { outcome: 'hard_decline' } });
  });

  it('0259: defended without winning evidence, the dispute is lost', async () => {
    const { dispute } = await disputed('4000000000000259');
    const out = await adapter().submitDisputeEvidence({ ...input(dispute), reason: 'fraudulent', evidence: { uncategorized_text: 'we shipped it' } });
    expect(out.result).toBe('done');
    const lost = await statusOf(dispute, 'LOST');
    expect(lost.type).toBe('PREARBITRATION_LOST');
    expect(lost.dispute?.funds).toBeUndefined();
  });

  it('an accepted chargeback is lost, and answers no more', async () => {
    const { dispute } = await disputed('4000000000000259');
    const out = await adapter().acceptDispute(input(dispute, 'accept'));
    expect(out).toMatchObject({ result: 'done', exchange: { operation: 'dispute_accept', request: { path: '/ca/services/DisputeService/v30/acceptDispute' } } });
    expect((await statusOf(dispute, 'LOST')).type).toBe('DISPUTE_DEFENSE_PERIOD_ENDED');
    const late = await adapter().submitDisputeEvidence({ ...input(dispute), reason: 'fraudulent', evidence: { uncategorized_text: 'winning_evidence' } });
    expect(late).toMatchObject({ result: 'refused', reason: 'Dispute is already accepted' });
  });

  it('past the defense period a defense is refused, and Adyen reports the dispute ended', async () => {
    double.disputeTiming({ defense_period_ms: 300 });
    const { dispute } = await disputed('4000000000000259');
    expect((await statusOf(dispute, 'LOST')).dispute).toMatchObject({ status: 'LOST' });
    const late = await adapter().submitDisputeEvidence({ ...input(dispute), reason: 'fraudulent', evidence: { uncategorized_text: 'winning_evidence' } });
    expect(late).toMatchObject({ result: 'refused', reason: 'Defense period has ended' });
  });

  it('1976: an inquiry, answered, closes', async () => {
    const { dispute } = await disputed('4000000000001976');
    expect((await statusOf(dispute, 'WARNING_NEEDS_RESPONSE')).dispute).toMatchObject({ isInquiry: true, reason: 'fraudulent' });
    const out = await adapter().submitDisputeEvidence({ ...input(dispute), reason: 'fraudulent', evidence: { product_description: 'a book' } });
    expect(out.result).toBe('done');
    expect(double.disputes().find((d) => d.pspReference === dispute)?.defenseReasonCode).toBe('SupplyDefenseMaterial');
    expect((await statusOf(dispute, 'WARNING_CLOSED')).dispute?.funds).toBeUndefined();
  });

  it('5423: an early fraud warning closes by itself, no money moved', async () => {
    const { dispute } = await disputed('4000000000005423');
    await statusOf(dispute, 'WARNING_NEEDS_RESPONSE');
    await statusOf(dispute, 'WARNING_CLOSED');
    expect(events.filter((e) => e.dispute?.processorDisputeId === dispute && e.dispute.funds)).toEqual([]);
  });

  it('a 5xx from the Disputes API is a failure to retry; an unknown dispute is refused', async () => {
    const { dispute } = await disputed('4000000000000259');
    double.behave({ fail_with_500: true, match: 'POST /ca/services/DisputeService/v30/defendDispute' });
    const failed = await adapter().submitDisputeEvidence({ ...input(dispute), reason: 'fraudulent', evidence: { uncategorized_text: 'winning_evidence' } });
    expect(failed).toMatchObject({ result: 'failed', exchange: { response: { status: 500 } } });
    // Adyen did the defense before its 500: the retry under the same key gets the stored answer.
    expect((await adapter().submitDisputeEvidence({ ...input(dispute), reason: 'fraudulent', evidence: { uncategorized_text: 'winning_evidence' } })).result).toBe('done');
    expect((await adapter().acceptDispute(input('NOSUCHDISPUTE000', 'accept'))).result).toBe('refused');
  });
});
