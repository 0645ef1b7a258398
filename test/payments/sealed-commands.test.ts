import { WithStartWorkflowOperation, WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, confirm, createPayment, getPayment, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import * as support from '../support/payments';
import { newId } from '../../lib/ids';
import { createActivities } from '../../activities';
import { TASK_QUEUES } from '../../contracts/temporal';
import { ConfirmInput, PAYMENT_SEAL_PURPOSE, paymentCommand, PaymentInput, paymentUpdates, paymentWorkflowId, UNSEALED_COMMAND } from '../../contracts/payments';
import { paymentWorkflow } from '../../workflows/payments/workflow';
import { sealedCapture, sealedConfirm, sealedStart } from '../../api/routes/payment-seals';

// docs/security.md §16: a workflow moves only the money the API sealed. An attacker who reaches Temporal
// starts and updates payment workflows directly, with the ids a history or a search attribute shows.

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let f: PaymentsFixture;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '1000' });
  worker = await startWorker(stack);
  f = await paymentsFixture(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

const processorCalls = async (): Promise<number> => (await sim.stats()).calls;
const context = { actor: { type: 'system' as const, id: 'forger' } };
/** Seals as the API makes them (api/routes/payment-seals.ts). */
const confirmSeal = (paymentId: string, paymentMethodId: string) => sealedConfirm(stack.deps, paymentId, { paymentMethodId, context }).seal;
const startSeal = (input: PaymentInput) => sealedStart(stack.deps, input).seal;

/** A start as the API makes one, for `amount` of the merchant's customer; unsealed. */
function startInput(customerId: string, amount: number): PaymentInput {
  return {
    paymentId: newId('pay'), accountId: f.merchant.account.id, workspaceId: f.merchant.workspaceId, environment: 'production',
    amount, currency: 'USD', autoCapture: true, secureMode: 'NONE', installments: 1, customerId, metadata: {}, routing: {},
    authExpiryMs: 3_600_000, paymentExpiryMs: 3_600_000, authenticationTimeoutMs: 3_600_000, context,
  };
}

/** Starts the workflow directly with its create update carrying the confirm (update-with-start), as the API's start is made. */
async function forgeStart(input: PaymentInput, confirmInput?: ConfirmInput, workflowId = paymentWorkflowId(input.paymentId)) {
  const client = await stack.deps.temporal();
  const start = new WithStartWorkflowOperation(paymentWorkflow, {
    workflowId, taskQueue: TASK_QUEUES.payments, args: [input], workflowIdConflictPolicy: 'FAIL',
  });
  const update = client.workflow.executeUpdateWithStart(paymentUpdates.create, { args: [confirmInput ? { confirm: confirmInput } : {}], startWorkflowOperation: start });
  update.catch(() => {});
  return { handle: await start.workflowHandle(), update };
}

/** The workflow failed on the first activity's refusal, wrote no payment and sent the processor nothing. */
async function expectRefused(forged: Awaited<ReturnType<typeof forgeStart>>, paymentId: string, callsBefore: number) {
  await expect(forged.update).rejects.toThrow();
  const failure = await forged.handle.result().then(() => undefined, (err: unknown) => err);
  expect(failure).toBeInstanceOf(WorkflowFailedError);
  expect(JSON.stringify(causes(failure))).toContain(UNSEALED_COMMAND);
  expect(await stack.db('live.payments').where({ id: paymentId }).first()).toBeUndefined();
  expect(await stack.db('live.charges').where({ payment_id: paymentId })).toEqual([]);
  expect(await processorCalls()).toBe(callsBefore);
}

/** The failure types along an error's cause chain. */
function causes(err: unknown): string[] {
  const types: string[] = [];
  for (let e = err as { cause?: unknown; type?: string } | undefined; e; e = e.cause as typeof e) types.push(e.type ?? '');
  return types;
}

async function authorized(customerId: string, pm: string): Promise<{ id: string; chargeId: string }> {
  const created = await createPayment(stack, f.merchant, { amount: 5000, auto_capture: false, customer_id: customerId });
  const res = await confirm(stack, f.merchant, created.body.data.id, { payment_method_id: pm });
  expect(res.body.data.status, JSON.stringify(res.body)).toBe('AUTHORIZED');
  return { id: created.body.data.id, chargeId: res.body.data.charges[0].id };
}

describe('a payment workflow started by anyone but the API', () => {
  it('is refused without a seal before any processor call: no payment, no charge, the saved card untouched', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const pm = await support.savedCard(stack, f.merchant, customer);
    const before = await processorCalls();
    const input = startInput(customer, 99_999);
    const confirmInput = { paymentMethodId: pm, context };
    await expectRefused(await forgeStart(input, { ...confirmInput, seal: confirmSeal(input.paymentId, pm) }), input.paymentId, before);
  });

  it('is refused with an altered amount (a seal made for 1 applied to 99999), or a made-up seal', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const pm = await support.savedCard(stack, f.merchant, customer);
    const before = await processorCalls();
    for (const forged of [
      (() => { const input = startInput(customer, 1); return { ...input, amount: 99_999, seal: startSeal(input) }; })(),
      { ...startInput(customer, 99_999), seal: 'x'.repeat(43) },
    ]) {
      await expectRefused(await forgeStart(forged, { paymentMethodId: pm, seal: confirmSeal(forged.paymentId, pm), context }), forged.paymentId, before);
    }
  });

  it('is refused with a sealed start but a confirm for another card than the one sealed', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const [sealedPm, otherPm] = [await support.savedCard(stack, f.merchant, customer), await support.savedCard(stack, f.merchant, customer, CARDS.mastercard)];
    const before = await processorCalls();
    const input = startInput(customer, 2500);
    const forged = await forgeStart({ ...input, seal: startSeal(input) }, {
      paymentMethodId: otherPm, seal: confirmSeal(input.paymentId, sealedPm), context,
    });
    await expectRefused(forged, input.paymentId, before);
  });

  it('is refused when a sealed start and confirm are copied into a workflow of another id', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const pm = await support.savedCard(stack, f.merchant, customer);
    const before = await processorCalls();
    const input = startInput(customer, 2500);
    const copied = { paymentMethodId: pm, seal: confirmSeal(input.paymentId, pm), context };
    await expectRefused(await forgeStart({ ...input, seal: startSeal(input) }, copied, `copy/${input.paymentId}`), input.paymentId, before);
  });

  it('leaves the API\'s own payment with the same saved card working', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const pm = await support.savedCard(stack, f.merchant, customer);
    const res = await createPayment(stack, f.merchant, { amount: 2500, customer_id: customer, confirm: true, payment_method_id: pm });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data).toMatchObject({ status: 'SUCCEEDED', amount_received: 2500 });
  });
});

describe('commands sent to a payment\'s workflow by anyone but the API', () => {
  it('refuses a confirm update without a valid seal: nothing sent, the payment still CREATED and confirmable', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const pm = await support.savedCard(stack, f.merchant, customer);
    const created = await createPayment(stack, f.merchant, { amount: 3000, customer_id: customer });
    const id = created.body.data.id as string;
    const before = await processorCalls();
    const handle = (await stack.deps.temporal()).workflow.getHandle(paymentWorkflowId(id));
    await expect(handle.executeUpdate(paymentUpdates.confirm, { args: [{ paymentMethodId: pm, seal: 'x'.repeat(43), context }] })).rejects.toThrow(WorkflowUpdateFailedError);
    expect(await processorCalls()).toBe(before);
    expect((await getPayment(stack, f.merchant, id)).status).toBe('CREATED');
    const res = await confirm(stack, f.merchant, id, { payment_method_id: pm });
    expect(res.body.data.status, JSON.stringify(res.body)).toBe('SUCCEEDED');
  });

  it('refuses a capture with a forged seal or a seal of another amount: nothing captured, then the API\'s capture works', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const { id, chargeId } = await authorized(customer, await support.savedCard(stack, f.merchant, customer));
    const handle = (await stack.deps.temporal()).workflow.getHandle(paymentWorkflowId(id));
    for (const forged of [
      { amount: 5000, seal: 'x'.repeat(43), context },
      { amount: 5000, seal: sealedCapture(stack.deps, id, 100), context },
      { seal: sealedCapture(stack.deps, newId('pay'), undefined), context },
    ]) {
      await expect(handle.executeUpdate(paymentUpdates.capture, { args: [forged] })).rejects.toThrow(WorkflowUpdateFailedError);
    }
    expect(await sim.key(`${chargeId}:capture`)).toMatchObject({ calls: 0 });
    expect((await getPayment(stack, f.merchant, id)).status).toBe('AUTHORIZED');
    const res = await stack.http.post(`/v1/payments/${id}/capture`).set(bearer(f.merchant.secretKey)).send({ amount: 4000 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'SUCCEEDED', amount_received: 4000 });
  });

  it('refuses a cancel with a forged seal: the authorization stands, then the API\'s cancel voids it', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const { id, chargeId } = await authorized(customer, await support.savedCard(stack, f.merchant, customer));
    const handle = (await stack.deps.temporal()).workflow.getHandle(paymentWorkflowId(id));
    const cancelSeal = stack.deps.vault.seal(PAYMENT_SEAL_PURPOSE, paymentCommand({ kind: 'cancel', paymentId: id }));
    await expect(handle.executeUpdate(paymentUpdates.cancel, { args: [{ reason: 'fraudulent', seal: cancelSeal, context }] }))
      .rejects.toThrow(WorkflowUpdateFailedError);
    await expect(handle.executeUpdate(paymentUpdates.cancel, { args: [{ context }] })).rejects.toThrow(WorkflowUpdateFailedError);
    expect(await sim.key(`${chargeId}:void`)).toMatchObject({ calls: 0 });
    expect((await getPayment(stack, f.merchant, id)).status).toBe('AUTHORIZED');
    const res = await stack.http.post(`/v1/payments/${id}/cancel`).set(bearer(f.merchant.secretKey)).send({ reason: 'abandoned' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'CANCELED', cancellation_reason: 'abandoned' });
  });
});

/** The inputs a payment's workflow history shows: its start's, and each accepted update's of `name`, as anyone reading it may copy them. */
async function fromHistory(paymentId: string): Promise<{ start: PaymentInput; updates: (name: string) => any[] }> {
  const history = await (await stack.deps.temporal()).workflow.getHandle(paymentWorkflowId(paymentId)).fetchHistory();
  const decode = (payload: { data?: Uint8Array | null } | undefined | null) => JSON.parse(Buffer.from(payload!.data!).toString('utf8'));
  const events = history.events ?? [];
  const start = decode(events[0].workflowExecutionStartedEventAttributes?.input?.payloads?.[0]);
  const accepted = events.map((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input).filter((i) => !!i);
  return { start, updates: (name) => accepted.filter((i) => i!.name === name).map((i) => decode(i!.args?.payloads?.[0])) };
}

describe('sealed commands are used once, and a start is sealed whole', () => {
  it('refuses a confirm seal copied from history while the payment is FAILED; the merchant\'s next confirm works', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const [declined, good] = [await support.savedCard(stack, f.merchant, customer, CARDS.declined), await support.savedCard(stack, f.merchant, customer)];
    const id = (await createPayment(stack, f.merchant, { amount: 3000, customer_id: customer })).body.data.id as string;
    expect((await confirm(stack, f.merchant, id, { payment_method_id: declined })).body.data.status).toBe('FAILED');
    const [copied] = (await fromHistory(id)).updates('confirm');
    const before = await processorCalls();
    const handle = (await stack.deps.temporal()).workflow.getHandle(paymentWorkflowId(id));
    await expect(handle.executeUpdate(paymentUpdates.confirm, { args: [copied] })).rejects.toThrow(WorkflowUpdateFailedError);
    expect(await processorCalls()).toBe(before);
    expect((await getPayment(stack, f.merchant, id)).status).toBe('FAILED');
    const res = await confirm(stack, f.merchant, id, { payment_method_id: good });
    expect(res.body.data.status, JSON.stringify(res.body)).toBe('SUCCEEDED');
  });

  it('refuses a capture seal once used, another payment\'s charge, and an amount not sealed: the processor sees none', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const pm = await support.savedCard(stack, f.merchant, customer);
    const [{ id, chargeId }, other] = [await authorized(customer, pm), await authorized(customer, pm)];
    const activities = createActivities({ db: stack.db, config: stack.config });
    const ref = { paymentId: id, accountId: f.merchant.account.id, workspaceId: f.merchant.workspaceId, environment: 'production' as const, context };
    // Refused by the processor (above the 5000 authorized): the payment stays AUTHORIZED.
    const refused = { amount: 6000, seal: sealedCapture(stack.deps, id, 6000) };
    expect(await activities.captureCharge({ ...ref, chargeId, amount: 6000, sequence: 1, command: refused })).toMatchObject({ declined: expect.anything() });
    const whole = { seal: sealedCapture(stack.deps, id, undefined) };
    for (const [forged, key] of [
      [{ ...ref, chargeId, amount: 6000, sequence: 2, command: refused }, `${chargeId}:capture:2`],
      [{ ...ref, chargeId: other.chargeId, amount: 5000, sequence: 3, command: whole }, `${other.chargeId}:capture:3`],
      [{ ...ref, chargeId, amount: 1, sequence: 4, command: whole }, `${chargeId}:capture:4`],
    ] as const) {
      await expect(activities.captureCharge(forged)).rejects.toMatchObject({ type: UNSEALED_COMMAND });
      expect(await sim.key(key)).toMatchObject({ calls: 0 });
    }
    expect((await getPayment(stack, f.merchant, id)).status).toBe('AUTHORIZED');
    expect((await getPayment(stack, f.merchant, other.id)).status).toBe('AUTHORIZED');
  });

  it('refuses a start altered in any field its row is made from, the seal kept', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const activities = createActivities({ db: stack.db, config: stack.config });
    const input = startInput(customer, 2500);
    const seal = startSeal(input);
    for (const altered of [
      { secureMode: 'REQUIRED' as const }, { installments: 12 }, { routing: { max_attempts: 9 } }, { metadata: { order: 'forged' } },
      { checkoutSessionId: 'cs_forged' }, { authExpiryMs: 1 }, { paymentExpiryMs: 1 }, { customerId: undefined },
      { invoice: { invoiceId: 'in_forged', subscriptionId: 'sub_forged' } }, { recurring: { model: 'subscription' as const, initiator: 'merchant' as const } },
    ]) {
      await expect(activities.createPaymentRecord({ ...input, ...altered, seal })).rejects.toMatchObject({ type: UNSEALED_COMMAND });
    }
    expect(await stack.db('live.payments').where({ id: input.paymentId }).first()).toBeUndefined();
  });

  it('refuses a closed payment\'s workflow restarted with its start copied from history: nothing rewritten', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const pm = await support.savedCard(stack, f.merchant, customer);
    const id = (await createPayment(stack, f.merchant, { amount: 2500, customer_id: customer, confirm: true, payment_method_id: pm })).body.data.id as string;
    await (await stack.deps.temporal()).workflow.getHandle(paymentWorkflowId(id)).result();
    const { start, updates } = await fromHistory(id);
    const [{ confirm: copiedConfirm }] = updates('create');
    const [row, plans, before] = [await stack.db('live.payments').where({ id }).first(), await stack.db('live.routing_plans').where({ payment_id: id }), await processorCalls()];
    for (const [copied, withConfirm] of [[start], [start, copiedConfirm]] as const) {
      const forged = await forgeStart(copied, withConfirm);
      await expect(forged.update).rejects.toThrow();
      expect(JSON.stringify(causes(await forged.handle.result().catch((err: unknown) => err)))).toContain(UNSEALED_COMMAND);
    }
    expect(await stack.db('live.payments').where({ id }).first()).toEqual(row);
    expect(await stack.db('live.routing_plans').where({ payment_id: id })).toEqual(plans);
    expect(await processorCalls()).toBe(before);
  });
});
