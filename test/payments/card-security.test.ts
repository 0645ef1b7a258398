import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { bearer, Merchant, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import {
  CARDS, card, confirm, createPayment, getPayment, pay, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator,
} from '../support/payments';
import * as support from '../support/payments';
import { createDb } from '../../db/knex';
import * as m001 from '../../db/migrations/001_core';
import * as m002 from '../../db/migrations/002_environments';
import * as m004 from '../../db/migrations/004_providers';
import * as m005 from '../../db/migrations/005_webhooks';
import * as m006 from '../../db/migrations/006_idempotency_resource';
import * as m007 from '../../db/migrations/007_single_use_cards';
import { insertCard } from '../../db/payment-methods';
import { validateCard, ValidCard } from '../../lib/cards';
import { newId } from '../../lib/ids';
import { createActivities } from '../../activities';
import { TASK_QUEUES } from '../../contracts/temporal';
import { CommandResult, CreateInput, PaymentInput, paymentUpdates, paymentWorkflowId } from '../../contracts/payments';
import { sealedConfirm, sealedStart } from '../../api/routes/payment-seals';

/**
 * Which card a payment may be charged with, and what a publishable key may see. A saved card belongs to
 * its customer and pays only that customer's payments; a card given at confirm and not saved is bound
 * to its payment and its number is erased once that payment no longer needs it. Workflows re-check the
 * card against Postgres, whatever they were told.
 */

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let f: PaymentsFixture;
/** Another tenant with providers of its own. */
let other: PaymentsFixture;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '1000' });
  worker = await startWorker(stack);
  f = await paymentsFixture(stack);
  other = await paymentsFixture(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

const CHECKOUT_FIELDS = ['amount', 'card', 'currency', 'id', 'last_error', 'next_action', 'object', 'status'];

const newCustomer = (m: Merchant) => support.newCustomer(stack, m);
const savedCard = (m: Merchant, customerId: string, number: string = CARDS.visa) => support.savedCard(stack, m, customerId, number);

async function newPayment(m: Merchant, body: Record<string, unknown> = {}): Promise<string> {
  const res = await createPayment(stack, m, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.id;
}

/** The payment's client_secret, as the merchant's server hands it to the checkout. */
const secretOf = async (paymentId: string): Promise<string | undefined> =>
  (await stack.db('live.payments').where({ id: paymentId }).first('client_secret'))?.client_secret;

const pkConfirm = async (m: Merchant, paymentId: string, body: Record<string, unknown>) =>
  stack.http.post(`/v1/payments/${paymentId}/confirm`).set(bearer(m.publishableKey)).send({ client_secret: await secretOf(paymentId), ...body });

const processorCalls = async (): Promise<number> => (await sim.stats()).calls;
/**
 * Charges the processor holds: unlike its call count, not moved by a status query of a workflow another
 * test file of this Temporal namespace left running (its activities run on this file's worker).
 */
const processorCharges = async (): Promise<number> => (await sim.stats()).charges.total;

const pmRow = (id: string) => stack.db('live.payment_methods').where({ id }).first();

/** The payment's card as the API recorded it (secret key view). */
async function paymentMethodOf(paymentId: string): Promise<string> {
  const read = await getPayment(stack, f.merchant, paymentId, '');
  expect(read.payment_method_id).toMatch(/^pm_/);
  return read.payment_method_id;
}

function validCard(number: string): ValidCard {
  const checked = validateCard(card(number).card);
  if ('problems' in checked) throw new Error('test card is not valid');
  return checked.card;
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > until) return value;
    await new Promise((r) => setTimeout(r, 200));
  }
}

function expectRefusedAtPaymentMethodId(res: { status: number; body: any }) {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error.details.reason).toBe('validation_failed');
  expect(res.body.error.details.fields.map((x: any) => x.path)).toEqual(['body/payment_method_id']);
}

function expectErased(row: any, network: string, last4: string) {
  expect(row).toMatchObject({ pan_encrypted: '', cvc_encrypted: null, card_network: network, card_last4: last4 });
}

describe('confirming with a saved card', () => {
  it('a publishable key cannot use a saved card of another customer: 400 at body/payment_method_id, nothing sent to the processor', async () => {
    const [victim, buyer] = [await newCustomer(f.merchant), await newCustomer(f.merchant)];
    const victimCard = await savedCard(f.merchant, victim);
    for (const create of [{ customer_id: buyer }, {}, { customer: { name: 'Guest' } }]) {
      const paymentId = await newPayment(f.merchant, create);
      const before = await processorCharges();
      const res = await pkConfirm(f.merchant, paymentId, { payment_method_id: victimCard });
      expectRefusedAtPaymentMethodId(res);
      expect(await processorCharges()).toBe(before);
      const read = await getPayment(stack, f.merchant, paymentId, 'include_charges=true');
      expect(read).toMatchObject({ status: 'CREATED', payment_method_id: null, charges: [] });
    }
  });

  it('nor can a secret key', async () => {
    const [victim, buyer] = [await newCustomer(f.merchant), await newCustomer(f.merchant)];
    const victimCard = await savedCard(f.merchant, victim);
    const paymentId = await newPayment(f.merchant, { customer_id: buyer });
    const before = await processorCalls();
    expectRefusedAtPaymentMethodId(await confirm(stack, f.merchant, paymentId, { payment_method_id: victimCard }));
    expect(await processorCalls()).toBe(before);
    expect((await getPayment(stack, f.merchant, paymentId, 'include_charges=true')).charges).toEqual([]);
  });

  it('answers an unknown id, another tenant\'s card and another customer\'s card identically', async () => {
    const buyer = await newCustomer(f.merchant);
    const paymentId = await newPayment(f.merchant, { customer_id: buyer });
    const otherCustomersCard = await savedCard(f.merchant, await newCustomer(f.merchant));
    const otherTenantsCard = await savedCard(other.merchant, await newCustomer(other.merchant));
    const answers = [];
    for (const id of [newId('pm'), otherCustomersCard, otherTenantsCard]) {
      for (const send of [pkConfirm, (m: Merchant, p: string, b: Record<string, unknown>) => confirm(stack, m, p, b)]) {
        const res = await send(f.merchant, paymentId, { payment_method_id: id });
        expectRefusedAtPaymentMethodId(res);
        answers.push(JSON.stringify(res.body));
      }
    }
    expect(new Set(answers).size).toBe(1);
    expect(answers[0]).not.toContain(otherCustomersCard);
    expect(answers[0]).not.toContain(otherTenantsCard);
  });

  it('is reusable for its own customer, with either key, and keeps its number', async () => {
    const buyer = await newCustomer(f.merchant);
    const pm = await savedCard(f.merchant, buyer, CARDS.mastercard);
    const first = await pkConfirm(f.merchant, await newPayment(f.merchant, { customer_id: buyer }), { payment_method_id: pm });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data.status).toBe('SUCCEEDED');
    const second = await confirm(stack, f.merchant, await newPayment(f.merchant, { customer_id: buyer }), { payment_method_id: pm });
    expect(second.body.data.status).toBe('SUCCEEDED');
    const row = await pmRow(pm);
    expect(row.customer_id).toBe(buyer);
    expect(row.pan_encrypted).toMatch(/^v2\.k0\./);
  });
});

describe('confirming with a card given inline', () => {
  it('binds it to its payment: any other payment is refused, with either key, before the processor is called', async () => {
    const buyer = await newCustomer(f.merchant);
    const first = await pay(stack, f.merchant, CARDS.visa, { customer_id: buyer });
    expect(first.body.data.status).toBe('SUCCEEDED');
    const inline = await paymentMethodOf(first.body.data.id);
    expect(await pmRow(inline)).toMatchObject({ customer_id: null, payment_id: first.body.data.id });

    const unknown = await pkConfirm(f.merchant, await newPayment(f.merchant), { payment_method_id: newId('pm') });
    for (const create of [{ customer_id: buyer }, {}]) {
      const paymentId = await newPayment(f.merchant, create);
      const before = await processorCalls();
      const viaPk = await pkConfirm(f.merchant, paymentId, { payment_method_id: inline });
      expectRefusedAtPaymentMethodId(viaPk);
      expect(viaPk.body).toEqual(unknown.body);
      expectRefusedAtPaymentMethodId(await confirm(stack, f.merchant, paymentId, { payment_method_id: inline }));
      expect(await processorCalls()).toBe(before);
    }
    // Not one of the customer's saved cards either.
    const list = await stack.http.get(`/v1/customers/${buyer}?include_payment_methods=true`).set(bearer(f.merchant.secretKey));
    expect(list.body.data.payment_methods).toEqual([]);
  });

  it('is saved to the payment\'s customer with save_payment_method, and then reusable by that customer only', async () => {
    const buyer = await newCustomer(f.merchant);
    const first = await pay(stack, f.merchant, CARDS.visa, { customer_id: buyer }, { save_payment_method: true });
    expect(first.body.data.status).toBe('SUCCEEDED');
    const pm = await paymentMethodOf(first.body.data.id);
    expect(await pmRow(pm)).toMatchObject({ customer_id: buyer, payment_id: null });
    expect((await pmRow(pm)).pan_encrypted).toMatch(/^v2\.k0\./);
    const again = await pkConfirm(f.merchant, await newPayment(f.merchant, { customer_id: buyer }), { payment_method_id: pm });
    expect(again.body.data.status).toBe('SUCCEEDED');
    expectRefusedAtPaymentMethodId(await pkConfirm(f.merchant, await newPayment(f.merchant, { customer_id: await newCustomer(f.merchant) }), { payment_method_id: pm }));
  });

  it('is used up by a failed confirm: the payment is confirmed again with a new card, not the old one', async () => {
    const failed = await pay(stack, f.merchant, CARDS.declined);
    expect(failed.body.data.status).toBe('FAILED');
    const used = await paymentMethodOf(failed.body.data.id);
    expectRefusedAtPaymentMethodId(await confirm(stack, f.merchant, failed.body.data.id, { payment_method_id: used }));
    const retried = await pkConfirm(f.merchant, failed.body.data.id, { payment_method: card(CARDS.visa) });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.data.status).toBe('SUCCEEDED');
  });
});

describe('erasing the number of a single-use card', () => {
  it('once the payment succeeds; network and last4 stay', async () => {
    const res = await pay(stack, f.merchant, CARDS.visa);
    expect(res.body.data.status).toBe('SUCCEEDED');
    expectErased(await pmRow(await paymentMethodOf(res.body.data.id)), 'VISA', '4242');
  });

  it('once the payment fails, on a decline or for want of a provider', async () => {
    const declined = await pay(stack, f.merchant, CARDS.declined);
    expect(declined.body.data.status).toBe('FAILED');
    expectErased(await pmRow(await paymentMethodOf(declined.body.data.id)), 'VISA', '0002');

    const soft = await pay(stack, f.merchant, CARDS.processingError);
    expect(soft.body.data.charges).toHaveLength(2);
    expectErased(await pmRow(await paymentMethodOf(soft.body.data.id)), 'VISA', '0119');

    const nowhere = await newPayment(f.merchant, { routing: { exclude_provider_config_ids: [f.primary.id, f.backup.id] } });
    expect((await confirm(stack, f.merchant, nowhere, { payment_method: card(CARDS.mastercard) })).status).toBe(422);
    expectErased(await pmRow(await paymentMethodOf(nowhere)), 'MASTERCARD', '4444');
  });

  it('once the payment is authorized (capture and void need only the provider reference), and it stays erased when canceled', async () => {
    const res = await pay(stack, f.merchant, CARDS.amex, { auto_capture: false });
    expect(res.body.data.status).toBe('AUTHORIZED');
    const pm = await paymentMethodOf(res.body.data.id);
    expectErased(await pmRow(pm), 'AMEX', '0005');
    const canceled = await stack.http.post(`/v1/payments/${res.body.data.id}/cancel`).set(bearer(f.merchant.secretKey)).send({});
    expect(canceled.body.data.status).toBe('CANCELED');
    expectErased(await pmRow(pm), 'AMEX', '0005');
  });

  it('when a payment is canceled with a card still bound to it', async () => {
    const paymentId = await newPayment(f.merchant);
    const row = await insertCard(stack.db, stack.deps.vault, 'production', { accountId: f.merchant.account.id, customerId: null, paymentId, card: validCard(CARDS.mastercard) });
    expect((await pmRow(row.id)).pan_encrypted).toMatch(/^v2\.k0\./);
    const canceled = await stack.http.post(`/v1/payments/${paymentId}/cancel`).set(bearer(f.merchant.secretKey)).send({});
    expect(canceled.body.data.status).toBe('CANCELED');
    expectErased(await pmRow(row.id), 'MASTERCARD', '4444');
  });

  it('when the payment expires', async () => {
    const config = stack.deps.config as { paymentExpiryMs: number };
    const saved = config.paymentExpiryMs;
    config.paymentExpiryMs = 1500;
    let paymentId: string;
    try {
      paymentId = await newPayment(f.merchant);
    } finally {
      config.paymentExpiryMs = saved;
    }
    const row = await insertCard(stack.db, stack.deps.vault, 'production', { accountId: f.merchant.account.id, customerId: null, paymentId, card: validCard(CARDS.visa) });
    const expired = await waitFor(() => getPayment(stack, f.merchant, paymentId, ''), (p) => p.status === 'CANCELED');
    expect(expired).toMatchObject({ status: 'CANCELED', cancellation_reason: 'expired' });
    expectErased(await pmRow(row.id), 'VISA', '4242');
  });

  it('refuses to store an inline card that belongs to neither a customer nor a payment', async () => {
    await expect(insertCard(stack.db, stack.deps.vault, 'production', { accountId: f.merchant.account.id, customerId: null, card: validCard(CARDS.visa) }))
      .rejects.toThrow();
  });
});

describe('what a publishable key reads', () => {
  it('sees only what a checkout needs, on confirm and on GET', async () => {
    const buyer = await newCustomer(f.merchant);
    const paymentId = await newPayment(f.merchant, { customer_id: buyer, metadata: { order: 'secret-order-1' } });
    const confirmed = await pkConfirm(f.merchant, paymentId, { payment_method: card(CARDS.visa) });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    const read = await stack.http.get(`/v1/payments/${paymentId}?client_secret=${await secretOf(paymentId)}`).set(bearer(f.merchant.publishableKey));
    expect(read.status).toBe(200);
    for (const data of [confirmed.body.data, read.body.data]) {
      expect(Object.keys(data).sort()).toEqual(CHECKOUT_FIELDS);
      expect(data).toEqual({
        object: 'payment', id: paymentId, amount: 1000, currency: 'USD', status: 'SUCCEEDED', next_action: null, last_error: null,
        card: { network: 'VISA', last4: '4242' },
      });
    }
    const text = JSON.stringify([confirmed.body, read.body]);
    for (const hidden of [buyer, 'secret-order-1', f.merchant.account.id, 'pm_', 'ch_', 'rp_', 'payment/']) expect(text).not.toContain(hidden);

    const declined = await pkConfirm(f.merchant, await newPayment(f.merchant), { payment_method: card(CARDS.insufficientFunds) });
    expect(declined.body.data).toMatchObject({ status: 'FAILED', last_error: { code: 'card_declined', decline_code: 'generic_decline' }, card: { network: 'VISA', last4: '9995' } });
    expect(Object.keys(declined.body.data.last_error).sort()).toEqual(['code', 'decline_code']);

    const freshId = await newPayment(f.merchant);
    const fresh = await stack.http.get(`/v1/payments/${freshId}?client_secret=${await secretOf(freshId)}`).set(bearer(f.merchant.publishableKey));
    expect(fresh.body.data).toMatchObject({ status: 'CREATED', card: null, last_error: null, next_action: null });
  });

  it('may not ask for embedded resources: include_* → 403 publishable_key_not_allowed', async () => {
    const paymentId = await newPayment(f.merchant, { customer: { name: 'Guest' } });
    for (const flag of ['include_events', 'include_customer', 'include_routing_plans', 'include_charges', 'include_payment_provider_details']) {
      for (const value of ['true', 'false']) {
        const res = await stack.http.get(`/v1/payments/${paymentId}?${flag}=${value}`).set(bearer(f.merchant.publishableKey));
        expect(res.status, `${flag}=${value}`).toBe(403);
        expect(res.body.error.details.reason).toBe('publishable_key_not_allowed');
      }
    }
  });

  it('leaves the secret key its full view', async () => {
    const res = await pay(stack, f.merchant, CARDS.visa, { metadata: { order: 'o-2' } });
    const read = await getPayment(stack, f.merchant, res.body.data.id, 'include_events=true');
    expect(read).toMatchObject({ account_id: f.merchant.account.id, metadata: { order: 'o-2' }, temporal: { workflow_id: paymentWorkflowId(res.body.data.id) } });
    expect(read.payment_method_id).toMatch(/^pm_/);
    expect(read.events.length).toBeGreaterThan(0);
  });

  it('is documented: GET /payments/{id} and confirm answer one of the full and the checkout shape', async () => {
    const doc = (await stack.http.get('/v1/openapi.json')).body;
    for (const [path, method] of [['/v1/payments/{id}', 'get'], ['/v1/payments/{id}/confirm', 'post']]) {
      const data = doc.paths[path][method].responses['200'].content['application/json'].schema.properties.data;
      expect(data.oneOf, path).toHaveLength(2);
      const checkout = data.oneOf[1];
      expect(checkout.additionalProperties).toBe(false);
      expect(Object.keys(checkout.properties).sort()).toEqual(CHECKOUT_FIELDS);
    }
  });
});

describe('workflows re-check the payment method against Postgres', () => {
  /**
   * Starts a payment workflow directly on Temporal, as someone who can reach it might, and confirms it with
   * `paymentMethodId`: by a `confirm` update, or inside the `create` update (`via: 'create'`).
   */
  async function forge(customerId: string | undefined, paymentMethodId: string, via: 'confirm' | 'create' = 'confirm'): Promise<string> {
    const client = await stack.deps.temporal();
    const paymentId = newId('pay');
    // Sealed as the API would: these tests reach the card re-check behind the seal (sealed-commands.test.ts
    // covers unsealed and altered commands).
    const input: PaymentInput = sealedStart(stack.deps, {
      paymentId, accountId: f.merchant.account.id, workspaceId: f.merchant.workspaceId, environment: 'production',
      amount: 4242, currency: 'USD', autoCapture: true, secureMode: 'NONE', installments: 1, customerId,
      metadata: {}, routing: {}, authExpiryMs: 3_600_000, paymentExpiryMs: 3_600_000, authenticationTimeoutMs: 3_600_000,
      context: { actor: { type: 'system', id: 'forger' } },
    });
    const confirm = sealedConfirm(stack.deps, paymentId, { paymentMethodId, context: input.context });
    const handle = await client.workflow.start('paymentWorkflow', { workflowId: paymentWorkflowId(paymentId), taskQueue: TASK_QUEUES.payments, args: [input] });
    if (via === 'create') {
      await handle.executeUpdate<CommandResult, [CreateInput]>(paymentUpdates.create.name, { args: [{ confirm }] });
      return paymentId;
    }
    await handle.executeUpdate(paymentUpdates.create.name);
    await handle.executeUpdate(paymentUpdates.confirm, { args: [confirm] });
    return paymentId;
  }

  async function expectFailedWithoutCharge(paymentId: string, before: number) {
    const row = await stack.db('live.payments').where({ id: paymentId }).first();
    expect(row.status).toBe('FAILED');
    expect(row.last_error.code).toBe('payment_method_unavailable');
    expect(await processorCalls()).toBe(before);
    expect(await stack.db('live.charges').where({ payment_id: paymentId }).whereNot({ status: 'DECLINED' })).toEqual([]);
  }

  it('refuses another tenant\'s card: the payment fails and the processor sees nothing', async () => {
    const foreign = await savedCard(other.merchant, await newCustomer(other.merchant));
    const before = await processorCalls();
    await expectFailedWithoutCharge(await forge(undefined, foreign), before);
  });

  it('refuses a saved card of another customer of the same account', async () => {
    const [victim, buyer] = [await newCustomer(f.merchant), await newCustomer(f.merchant)];
    const victimCard = await savedCard(f.merchant, victim);
    const before = await processorCalls();
    await expectFailedWithoutCharge(await forge(buyer, victimCard), before);
    await expectFailedWithoutCharge(await forge(undefined, victimCard), before);
  });

  it('refuses them the same when the confirm rides in the create update', async () => {
    const [victim, buyer] = [await newCustomer(f.merchant), await newCustomer(f.merchant)];
    const victimCard = await savedCard(f.merchant, victim);
    const foreign = await savedCard(other.merchant, await newCustomer(other.merchant));
    const before = await processorCalls();
    await expectFailedWithoutCharge(await forge(buyer, victimCard, 'create'), before);
    await expectFailedWithoutCharge(await forge(undefined, foreign, 'create'), before);
  });

  it('refuses a single-use card bound to another payment', async () => {
    const paymentId = await newPayment(f.merchant);
    const bound = await insertCard(stack.db, stack.deps.vault, 'production', { accountId: f.merchant.account.id, customerId: null, paymentId, card: validCard(CARDS.visa) });
    const before = await processorCalls();
    await expectFailedWithoutCharge(await forge(undefined, bound.id), before);
  });

  it('authorizeCharge itself declines a card that is not the payment\'s, without calling the processor', async () => {
    const activities = createActivities({ db: stack.db, config: stack.config });
    const [victim, buyer] = [await newCustomer(f.merchant), await newCustomer(f.merchant)];
    const [victimCard, buyerCard] = [await savedCard(f.merchant, victim), await savedCard(f.merchant, buyer)];
    const paymentId = newId('pay');
    const ref = { paymentId, accountId: f.merchant.account.id, workspaceId: f.merchant.workspaceId, environment: 'production' as const };
    const context = { actor: { type: 'system' as const, id: 'test' } };
    await activities.createPaymentRecord(sealedStart(stack.deps, {
      ...ref, amount: 1000, currency: 'USD', autoCapture: true, secureMode: 'NONE', installments: 1, customerId: buyer,
      metadata: {}, routing: {}, authExpiryMs: 3_600_000, paymentExpiryMs: 3_600_000, authenticationTimeoutMs: 3_600_000, context,
    }));
    // Planned with the buyer's own card; the attempt is then told another customer's.
    const { seal } = sealedConfirm(stack.deps, paymentId, { paymentMethodId: buyerCard, context });
    const plan = await activities.planRoute({ ...ref, routingPlanId: newId('rp'), paymentMethodId: buyerCard, context, seal });
    expect(plan.candidates.length).toBeGreaterThan(0);
    const before = await processorCalls();
    const result = await activities.authorizeCharge({
      ...ref, chargeId: newId('ch'), routingPlanId: plan.routingPlanId, attemptNo: 1, candidate: plan.candidates[0],
      paymentMethodId: victimCard, capture: true, lastCandidate: false, context,
    });
    expect(result).toMatchObject({ outcome: 'hard_decline', declineCode: 'payment_method_unavailable', paymentStatus: 'FAILED' });
    expect(await processorCalls()).toBe(before);
    expect((await stack.db('live.payments').where({ id: paymentId }).first()).last_error.code).toBe('payment_method_unavailable');
  });
});

describe('migration 007 on existing cards', () => {
  it('keeps saved cards with their customers, binds inline cards to the payment they were used on, and erases what is over', async () => {
    const serverUrl = inject('databaseUrl');
    const admin = createDb(serverUrl, { max: 1 });
    const name = `switchboard_mig007_${Date.now()}_${process.pid}`;
    await admin.raw(`CREATE DATABASE "${name}"`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    const db = createDb(url.toString(), { max: 2 });
    try {
      for (const step of [m001, m002, m004, m005, m006]) await step.up(db);
      const pm = (id: string, customerId: string | null) => ({
        id, account_id: 'acct_1', customer_id: customerId, type: 'CARD', card_network: 'VISA', card_last4: '4242',
        card_exp_month: 12, card_exp_year: 2040, card_fingerprint: 'fp', pan_encrypted: 'v1.sealed', cvc_encrypted: null,
      });
      await db('live.customers').insert({ id: 'cus_1', account_id: 'acct_1' });
      await db('live.payment_methods').insert([pm('pm_saved', 'cus_1'), pm('pm_open', null), pm('pm_done', null), pm('pm_never', null)]);
      const payment = (id: string, status: string, pmId: string) => ({ id, account_id: 'acct_1', amount: 100, currency: 'USD', status, payment_method_id: pmId });
      await db('live.payments').insert([payment('pay_open', 'PROCESSING', 'pm_open'), payment('pay_done', 'SUCCEEDED', 'pm_done'), payment('pay_saved', 'SUCCEEDED', 'pm_saved')]);
      // pm_done was first used on pay_done, then (under the old rules) on another payment.
      await db('live.payments').insert(payment('pay_later', 'CREATED', 'pm_done'));
      await db('live.routing_plans').insert([
        { id: 'rp_1', account_id: 'acct_1', payment_id: 'pay_done', metadata: { payment_method_id: 'pm_done' }, created_at: new Date(Date.now() - 60_000) },
        { id: 'rp_2', account_id: 'acct_1', payment_id: 'pay_later', metadata: { payment_method_id: 'pm_done' } },
      ]);

      await m007.up(db);

      const rows = Object.fromEntries((await db('live.payment_methods').select('*')).map((r: any) => [r.id, r]));
      expect(rows.pm_saved).toMatchObject({ customer_id: 'cus_1', payment_id: null, pan_encrypted: 'v1.sealed' });
      expect(rows.pm_open).toMatchObject({ customer_id: null, payment_id: 'pay_open', pan_encrypted: 'v1.sealed' });
      expect(rows.pm_done).toMatchObject({ customer_id: null, payment_id: 'pay_done', pan_encrypted: '', card_last4: '4242' });
      expect(rows.pm_never).toMatchObject({ customer_id: null, payment_id: null, pan_encrypted: '', card_last4: '4242' });
      // From now on a chargeable card has an owner.
      await expect(db('live.payment_methods').insert(pm('pm_orphan', null))).rejects.toThrow(/payment_methods_owned/);
      await expect(db('sandbox.payment_methods').insert(pm('pm_orphan', null))).rejects.toThrow(/payment_methods_owned/);
    } finally {
      await db.destroy();
      await admin.raw(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.destroy();
    }
  });
});
