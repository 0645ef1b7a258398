import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { startSimulator, TestSimulator } from '../support/payments';
import { eventually } from '../support/worker-process';
import { disputeUpdates, disputeWorkflowId } from '../../contracts/disputes';
import { DISPUTE_CARDS, disputeEvents, disputeFixture, disputeOf, getDispute, paidWith, recordDisputeHistory } from './support';

// Disputes end to end through the sandbox processor: its dispute test cards dispute a charge after
// capture by a signed notification; the engine makes the dispute, holds its deadline, and takes the
// merchant's evidence or acceptance to the processor, which decides.

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let f: Awaited<ReturnType<typeof disputeFixture>>;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '5000' });
  worker = await startWorker(stack);
  f = await disputeFixture(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

const post = (path: string, body: Record<string, unknown>) => stack.http.post(path).set(bearer(f.merchant.secretKey)).send(body);
const WINNING = { customer_name: 'Jenny Rosen', product_description: 'A year of the Pro plan', uncategorized_text: 'Delivered; signed for. winning_evidence' };

describe('a fraudulent chargeback', () => {
  it('is made from the processor\'s notice with the money it withdrew, marks the payment disputed and refuses its refund', async () => {
    const paymentId = await paidWith(stack, f.merchant, DISPUTE_CARDS.fraudulent);
    const dispute = await disputeOf(stack, f.merchant, paymentId, (d) => d.balance_transactions.length > 0);
    expect(dispute).toMatchObject({
      object: 'dispute', payment_id: paymentId, amount: 4200, currency: 'USD', reason: 'fraudulent', status: 'NEEDS_RESPONSE', is_inquiry: false,
    });
    expect(dispute.id).toMatch(/^dp_/);
    expect(Date.parse(dispute.evidence_due_by)).toBeGreaterThan(Date.now() + 6 * 86_400_000);
    expect(dispute.balance_transactions[0]).toMatchObject({ kind: 'withdrawn', amount: 4200 });
    const payment = (await stack.http.get(`/v1/payments/${paymentId}?include_charges=true`).set(bearer(f.merchant.secretKey))).body.data;
    expect(payment).toMatchObject({ disputed: true, amount_disputed: 4200 });
    expect(payment.charges[0]).toMatchObject({ disputed: true, amount_disputed: 4200 });
    const refund = await post('/v1/refunds', { payment_id: paymentId });
    expect(refund.status, JSON.stringify(refund.body)).toBe(409);
    expect(refund.body.error.details.reason).toBe('charge_disputed');
    expect(await disputeEvents(stack, dispute.id)).toEqual(['charge.dispute.created', 'charge.dispute.funds_withdrawn']);
  });

  it('is won with evidence that wins: under review, then WON with its funds reinstated; a second submission is refused', async () => {
    const paymentId = await paidWith(stack, f.merchant, DISPUTE_CARDS.fraudulent);
    const dispute = await disputeOf(stack, f.merchant, paymentId);
    const saved = await post(`/v1/disputes/${dispute.id}/evidence`, { customer_name: 'Jenny Rosen' });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    expect(saved.body.data).toMatchObject({ status: 'NEEDS_RESPONSE', evidence_submitted_at: null, evidence: { customer_name: 'Jenny Rosen' } });
    const submitted = await post(`/v1/disputes/${dispute.id}/evidence`, { ...WINNING, submit: true });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
    expect(submitted.body.data.status).toBe('UNDER_REVIEW');
    const again = await post(`/v1/disputes/${dispute.id}/evidence`, { ...WINNING, submit: true });
    expect(again.status).toBe(409);

    const won = await disputeOf(stack, f.merchant, paymentId, (d) => d.status === 'WON' && d.balance_transactions.length === 2);
    expect(won.balance_transactions.map((b: any) => b.kind)).toEqual(['withdrawn', 'reinstated']);
    expect(await disputeEvents(stack, dispute.id)).toEqual(expect.arrayContaining(['charge.dispute.closed', 'charge.dispute.funds_reinstated']));
    recordDisputeHistory(stack, 'won', dispute.id);
  });

  it('keeps the evidence out of the workflow\'s history, and refuses an answer the API did not send', async () => {
    const paymentId = await paidWith(stack, f.merchant, DISPUTE_CARDS.fraudulent);
    const dispute = await disputeOf(stack, f.merchant, paymentId);
    const email = `jenny-${Date.now()}@example.com`;
    const saved = await post(`/v1/disputes/${dispute.id}/evidence`, { customer_email_address: email, billing_address: '1 Private Lane' });
    expect(saved.status, JSON.stringify(saved.body)).toBe(200);
    expect(saved.body.data.evidence).toMatchObject({ customer_email_address: email });
    const handle = (await stack.deps.temporal()).workflow.getHandle(disputeWorkflowId(dispute.id));
    const history = await handle.fetchHistory();
    // Every payload as text, whether the history holds its bytes or its base64.
    const text = JSON.stringify(history, (k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('utf8')
      : k === 'data' && typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : v));
    expect(text).toContain('encryptedEvidence');
    for (const needle of [email, '1 Private Lane']) expect(text).not.toContain(needle);
    // Someone who reaches Temporal sends an answer of their own: refused, nothing applied.
    const forged = await handle.executeUpdate(disputeUpdates.answer, {
      args: [{ answer: { kind: 'accept' }, seal: 'x'.repeat(43), context: { actor: { type: 'system', id: 'forger' } } }],
    });
    expect(forged).toMatchObject({ applied: false, code: 'unsealed_command' });
    expect((await getDispute(stack, f.merchant, dispute.id)).status).toBe('NEEDS_RESPONSE');
  });

  it('is lost with evidence that does not win, and lost at once when accepted', async () => {
    const lostPayment = await paidWith(stack, f.merchant, DISPUTE_CARDS.fraudulent);
    const lost = await disputeOf(stack, f.merchant, lostPayment);
    expect((await post(`/v1/disputes/${lost.id}/evidence`, { uncategorized_text: 'We think it was fine.', submit: true })).status).toBe(200);
    await disputeOf(stack, f.merchant, lostPayment, (d) => d.status === 'LOST');

    const acceptedPayment = await paidWith(stack, f.merchant, DISPUTE_CARDS.fraudulent);
    const accepted = await disputeOf(stack, f.merchant, acceptedPayment);
    const res = await post(`/v1/disputes/${accepted.id}/accept`, {});
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.status).toBe('LOST');
    expect((await post(`/v1/disputes/${accepted.id}/evidence`, { ...WINNING, submit: true })).status).toBe(409);
    recordDisputeHistory(stack, 'accepted', accepted.id);
  });
});

describe('an inquiry', () => {
  it('waits for an answer as a warning, and closes once answered', async () => {
    const paymentId = await paidWith(stack, f.merchant, DISPUTE_CARDS.inquiry);
    const inquiry = await disputeOf(stack, f.merchant, paymentId);
    expect(inquiry).toMatchObject({ status: 'WARNING_NEEDS_RESPONSE', is_inquiry: true, balance_transactions: [] });
    expect((await post(`/v1/disputes/${inquiry.id}/evidence`, { ...WINNING, submit: true })).status).toBe(200);
    await disputeOf(stack, f.merchant, paymentId, (d) => d.status === 'WARNING_CLOSED');
  });

  it('an early fraud warning closes by itself, moving no money', async () => {
    const paymentId = await paidWith(stack, f.merchant, DISPUTE_CARDS.earlyFraudWarning);
    const warning = await disputeOf(stack, f.merchant, paymentId, (d) => d.status === 'WARNING_CLOSED');
    expect(warning.balance_transactions).toEqual([]);
  });
});

describe('notices duplicated and out of order', () => {
  it('apply once each, and a late earlier status never moves a dispute back', async () => {
    await fetch(`${sim.url}/_inspect/notifications/hold`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ hold: true }) });
    const paymentId = await paidWith(stack, f.merchant, DISPUTE_CARDS.fraudulent);
    // The payment's own notices and the dispute's (created, funds withdrawn) are held, then sent twice each, newest first.
    await eventually(async () => {
      const held = await (await fetch(`${sim.url}/_inspect/notifications`)).json() as any;
      return JSON.stringify(held).includes('dispute') || undefined;
    }, 15_000, 100);
    await fetch(`${sim.url}/_inspect/notifications/release`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ duplicate: true, reverse: true }) });
    await fetch(`${sim.url}/_inspect/notifications/hold`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ hold: false }) });
    const dispute = await disputeOf(stack, f.merchant, paymentId, (d) => d.balance_transactions.length > 0);
    // Let every duplicate land, then check nothing was applied twice.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const after = await getDispute(stack, f.merchant, dispute.id);
    expect(after).toMatchObject({ status: 'NEEDS_RESPONSE' });
    expect(after.balance_transactions).toHaveLength(1);
    expect((await disputeEvents(stack, dispute.id)).filter((e) => e === 'charge.dispute.funds_withdrawn')).toHaveLength(1);
  });
});

describe('the evidence deadline', () => {
  it('reminds, then marks the dispute overdue and tells the account; a late submission is refused', async () => {
    // The processor closes an unanswered dispute a while after its deadline: long enough here to answer late.
    const short = await disputeFixture(stack, { dispute_due_in_ms: 4000, dispute_decision_ms: 120_000 });
    const paymentId = await paidWith(stack, short.merchant, DISPUTE_CARDS.fraudulent);
    const dispute = await disputeOf(stack, short.merchant, paymentId);
    const overdue = await disputeOf(stack, short.merchant, paymentId, (d) => d.evidence_details?.past_due === true, 30_000);
    expect(overdue.status).toBe('NEEDS_RESPONSE');
    expect(await disputeEvents(stack, dispute.id)).toEqual(expect.arrayContaining(['charge.dispute.evidence_due_soon', 'charge.dispute.updated']));
    const notifications = await stack.db('core.notifications').where({ account_id: short.merchant.account.id, type: 'dispute.evidence_overdue' });
    expect(notifications).toHaveLength(1);
    const late = await stack.http.post(`/v1/disputes/${dispute.id}/evidence`).set(bearer(short.merchant.secretKey)).send({ ...WINNING, submit: true });
    expect(late.status).toBe(409);
    expect(late.body.error.details).toMatchObject({ reason: 'invalid_state', refusal: 'evidence_past_due' });
    recordDisputeHistory(stack, 'overdue', dispute.id);
  });
});
