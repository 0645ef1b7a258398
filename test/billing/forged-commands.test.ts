import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowFailedError } from '@temporalio/client';
import { RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { startSimulator, TestSimulator } from '../support/payments';
import { eventually } from '../support/worker-process';
import { newId } from '../../lib/ids';
import { subscriptionSignals, subscriptionUpdates, subscriptionWorkflowId, type SubscriptionInput } from '../../contracts/billing';
import { TASK_QUEUES } from '../../contracts/temporal';
import { subscriptionWorkflow } from '../../workflows/billing/workflow';
import { api, billingFixture, BillingFixture, customerWithCard, invoicesOf, monthlyPrice } from './support';

// Anyone who reaches the Temporal server can start a workflow or send it messages (docs/security.md).
// These tests do, through a Temporal client, as such an attacker would: a subscription started without
// the API's seal bills nobody, a change without it moves nothing, and a made-up payment nudge settles nothing.

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let f: BillingFixture;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '5000' });
  worker = await startWorker(stack);
  f = await billingFixture(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

describe('a subscription workflow started by someone else', () => {
  it('fails at its first step: no row, no invoice, no payment', async () => {
    const price = await monthlyPrice(stack, f.merchant, 99_00);
    const { customerId, paymentMethodId } = await customerWithCard(stack, f.merchant);
    const subscriptionId = newId('sub');
    const input: SubscriptionInput = {
      subscriptionId, accountId: f.merchant.account.id, workspaceId: f.merchant.workspaceId, environment: 'sandbox', customerId,
      items: [{ id: newId('si'), price_id: price.id, quantity: 50 }], defaultPaymentMethodId: paymentMethodId, cancelAtPeriodEnd: false, metadata: {},
      seal: 'k1.forged', context: { actor: { type: 'user', id: 'usr_attacker' } },
    };
    const client = await stack.deps.temporal();
    const handle = await client.workflow.start(subscriptionWorkflow, { workflowId: subscriptionWorkflowId(subscriptionId), taskQueue: TASK_QUEUES.payments, args: [input] });
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(await stack.db('sandbox.subscriptions').where({ id: subscriptionId }).first()).toBeUndefined();
    expect(await stack.db('sandbox.payments').where({ customer_id: customerId })).toHaveLength(0);
  });
});

describe('messages sent straight to a real subscription', () => {
  it('a change without the API\'s seal is refused; a forged payment nudge settles nothing', async () => {
    const price = await monthlyPrice(stack, f.merchant, 1000);
    const { customerId, paymentMethodId } = await customerWithCard(stack, f.merchant);
    const sub = await api(stack, f.merchant).post('/v1/subscriptions', { customer_id: customerId, default_payment_method_id: paymentMethodId, items: [{ price_id: price.id }] }, 201);
    const handle = (await stack.deps.temporal()).workflow.getHandle(subscriptionWorkflowId(sub.id));

    const answer = await handle.executeUpdate(subscriptionUpdates.change, {
      args: [{ change: { kind: 'cancel', invoiceNow: false, prorate: false }, seal: 'k1.forged', context: { actor: { type: 'user', id: 'usr_attacker' } } }],
    });
    expect(answer).toMatchObject({ applied: false, code: 'unsealed_command' });
    const [invoice] = await invoicesOf(stack, sub.id);
    await handle.signal(subscriptionSignals.invoicePayment, { invoiceId: invoice.id, paymentId: 'pay_forged', status: 'FAILED' });
    // The nudge was taken (a workflow task completed after it), and nothing moved: it only makes the workflow read rows.
    await eventually(async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      const signaled = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'invoicePayment');
      return (signaled >= 0 && events.slice(signaled).some((e) => e.workflowTaskCompletedEventAttributes)) || undefined;
    });
    expect(await api(stack, f.merchant).get(`/v1/subscriptions/${sub.id}`)).toMatchObject({ status: 'ACTIVE', canceled_at: null });
    expect((await invoicesOf(stack, sub.id))[0]).toMatchObject({ status: 'PAID', attempt_count: 1 });
  });
});
