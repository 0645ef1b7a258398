import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, Merchant, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import {
  CARDS, card, confirm, createPayment, getPayment, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator,
} from '../support/payments';
import * as support from '../support/payments';
import { paymentWorkflowId } from '../../contracts/payments';
import * as savedCardCvc from '../../db/migrations/025_saved_card_cvc';

/**
 * A publishable key and a payment id must not make a card-testing oracle (issue #42, docs/security.md):
 * a publishable key needs the payment's client_secret, a payment takes at most 5 failed confirmations,
 * client-side declines are budgeted per card, IP and key in Postgres (shared by every API process), a
 * publishable key sees only a generic decline and saves no card, and a saved card keeps no CVC beyond the
 * authorization it was given for.
 */

let sim: TestSimulator;
let stack: TestStack;
/** Two more API processes on the same database, with low decline budgets: card 2 an hour, IP 3 and key 5 in 10 minutes. */
let low: TestStack;
let lowTwin: TestStack;
let worker: RunningWorker;
let f: PaymentsFixture;
const trustProxy = process.env.TRUST_PROXY;

const LOW = { CHECKOUT_DECLINES_PER_CARD_PER_HOUR: '2', CHECKOUT_DECLINES_PER_IP_PER_10_MIN: '3', CHECKOUT_DECLINES_PER_KEY_PER_10_MIN: '5' };

beforeAll(async () => {
  // Each test's shopper comes from an address of its own (X-Forwarded-For), as behind a load balancer.
  process.env.TRUST_PROXY = 'true';
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '1000' });
  low = await startStack({ SIMULATOR_URL: sim.url, ...LOW });
  lowTwin = await startStack({ SIMULATOR_URL: sim.url, ...LOW });
  worker = await startWorker(stack);
  f = await paymentsFixture(stack);
});
afterAll(async () => {
  await worker?.stop();
  for (const s of [stack, low, lowTwin]) await s?.close();
  await sim?.close();
  if (trustProxy === undefined) delete process.env.TRUST_PROXY;
  else process.env.TRUST_PROXY = trustProxy;
});

let ipCounter = 0;
/** An address no other test of this file shops from. */
const newIp = () => `198.51.100.${(ipCounter += 1)}`;

/** A Luhn-valid Visa number no scripted test card has: the simulator approves it unless a config's decline_rate says otherwise. */
let cardCounter = 0;
function freshCard(): string {
  const body = `411111${String(Date.now() % 1e6).padStart(6, '0')}${String((cardCounter += 1) % 1000).padStart(3, '0')}`;
  const digits = [...body].map(Number);
  const sum = digits.reverse().reduce((acc, d, i) => acc + (i % 2 === 0 ? (d * 2 > 9 ? d * 2 - 9 : d * 2) : d), 0);
  return `${body}${(10 - (sum % 10)) % 10}`;
}

async function newPayment(m: Merchant, body: Record<string, unknown> = {}, on = stack): Promise<{ id: string; secret: string }> {
  const res = await createPayment(on, m, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.data.id, secret: res.body.data.client_secret };
}

const pkConfirm = (m: Merchant, paymentId: string, body: Record<string, unknown>, opts: { on?: TestStack; ip?: string } = {}) =>
  (opts.on ?? stack).http.post(`/v1/payments/${paymentId}/confirm`).set(bearer(m.publishableKey)).set('X-Forwarded-For', opts.ip ?? newIp()).send(body);

const pkGet = (m: Merchant, paymentId: string, query = '') =>
  stack.http.get(`/v1/payments/${paymentId}${query}`).set(bearer(m.publishableKey));

/** Charges the processor holds (each a call that reached it). */
const processorCharges = async (): Promise<number> => (await sim.stats()).charges.total;

/** A merchant whose every authorization the processor declines (card_declined), whatever the card. */
const decliningMerchant = async (on: TestStack): Promise<Merchant> =>
  (await paymentsFixture(on, { primary: { decline_rate: 1 }, backup: { decline_rate: 1 } })).merchant;

describe('the client_secret', () => {
  it('is on the payment a secret key creates and reads, never in lists, events or the workflow history', async () => {
    const created = await createPayment(stack, f.merchant, { metadata: { order: 'cs-1' } });
    const { id, client_secret: secret } = created.body.data;
    expect(secret).toMatch(new RegExp(`^${id}_secret_[A-Za-z0-9_-]{43}$`));
    expect((await getPayment(stack, f.merchant, id, '')).client_secret).toBe(secret);
    const confirmed = await confirm(stack, f.merchant, id, { payment_method: card(CARDS.visa) });
    expect(confirmed.body.data).toMatchObject({ status: 'SUCCEEDED', client_secret: secret });

    const listed = await stack.http.get('/v1/payments?limit=5').set(bearer(f.merchant.secretKey));
    expect(listed.body.data.find((p: { id: string }) => p.id === id)).not.toHaveProperty('client_secret');
    const events = await stack.db('live.events').where({ payment_id: id });
    expect(events.length).toBeGreaterThan(2);
    expect(JSON.stringify(events)).not.toContain(secret.slice(-43));
    const history = await (await stack.deps.temporal()).workflow.getHandle(paymentWorkflowId(id)).fetchHistory();
    expect(JSON.stringify(history)).not.toContain(secret.slice(-43));
    // Two payments never share one.
    expect((await newPayment(f.merchant)).secret).not.toBe(secret);
  });

  it('a publishable key confirms only with it: missing or wrong is the 404 of an unknown payment', async () => {
    const unknown = await pkConfirm(f.merchant, 'pay_01UNKNOWN0000000000000000', { payment_method: card(CARDS.visa) });
    expect(unknown.status).toBe(404);
    const { id, secret } = await newPayment(f.merchant);
    const before = await processorCharges();
    for (const given of [undefined, `${id}_secret_${'x'.repeat(43)}`, secret.slice(0, -1), `${secret}x`]) {
      const res = await pkConfirm(f.merchant, id, { payment_method: card(CARDS.visa), ...(given === undefined ? {} : { client_secret: given }) });
      expect(res.status, String(given)).toBe(404);
      expect(res.body).toEqual(unknown.body);
    }
    expect(await processorCharges()).toBe(before);
    expect((await getPayment(stack, f.merchant, id, '')).status).toBe('CREATED');
    const paid = await pkConfirm(f.merchant, id, { client_secret: secret, payment_method: card(CARDS.visa) });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body.data).toMatchObject({ status: 'SUCCEEDED' });
    expect(paid.body.data).not.toHaveProperty('client_secret');
  });

  it('a publishable key reads only with it; a secret key that gives one must give the right one', async () => {
    const { id, secret } = await newPayment(f.merchant);
    const unknown = await pkGet(f.merchant, 'pay_01UNKNOWN0000000000000000', `?client_secret=${secret}`);
    expect(unknown.status).toBe(404);
    for (const query of ['', `?client_secret=${id}_secret_nope`]) {
      const res = await pkGet(f.merchant, id, query);
      expect(res.status, query).toBe(404);
      expect(res.body).toEqual(unknown.body);
    }
    const read = await pkGet(f.merchant, id, `?client_secret=${secret}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({ object: 'payment', id, status: 'CREATED' });
    expect(read.body.data).not.toHaveProperty('client_secret');

    const wrong = await stack.http.get(`/v1/payments/${id}?client_secret=${id}_secret_nope`).set(bearer(f.merchant.secretKey));
    expect(wrong.status).toBe(404);
    const right = await stack.http.get(`/v1/payments/${id}?client_secret=${secret}`).set(bearer(f.merchant.secretKey));
    expect(right.body.data.client_secret).toBe(secret);
    const wrongConfirm = await confirm(stack, f.merchant, id, { client_secret: `${id}_secret_nope`, payment_method: card(CARDS.visa) });
    expect(wrongConfirm.status).toBe(404);
  });
});

describe('at most 5 failed confirmations a payment', () => {
  it('the 5th leaves it FAILED with too_many_attempts; a 6th is 409 before the processor, by the API and by the workflow', async () => {
    const { id } = await newPayment(f.merchant);
    for (let i = 1; i <= 5; i++) {
      const res = await confirm(stack, f.merchant, id, { payment_method: card(CARDS.declined) });
      expect(res.body.data.status, JSON.stringify(res.body)).toBe('FAILED');
      expect(res.body.data.last_error.code).toBe(i < 5 ? 'card_declined' : 'too_many_attempts');
    }
    const read = await getPayment(stack, f.merchant, id, 'include_events=true');
    // The secret key still reads the issuer's code of the last decline.
    expect(read.last_error).toMatchObject({ code: 'too_many_attempts', decline_code: 'card_declined' });
    expect(read.events.filter((e: { event: string }) => e.event === 'payment_intent.payment_failed').at(-1).data.object.last_error.code).toBe('too_many_attempts');
    expect((await stack.db('live.payments').where({ id }).first()).failed_confirmations).toBe(5);

    const before = await processorCharges();
    const cardsBefore = await stack.db('live.payment_methods').where({ payment_id: id }).count<{ count: string }[]>('id as count');
    const refused = await confirm(stack, f.merchant, id, { payment_method: card(CARDS.visa) });
    expect(refused.status).toBe(409);
    expect(refused.body.error.details.reason).toBe('too_many_attempts');
    expect(await stack.db('live.payment_methods').where({ payment_id: id }).count<{ count: string }[]>('id as count')).toEqual(cardsBefore);

    // The workflow counts too: with the row's count forgotten, its confirm validator still refuses, and the card vaulted for it is erased.
    await stack.db('live.payments').where({ id }).update({ failed_confirmations: 0 });
    const byWorkflow = await confirm(stack, f.merchant, id, { payment_method: card(CARDS.visa) });
    expect(byWorkflow.status, JSON.stringify(byWorkflow.body)).toBe(409);
    expect(byWorkflow.body.error.details.reason).toBe('too_many_attempts');
    expect(await processorCharges()).toBe(before);
    const leftover = await stack.db('live.payment_methods').where({ payment_id: id }).whereNot({ pan_encrypted: '' });
    expect(leftover).toEqual([]);
    expect((await getPayment(stack, f.merchant, id, '')).status).toBe('FAILED');
  });

  it('a publishable key sees too_many_attempts as it is', async () => {
    const { id, secret } = await newPayment(f.merchant);
    let last;
    for (let i = 1; i <= 5; i++) last = await confirm(stack, f.merchant, id, { payment_method: card(CARDS.insufficientFunds) });
    expect(last!.body.data.last_error.code).toBe('too_many_attempts');
    const read = await pkGet(f.merchant, id, `?client_secret=${secret}`);
    expect(read.body.data.last_error).toEqual({ code: 'too_many_attempts', decline_code: null });
    const refused = await pkConfirm(f.merchant, id, { client_secret: secret, payment_method: card(CARDS.visa) });
    expect(refused.status).toBe(409);
    expect(refused.body.error.details.reason).toBe('too_many_attempts');
  });
});

describe('decline budgets of client-side confirmations', () => {
  it('a card declined 5 times in an hour through a publishable key is refused the 6th time, 429 without a charge', async () => {
    const m = (await paymentsFixture(stack)).merchant;
    for (let i = 0; i < 5; i++) {
      const { id, secret } = await newPayment(m);
      const res = await pkConfirm(m, id, { client_secret: secret, payment_method: card(CARDS.declined) });
      expect(res.body.data?.status, JSON.stringify(res.body)).toBe('FAILED');
    }
    const { id, secret } = await newPayment(m);
    const before = await processorCharges();
    const refused = await pkConfirm(m, id, { client_secret: secret, payment_method: card(CARDS.declined) });
    expect(refused.status).toBe(429);
    expect(refused.body.error.details.reason).toBe('too_many_declines');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(3000);
    expect(await processorCharges()).toBe(before);
    // Nothing was vaulted for it, and the payment is as it was.
    expect(await stack.db('live.payment_methods').where({ payment_id: id })).toEqual([]);
    expect((await getPayment(stack, m, id, '')).status).toBe('CREATED');
    // Another card pays; the merchant's own server is not counted.
    expect((await pkConfirm(m, id, { client_secret: secret, payment_method: card(CARDS.visa) })).body.data.status).toBe('SUCCEEDED');
    const server = await newPayment(m);
    expect((await confirm(stack, m, server.id, { payment_method: card(CARDS.declined) })).body.data.status).toBe('FAILED');
  });

  it('declines counted on one API process are refused on another (the counters are in Postgres)', async () => {
    const m = await decliningMerchant(low);
    const number = freshCard();
    for (const on of [low, lowTwin]) {
      const { id, secret } = await newPayment(m, {}, on);
      expect((await pkConfirm(m, id, { client_secret: secret, payment_method: card(number) }, { on })).body.data.status).toBe('FAILED');
    }
    const { id, secret } = await newPayment(m, {}, low);
    const before = await processorCharges();
    const refused = await pkConfirm(m, id, { client_secret: secret, payment_method: card(number) }, { on: low });
    expect(refused.status).toBe(429);
    expect(refused.body.error.details.reason).toBe('too_many_declines');
    expect(await processorCharges()).toBe(before);
  });

  it('an IP past its budget is refused, whatever the card; another IP goes on', async () => {
    const m = await decliningMerchant(low);
    const ip = newIp();
    for (const on of [low, lowTwin, low]) {
      const { id, secret } = await newPayment(m, {}, on);
      expect((await pkConfirm(m, id, { client_secret: secret, payment_method: card(freshCard()) }, { on, ip })).body.data.status).toBe('FAILED');
    }
    const { id, secret } = await newPayment(m, {}, low);
    const before = await processorCharges();
    const refused = await pkConfirm(m, id, { client_secret: secret, payment_method: card(freshCard()) }, { on: lowTwin, ip });
    expect(refused.status).toBe(429);
    expect(refused.body.error.details.reason).toBe('too_many_declines');
    expect(await processorCharges()).toBe(before);
    const elsewhere = await pkConfirm(m, id, { client_secret: secret, payment_method: card(freshCard()) }, { on: low });
    expect(elsewhere.body.data.status, JSON.stringify(elsewhere.body)).toBe('FAILED');
  });

  it('a publishable key past its budget is refused from any IP with any card', async () => {
    const m = await decliningMerchant(low);
    for (let i = 0; i < 5; i++) {
      const { id, secret } = await newPayment(m, {}, low);
      const on = i % 2 ? lowTwin : low;
      expect((await pkConfirm(m, id, { client_secret: secret, payment_method: card(freshCard()) }, { on })).body.data.status).toBe('FAILED');
    }
    const { id, secret } = await newPayment(m, {}, low);
    const before = await processorCharges();
    const refused = await pkConfirm(m, id, { client_secret: secret, payment_method: card(freshCard()) }, { on: low });
    expect(refused.status).toBe(429);
    expect(refused.body.error.details.reason).toBe('too_many_declines');
    expect(await processorCharges()).toBe(before);
    // Approvals spend no budget: more of them than the key's budget of declines all pass.
    const paying = (await paymentsFixture(low)).merchant;
    for (let i = 0; i < 7; i++) {
      const p = await newPayment(paying, {}, low);
      expect((await pkConfirm(paying, p.id, { client_secret: p.secret, payment_method: card(freshCard()) }, { on: low })).body.data.status).toBe('SUCCEEDED');
    }
  });
});

describe('what a publishable key is told and may do', () => {
  it('sees any decline as a generic card_declined; the secret key keeps the issuer\'s code', async () => {
    const { id, secret } = await newPayment(f.merchant);
    const declined = await pkConfirm(f.merchant, id, { client_secret: secret, payment_method: card(CARDS.insufficientFunds) });
    expect(declined.body.data).toMatchObject({ status: 'FAILED', last_error: { code: 'card_declined', decline_code: 'generic_decline' } });
    expect((await pkGet(f.merchant, id, `?client_secret=${secret}`)).body.data.last_error).toEqual({ code: 'card_declined', decline_code: 'generic_decline' });
    expect(JSON.stringify(declined.body)).not.toContain('insufficient_funds');
    expect((await getPayment(stack, f.merchant, id, '')).last_error).toMatchObject({ code: 'card_declined', decline_code: 'insufficient_funds' });
    const bySecretKey = await confirm(stack, f.merchant, (await newPayment(f.merchant)).id, { payment_method: card(CARDS.insufficientFunds) });
    expect(bySecretKey.body.data.last_error).toMatchObject({ code: 'card_declined', decline_code: 'insufficient_funds' });
  });

  it('cannot save a card (403), outside a checkout session that allows it', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const { id, secret } = await newPayment(f.merchant, { customer_id: customer });
    const before = await processorCharges();
    const res = await pkConfirm(f.merchant, id, { client_secret: secret, payment_method: card(CARDS.visa), save_payment_method: true });
    expect(res.status).toBe(403);
    expect(res.body.error.details).toMatchObject({ reason: 'publishable_key_not_allowed', fields: ['body/save_payment_method'] });
    expect(await processorCharges()).toBe(before);
    expect(await stack.db('live.payment_methods').where({ customer_id: customer })).toEqual([]);
    // Without asking to save, it pays.
    expect((await pkConfirm(f.merchant, id, { client_secret: secret, payment_method: card(CARDS.visa) })).body.data.status).toBe('SUCCEEDED');
  });
});

describe('a saved card keeps no CVC beyond its authorization', () => {
  const cardsOf = (customerId: string) => stack.db('live.payment_methods').where({ customer_id: customerId });

  it('saved on its own (customer payment methods), it never stores one', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const pm = await support.savedCard(stack, f.merchant, customer);
    const [row] = await cardsOf(customer);
    expect(row).toMatchObject({ id: pm, cvc_encrypted: null });
    expect(row.pan_encrypted).toMatch(/^v2\./);
    // It still pays (card on file, no CVC).
    const { id } = await newPayment(f.merchant, { customer_id: customer });
    expect((await confirm(stack, f.merchant, id, { payment_method_id: pm })).body.data.status).toBe('SUCCEEDED');
  });

  it('saved with a confirm, its CVC is gone after that confirm\'s authorization', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const { id } = await newPayment(f.merchant, { customer_id: customer });
    const res = await confirm(stack, f.merchant, id, { payment_method: card(CARDS.visa), save_payment_method: true });
    expect(res.body.data.status).toBe('SUCCEEDED');
    const [row] = await cardsOf(customer);
    expect(row).toMatchObject({ id: res.body.data.payment_method_id, cvc_encrypted: null });
    expect(row.pan_encrypted).toMatch(/^v2\./);
  });

  it('saved with a confirm that never reaches an authorization, its CVC is gone too', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const { id } = await newPayment(f.merchant, { customer_id: customer, routing: { exclude_provider_config_ids: [f.primary.id, f.backup.id] } });
    const res = await confirm(stack, f.merchant, id, { payment_method: card(CARDS.visa), save_payment_method: true });
    expect(res.status, JSON.stringify(res.body)).toBe(422);
    expect(res.body.error.details.reason).toBe('no_eligible_provider');
    const [row] = await cardsOf(customer);
    expect(row).toMatchObject({ cvc_encrypted: null });
    expect(row.pan_encrypted).toMatch(/^v2\./);
  });

  it('saved with a confirm the workflow refuses, its CVC is gone too', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const { id } = await newPayment(f.merchant, { customer_id: customer });
    for (let i = 0; i < 5; i++) await confirm(stack, f.merchant, id, { payment_method: card(CARDS.declined) });
    // The row's count forgotten: the API lets the confirm through to the workflow, which refuses it.
    await stack.db('live.payments').where({ id }).update({ failed_confirmations: 0 });
    const res = await confirm(stack, f.merchant, id, { payment_method: card(CARDS.visa), save_payment_method: true });
    expect(res.body.error.details.reason).toBe('too_many_attempts');
    const [row] = await cardsOf(customer);
    expect(row).toMatchObject({ cvc_encrypted: null });
  });
  it('saved before that rule, its CVC is wiped by migration 025, but for a card a confirm in flight may still use', async () => {
    const customer = await support.newCustomer(stack, f.merchant);
    const [kept, inFlight] = [await support.savedCard(stack, f.merchant, customer), await support.savedCard(stack, f.merchant, customer)];
    // As such cards were stored: a sealed CVC until first use.
    await stack.db('live.payment_methods').whereIn('id', [kept, inFlight]).update({ cvc_encrypted: 'v2.legacy-sealed-cvc' });
    const { id } = await newPayment(f.merchant, { customer_id: customer });
    await stack.db('live.payments').where({ id }).update({ status: 'PROCESSING', payment_method_id: inFlight });
    await savedCardCvc.up(stack.db);
    expect((await stack.db('live.payment_methods').where({ id: kept }).first()).cvc_encrypted).toBeNull();
    expect((await stack.db('live.payment_methods').where({ id: inFlight }).first()).cvc_encrypted).toBe('v2.legacy-sealed-cvc');
    await stack.db('live.payments').where({ id }).update({ status: 'FAILED' });
    await savedCardCvc.up(stack.db);
    expect((await stack.db('live.payment_methods').where({ id: inFlight }).first()).cvc_encrypted).toBeNull();
  });
});
