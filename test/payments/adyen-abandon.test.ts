import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Merchant, RunningWorker, sandboxMerchant, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, card, confirm, createPayment, getPayment } from '../support/payments';
import { createConfig, registerConnector } from '../support/routing';
import { eventually } from '../support/worker-process';
import { startAdyenDouble, AdyenDouble } from '../doubles/adyen/server';
import { paymentWorkflowId } from '../../contracts/payments';
import { PROVIDER_EVENT_SIGNAL, type ProviderEventSignal } from '../../contracts/temporal';

// A shopper who passes Adyen's challenge and never comes back: Switchboard cannot ask Adyen how the redirect
// ended without the shopper's redirectResult, so the payment is given up at AUTHENTICATION_TIMEOUT (the
// charge voided, as far as Adyen takes it) — and Adyen's AUTHORISATION that follows is reversed. The real
// API, Postgres and Temporal; the Adyen double's signed notifications through POST /v1/provider-webhooks/{config}.

const HMAC_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
/** Always challenged (3-D Secure), then authorised at the double. */
const CHALLENGED = '4000002760003184';

let adyen: AdyenDouble;
let stack: TestStack;
let worker: RunningWorker;
let merchant: Merchant;

const chargeRow = (id: string) => stack.db('sandbox.charges').where({ id }).first();
const atAdyen = (chargeId: string) => adyen.state().payments.find((p) => p.merchantReference === chargeId)!;
const reversalsOf = (reference: string) => adyen.state().modifications.filter((m) => m.type === 'reversals' && m.paymentPspReference === reference);

async function workflowStatus(paymentId: string): Promise<string> {
  const client = await stack.deps.temporal();
  return (await client.workflow.getHandle(paymentWorkflowId(paymentId)).describe()).status.name;
}

const settled = (paymentId: string, test: (p: any) => boolean) => eventually(async () => {
  const p = await getPayment(stack, merchant, paymentId);
  return test(p) ? p : undefined;
}, 30_000, 100);

/** The shopper completes the challenge at the double (the browser's POST) and does not follow the redirect back to us. */
async function authenticateWithoutReturn(url: string): Promise<void> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'action=approve', redirect: 'manual' });
  expect(res.headers.get('location')).toContain('redirectResult=');
}

/** A payment whose shopper authenticated at Adyen and never came back, given up at the timeout: FAILED, its charge and Adyen's reference. */
async function givenUp(amount: number, create: Record<string, unknown> = {}) {
  const created = await createPayment(stack, merchant, { amount, ...create });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const paymentId = created.body.data.id as string;
  const res = await confirm(stack, merchant, paymentId, { payment_method: card(CHALLENGED), return_url: 'https://shop.example.test/done' });
  expect(res.body.data.status, JSON.stringify(res.body)).toBe('REQUIRES_ACTION');
  await authenticateWithoutReturn(res.body.data.next_action.redirect_to_url.url);
  const failed = await settled(paymentId, (p) => p.status === 'FAILED');
  expect(failed.last_error).toMatchObject({ code: 'authentication_timeout' });
  const charge = failed.charges[0];
  return { paymentId, chargeId: charge.id as string, reference: charge.provider_reference as string };
}

beforeEach(() => {
  adyen.behave({ times: 0 });
  adyen.holdNotifications(false);
});

beforeAll(async () => {
  adyen = await startAdyenDouble();
  stack = await startStack({ PROVIDER_TIMEOUT_MS: '10000', AUTHENTICATION_TIMEOUT: '2s' });
  worker = await startWorker(stack);
  merchant = await sandboxMerchant(stack);
  const adyenProvider = await registerConnector(stack, 'adyen', adyen.url);
  const config = await createConfig(stack, merchant, adyenProvider.id, {
    name: 'Adyen', credentials: { api_key: 'AQE_test_abandon_0001', merchant_account: 'AbandonECOM', hmac_key: HMAC_KEY },
  });
  adyen.setWebhook({ url: `${stack.baseUrl}/v1/provider-webhooks/${config.id}`, hmacKey: HMAC_KEY });
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await adyen?.close();
});

describe('a charge given up while the shopper authenticated at Adyen', () => {
  it('reverses a late AUTHORISATION once (refunded: it was captured), the payment staying FAILED, a forged signal changing nothing', async () => {
    // Held: Adyen's AUTHORISATION and CAPTURE (the shopper's approval) and the CANCELLATION refusal of our void.
    adyen.holdNotifications(true);
    const { paymentId, chargeId, reference } = await givenUp(4100);
    expect(atAdyen(chargeId)).toMatchObject({ authorised: true, captured: 4100 });
    expect(adyen.pendingNotifications().map((n) => `${n.eventCode}:${n.success}`)).toEqual(['AUTHORISATION:true', 'CAPTURE:true', 'CANCELLATION:false']);
    // FAILED is not final: the workflow runs on (it may be confirmed again).
    expect(await workflowStatus(paymentId)).toBe('RUNNING');

    // A forged signal naming the charge: looked at, and nothing reversed.
    const client = await stack.deps.temporal();
    const forged: ProviderEventSignal = {
      eventId: 'pev_forged_late_authorization', type: 'AUTHORISATION', operation: 'authorize', chargeId,
      outcome: { kind: 'approved', providerReference: reference, authorizedAmount: 4100, capturedAmount: 0, refundedAmount: 0 },
    };
    await client.workflow.getHandle(paymentWorkflowId(paymentId)).signal(PROVIDER_EVENT_SIGNAL, forged);
    await eventually(async () => {
      const history = await client.workflow.getHandle(paymentWorkflowId(paymentId)).fetchHistory();
      return (history.events ?? []).some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'reverseLateAuthorization') || undefined;
    }, 10_000, 100);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(reversalsOf(reference)).toHaveLength(0);
    expect((await chargeRow(chargeId)).details.reversal).toBeUndefined();

    // The AUTHORISATION (before the CANCELLATION refusal), each twice.
    await adyen.releaseNotifications({ duplicate: true });
    const charge = await eventually(async () => {
      const row = await chargeRow(chargeId);
      return row.details.reversal ? row : undefined;
    }, 15_000, 100);
    expect(charge).toMatchObject({ status: 'DECLINED', decline_code: 'authentication_timeout' });
    expect(charge.details.reversal).toMatchObject({ reason: 'late_authorization', status: 'requested', reference: reversalsOf(reference)[0]?.pspReference });
    expect(charge.exchanges.filter((e: any) => e.operation === 'reverse')).toEqual([
      expect.objectContaining({ idempotency_key: `${chargeId}:reversal`, outcome: 'pending' }),
    ]);

    // Adyen refunded it (it was captured at once), once; no money held for the payment.
    await adyen.notificationsIdle();
    await adyen.releaseNotifications({ reverse: true, duplicate: true });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(reversalsOf(reference)).toEqual([expect.objectContaining({ reference: `${chargeId}:reversal`, success: true, action: 'refund' })]);
    expect(atAdyen(chargeId)).toMatchObject({ captured: 4100, refunded: 4100 });
    expect(adyen.notificationsSent().filter((n) => n.eventCode === 'CANCEL_OR_REFUND').map((n) => n.success)).toEqual(['true']);
    expect(adyen.state().requests.filter((r) => r.path.endsWith('/reversals'))).toHaveLength(1);
    const payment = await getPayment(stack, merchant, paymentId);
    expect(payment).toMatchObject({ status: 'FAILED', amount_received: 0 });
    expect(payment.charges).toHaveLength(1);
    expect(await workflowStatus(paymentId)).toBe('RUNNING');
  });

  it('reverses it when the CANCELLATION refusal comes first, though the payment succeeded on another charge meanwhile', async () => {
    adyen.holdNotifications(true);
    const { paymentId, chargeId, reference } = await givenUp(2900);
    // Confirmed again with a card that needs no challenge: SUCCEEDED on a second charge.
    const again = await confirm(stack, merchant, paymentId, { payment_method: card(CARDS.visa) });
    expect(again.body.data.status, JSON.stringify(again.body)).toBe('SUCCEEDED');
    const second = again.body.data.charges.find((c: any) => c.id !== chargeId);

    await adyen.releaseNotifications({ reverse: true });
    await eventually(async () => reversalsOf(reference).length > 0 || undefined, 15_000, 100);
    await adyen.notificationsIdle();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(reversalsOf(reference)).toEqual([expect.objectContaining({ success: true, action: 'refund' })]);
    expect(atAdyen(chargeId)).toMatchObject({ refunded: 2900 });
    // The second charge is the payment's money, untouched.
    expect(atAdyen(second.id)).toMatchObject({ captured: 2900, refunded: 0 });
    expect(await getPayment(stack, merchant, paymentId)).toMatchObject({ status: 'SUCCEEDED', amount_received: 2900 });
    expect((await chargeRow(chargeId)).details.reversal).toMatchObject({ status: 'requested' });
  });

  it('waits for the void\'s notification before reversing: an AUTHORISATION alone, the void pending, reverses nothing', async () => {
    adyen.holdNotifications(true);
    const { paymentId, chargeId, reference } = await givenUp(1700, { auto_capture: false });
    await adyen.releaseNotifications({ only: ['AUTHORISATION'] });
    await adyen.notificationsIdle();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(reversalsOf(reference)).toHaveLength(0);
    await adyen.releaseNotifications();
    await adyen.notificationsIdle();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(reversalsOf(reference)).toHaveLength(0);
    expect(atAdyen(chargeId)).toMatchObject({ cancelled: true, captured: 0 });
    expect((await getPayment(stack, merchant, paymentId)).status).toBe('FAILED');
  });

  it('reverses nothing when the void went through (manual capture: the authorization was canceled)', async () => {
    adyen.holdNotifications(true);
    const { paymentId, chargeId, reference } = await givenUp(1800, { auto_capture: false });
    expect(adyen.pendingNotifications().map((n) => `${n.eventCode}:${n.success}`)).toEqual(['AUTHORISATION:true', 'CANCELLATION:true']);
    await adyen.releaseNotifications({ duplicate: true });
    await adyen.notificationsIdle();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(reversalsOf(reference)).toHaveLength(0);
    expect(atAdyen(chargeId)).toMatchObject({ cancelled: true, captured: 0 });
    expect((await chargeRow(chargeId)).details.reversal).toBeUndefined();
    expect((await getPayment(stack, merchant, paymentId)).status).toBe('FAILED');
  });
});
