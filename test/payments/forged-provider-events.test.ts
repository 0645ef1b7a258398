import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { findTemporalCli } from '../../scripts/temporal-cli';
import { bearer, Merchant, RunningWorker, sandboxMerchant, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, confirm, createPayment, getPayment } from '../support/payments';
import { createConfig, registerConnector } from '../support/routing';
import { eventually } from '../support/worker-process';
import { startAdyenDouble, AdyenDouble } from '../doubles/adyen/server';
import { PROVIDER_EVENT_SIGNAL, type ProviderEventSignal } from '../../contracts/temporal';
import { paymentWorkflowId } from '../../contracts/payments';
import { refundQueries, refundWorkflowId } from '../../contracts/refunds';

// Anyone who reaches the Temporal server can send the `providerEvent` signal (docs/security.md). These
// tests send it straight through a Temporal client, as such an attacker would, with made-up outcomes:
// the activities apply only the events POST /v1/provider-webhooks stored after verifying Adyen's
// signature, so a forged signal changes nothing and the genuine notification still settles the step.

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';

let adyen: AdyenDouble;
let stack: TestStack;
let worker: RunningWorker;
let merchant: Merchant;
let adyenConfig: any;

const webhookPath = (configId: string) => `/v1/provider-webhooks/${configId}`;
const APPROVED = (amount: number, providerReference = 'FORGED0000000001') => ({
  kind: 'approved' as const, providerReference, authorizedAmount: amount, capturedAmount: amount, refundedAmount: amount, refundReference: 'FORGEDREFUND0001',
});

function holderCard(number: string) {
  return { type: 'CARD', card: { number, exp_month: 3, exp_year: new Date().getFullYear() + 3, cvc: '737', holder_name: 'John Smith' } };
}

async function payWith(create: Record<string, unknown> = {}, paymentMethod = holderCard(CARDS.visa)) {
  const created = await createPayment(stack, merchant, { amount: 5000, ...create });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const res = await confirm(stack, merchant, created.body.data.id, { payment_method: paymentMethod });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return getPayment(stack, merchant, created.body.data.id);
}

const settled = (paymentId: string, test: (p: any) => boolean) => eventually(async () => {
  const p = await getPayment(stack, merchant, paymentId);
  return test(p) ? p : undefined;
}, 30_000, 100);

async function signal(workflowId: string, event: ProviderEventSignal) {
  const client = await stack.deps.temporal();
  await client.workflow.getHandle(workflowId).signal(PROVIDER_EVENT_SIGNAL, event);
}

/**
 * How often the workflow has run `activity` so far (its completed tasks in the history); with
 * `afterSignals`, only runs scheduled after the last `providerEvent` signal arrived.
 */
async function completedRuns(workflowId: string, activity: string, afterSignals = false): Promise<number> {
  const client = await stack.deps.temporal();
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const lastSignal = afterSignals
    ? Math.max(...events.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === PROVIDER_EVENT_SIGNAL).map((e) => Number(e.eventId)))
    : 0;
  const scheduled = new Map<string, string>();
  let completed = 0;
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes && Number(e.eventId) > lastSignal) {
      scheduled.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name ?? '');
    }
    const done = e.activityTaskCompletedEventAttributes;
    if (done && scheduled.get(String(done.scheduledEventId)) === activity) completed += 1;
  }
  return completed;
}

async function failedWorkflowTasks(workflowId: string): Promise<number> {
  const history = await (await stack.deps.temporal()).workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes).length;
}

/** Waits until the workflow has run `activity` `times` times: the forged signal was looked at, not just not yet. */
const ranTimes = (workflowId: string, activity: string, times: number) =>
  eventually(async () => (await completedRuns(workflowId, activity)) >= times || undefined, 30_000, 100);

/**
 * With RECORD_HISTORIES naming it (test/payments/replay.test.ts replays test/histories/), writes the
 * workflow's history as `temporal workflow show --output json` exports it: the paths where a forged
 * signal is ignored and the step goes on waiting.
 */
function recordHistory(name: string, workflowId: string) {
  const asked = process.env.RECORD_HISTORIES ?? '';
  if (asked !== '1' && !asked.split(',').includes(name)) return;
  const json = execFileSync(findTemporalCli('temporal')!, [
    'workflow', 'show', '--workflow-id', workflowId, '--output', 'json', '--address', stack.config.temporal.address!, '--namespace', stack.config.temporal.namespace,
  ], { encoding: 'utf8' });
  writeFileSync(join(__dirname, '..', 'histories', `${name}.json`), JSON.stringify(JSON.parse(json), null, 1));
}

const notificationsOf = (charge: any) => charge.exchanges.filter((e: any) => e.request.method === 'NOTIFICATION');

beforeEach(() => {
  adyen.behave({ times: 0 });
  adyen.holdNotifications(false);
});

beforeAll(async () => {
  adyen = await startAdyenDouble();
  stack = await startStack({ PROVIDER_TIMEOUT_MS: '5000' });
  worker = await startWorker(stack);
  const adyenProvider = await registerConnector(stack, 'adyen', adyen.url);
  merchant = await sandboxMerchant(stack);
  adyenConfig = await createConfig(stack, merchant, adyenProvider.id, {
    name: 'Adyen', credentials: { api_key: 'AQE_test_api_key_0001', merchant_account: 'SwitchboardECOM', hmac_key: HMAC_KEY },
  });
  adyen.setWebhook({ url: `${stack.baseUrl}${webhookPath(adyenConfig.id)}`, hmacKey: HMAC_KEY });
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await adyen?.close();
});

describe('a forged providerEvent signal', () => {
  it('leaves a payment waiting for 3-D Secure in REQUIRES_ACTION; the customer\'s real completion still settles it', async () => {
    adyen.holdNotifications(true);
    const created = await createPayment(stack, merchant, { amount: 3100 });
    const paymentId = created.body.data.id;
    const res = await confirm(stack, merchant, paymentId, { payment_method: holderCard('4000002760003184') });
    expect(res.body.data.status, JSON.stringify(res.body)).toBe('REQUIRES_ACTION');
    const [charge] = (await getPayment(stack, merchant, paymentId)).charges;
    const workflowId = paymentWorkflowId(paymentId);

    await signal(workflowId, { eventId: 'pev_01FORGED00000000000000000', type: 'AUTHORISATION', operation: 'authorize', chargeId: charge.id, outcome: APPROVED(3100) });
    await ranTimes(workflowId, 'completeAuthentication', 1);
    // A forged refusal is ignored too (it would fail the payment); malformed ones (no object, an event id
    // that is no string) do not even fail a workflow task.
    await signal(workflowId, null as unknown as ProviderEventSignal);
    await signal(workflowId, { eventId: 42 as unknown as string, type: 'AUTHORISATION', operation: 'authorize', chargeId: charge.id, outcome: APPROVED(3100) });
    await signal(workflowId, { eventId: 'pev_01FORGED00000000000000002', type: 'AUTHORISATION', operation: 'authorize', chargeId: charge.id, outcome: { kind: 'hard_decline', declineCode: 'stolen_card' } });
    await ranTimes(workflowId, 'completeAuthentication', 2);
    expect(await failedWorkflowTasks(workflowId)).toBe(0);

    const waiting = await getPayment(stack, merchant, paymentId);
    expect(waiting).toMatchObject({ status: 'REQUIRES_ACTION', amount_received: 0 });
    expect(waiting.charges.map((c: any) => c.status)).toEqual(['REQUIRES_ACTION']);
    expect(notificationsOf(waiting.charges[0])).toEqual([]);

    // The shopper completes the challenge; Adyen's signed AUTHORISATION settles the payment.
    adyen.holdNotifications(false);
    const back = await fetch(res.body.data.next_action.redirect_to_url.url, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'action=approve', redirect: 'manual',
    });
    expect([200, 303]).toContain(back.status);
    const done = await settled(paymentId, (p) => p.status !== 'REQUIRES_ACTION' && p.status !== 'PROCESSING');
    expect(done).toMatchObject({ status: 'SUCCEEDED', amount_received: 3100 });
    expect(done.charges.map((c: any) => c.status)).toEqual(['CAPTURED']);
    recordHistory('payment-authentication-forged-signal', workflowId);
  });

  it('leaves an UNKNOWN charge being reconciled unknown; Adyen\'s AUTHORISATION still settles it', async () => {
    adyen.holdNotifications(true);
    adyen.behave({ fail_with_500: true, match: 'POST /v71/payments' });
    const created = await createPayment(stack, merchant, { amount: 2600, auto_capture: false });
    const paymentId = created.body.data.id;
    const confirming = confirm(stack, merchant, paymentId, { payment_method: holderCard(CARDS.visa) });
    const charge = await eventually(async () => {
      const row = await stack.db('sandbox.charges').where({ payment_id: paymentId }).first();
      return row?.status === 'UNKNOWN' ? row : undefined;
    }, 30_000, 25);
    const workflowId = paymentWorkflowId(paymentId);
    await signal(workflowId, { eventId: 'pev_01FORGED00000000000000003', type: 'AUTHORISATION', operation: 'authorize', chargeId: charge.id, outcome: APPROVED(2600) });
    // The reconciliation the signal woke (and any after it) ran; none settled the charge.
    await eventually(async () => (await completedRuns(workflowId, 'reconcileCharge', true)) >= 1 || undefined, 30_000, 100);

    expect((await getPayment(stack, merchant, paymentId)).status).toBe('PROCESSING');
    expect((await stack.db('sandbox.charges').where({ id: charge.id }).first()).status).toBe('UNKNOWN');

    await adyen.releaseNotifications();
    adyen.holdNotifications(false);
    const done = await settled(paymentId, (p) => p.status === 'AUTHORIZED');
    await confirming;
    expect(done.charges[0]).toMatchObject({ id: charge.id, status: 'AUTHORIZED', authorized_amount: 2600 });
    expect(notificationsOf(done.charges[0])).toHaveLength(1);
  });

  it('leaves a pending capture pending, even with the real event id of another charge\'s capture; the real CAPTURE still completes it', async () => {
    // A capture settled for real: its stored event is what an attacker reading histories could reuse.
    const first = await payWith({ auto_capture: false });
    await stack.http.post(`/v1/payments/${first.id}/capture`).set(bearer(merchant.secretKey)).send({});
    await settled(first.id, (p) => p.status === 'SUCCEEDED');
    const [realEvent] = await stack.db('sandbox.provider_events').where({ charge_id: first.charges[0].id, operation: 'capture' });
    expect(realEvent.id).toMatch(/^pev_/);

    const p = await payWith({ auto_capture: false });
    const chargeId = p.charges[0].id;
    adyen.holdNotifications(true);
    const res = await stack.http.post(`/v1/payments/${p.id}/capture`).set(bearer(merchant.secretKey)).send({ amount: 3000 });
    expect(res.body.data).toMatchObject({ status: 'AUTHORIZED', pending_operation: { type: 'capture', amount: 3000 } });
    const workflowId = paymentWorkflowId(p.id);

    await signal(workflowId, { eventId: 'pev_01FORGED00000000000000004', type: 'CAPTURE', operation: 'capture', chargeId, outcome: APPROVED(5000) });
    await signal(workflowId, { eventId: realEvent.id, type: 'CAPTURE', operation: 'capture', chargeId, outcome: APPROVED(5000) });
    await ranTimes(workflowId, 'settleOperation', 2);

    const waiting = await getPayment(stack, merchant, p.id);
    expect(waiting).toMatchObject({ status: 'AUTHORIZED', amount_received: 0, pending_operation: { type: 'capture', amount: 3000 }, last_error: null });
    expect(waiting.charges[0]).toMatchObject({ status: 'AUTHORIZED', captured_amount: 0 });
    expect(notificationsOf(waiting.charges[0]).filter((e: any) => e.operation === 'capture')).toEqual([]);

    await adyen.releaseNotifications();
    adyen.holdNotifications(false);
    const done = await settled(p.id, (x) => x.status === 'SUCCEEDED');
    expect(done).toMatchObject({ amount_received: 3000, pending_operation: null });
    expect(done.charges[0]).toMatchObject({ status: 'CAPTURED', captured_amount: 3000 });
    recordHistory('payment-capture-forged-signal', workflowId);
  });

  it('leaves a refund awaiting its notification PENDING, even with another refund\'s real event id; the real REFUND still settles it', async () => {
    const p = await payWith();
    const earlier = await stack.http.post('/v1/refunds').set(bearer(merchant.secretKey)).send({ payment_id: p.id, amount: 1000 });
    const earlierId = earlier.body.data.id;
    await eventually(async () => (await stack.db('sandbox.refunds').where({ id: earlierId }).first())?.status === 'SUCCEEDED' || undefined, 30_000, 100);
    const [realEvent] = await stack.db('sandbox.provider_events').where({ refund_id: earlierId });
    expect(realEvent.id).toMatch(/^pev_/);

    adyen.holdNotifications(true);
    const res = await stack.http.post('/v1/refunds').set(bearer(merchant.secretKey)).send({ payment_id: p.id, amount: 1500 });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const refundId = res.body.data.id;
    const workflowId = refundWorkflowId(refundId);
    await eventually(async () => (await completedRuns(workflowId, 'refundCharge')) >= 1 || undefined, 30_000, 100);

    const chargeId = p.charges[0].id;
    await signal(workflowId, { eventId: 'pev_01FORGED00000000000000005', type: 'REFUND', operation: 'refund', chargeId, refundId, outcome: APPROVED(1500) });
    await signal(workflowId, null as unknown as ProviderEventSignal);
    await signal(workflowId, { eventId: realEvent.id, type: 'REFUND', operation: 'refund', chargeId, refundId, outcome: { kind: 'hard_decline', declineCode: 'refund_declined' } });
    await ranTimes(workflowId, 'settleRefundNotification', 2);
    expect(await failedWorkflowTasks(workflowId)).toBe(0);

    const refund = await stack.db('sandbox.refunds').where({ id: refundId }).first();
    expect(refund.status).toBe('PENDING');
    const charge = await stack.db('sandbox.charges').where({ id: chargeId }).first();
    expect(Number(charge.refunded_amount)).toBe(1000);
    expect(Number(charge.pending_refund_amount)).toBe(1500);

    await adyen.releaseNotifications();
    adyen.holdNotifications(false);
    const done = await eventually(async () => {
      const row = await stack.db('sandbox.refunds').where({ id: refundId }).first();
      return row.status !== 'PENDING' ? row : undefined;
    }, 30_000, 100);
    expect(done.status).toBe('SUCCEEDED');
    const after = await stack.db('sandbox.charges').where({ id: chargeId }).first();
    expect(Number(after.refunded_amount)).toBe(2500);
    expect(Number(after.pending_refund_amount)).toBe(0);
    // Settled, the workflow listens on for Adyen taking the refund back (REFUNDED_REVERSED, docs/refunds.md).
    await eventually(async () => (await (await stack.deps.temporal()).workflow.getHandle(workflowId).query(refundQueries.state)).reversibleUntil !== undefined || undefined, 10_000, 100);
    recordHistory('refund-forged-signal', workflowId);
  });
});
