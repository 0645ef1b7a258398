import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type supertest from 'supertest';
import { envTable } from '../../db/environments';
import { newId } from '../../lib/ids';
import { bearer, createMerchant, Merchant, RunningWorker, startStack, startWorker, TestStack, unique } from '../support/stack';
import { CARDS, getPayment, pay, paymentsFixture, startSimulator, TestSimulator, type PaymentsFixture } from '../support/payments';

/**
 * The disputes API's own rules (docs/disputes.md): the resource as a row of it reads, the list and its
 * filters, validation answered with a precise 4xx at its field, who may call what, another account's
 * disputes being 404, `disputed`/`amount_disputed` on payments and charges, and refunds refused on a
 * disputed charge. Disputes made by processors' notifications, answered and decided, are the engine's
 * tests; here a dispute is a row written as its workflow's activity writes one.
 */

type Json = Record<string, any>;

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let f: PaymentsFixture;
let m: Merchant;
let other: Merchant;

const send = (method: 'get' | 'post', path: string, body?: object, token = m.secretKey) => {
  const req = stack.http[method](path).set(bearer(token));
  return method === 'get' ? req : req.send(body ?? {});
};

async function ok(res: supertest.Response | Promise<supertest.Response>, status = 200): Promise<Json> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  return r.body;
}

/** A 4xx with its reason and (for a field's rule) the field it is about. */
async function refused(res: supertest.Response | Promise<supertest.Response>, status: number, reason: string, path?: string): Promise<Json> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.body.error.details.reason, JSON.stringify(r.body)).toBe(reason);
  if (path !== undefined) expect(r.body.error.details.fields.map((x: Json) => x.path), JSON.stringify(r.body)).toContain(path);
  return r.body.error;
}

/** A succeeded payment of `m` and its charge. */
async function succeeded(amount = 2000): Promise<{ paymentId: string; chargeId: string }> {
  const res = await pay(stack, m, CARDS.visa, { amount });
  expect(res.body.data?.status, JSON.stringify(res.body)).toBe('SUCCEEDED');
  const payment = await getPayment(stack, m, res.body.data.id, 'include_charges=true');
  return { paymentId: payment.id, chargeId: payment.charges.at(-1).id };
}

/** A dispute row as the dispute's activity writes one (no workflow runs for it). */
async function disputeRow(charge: { paymentId: string; chargeId: string }, row: Json = {}): Promise<string> {
  const id = newId('dp');
  await stack.db(envTable('production', 'disputes')).insert({
    id, account_id: m.account.id, payment_id: charge.paymentId, charge_id: charge.chargeId, payment_provider_config_id: f.primary.id,
    processor_dispute_id: unique('du'), amount: 2000, currency: 'USD', reason: 'fraudulent', processor_reason: '10.4', status: 'NEEDS_RESPONSE',
    status_at: new Date(), evidence_due_by: new Date(Date.now() + 7 * 86_400_000), ...row,
  });
  return id;
}

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ RATE_LIMIT_RPS: '0', SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '5000' });
  worker = await startWorker(stack);
  f = await paymentsFixture(stack);
  m = f.merchant;
  other = await createMerchant(stack);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

describe('the dispute resource', () => {
  it('shows a dispute with every evidence field, the money it moved and its workflow\'s link', async () => {
    const charge = await succeeded();
    const at = '2026-03-01T10:00:00.000Z';
    const id = await disputeRow(charge, {
      evidence: JSON.stringify({ customer_name: 'Ada' }),
      balance_transactions: JSON.stringify([{ kind: 'withdrawn', amount: 2000, fee: 1500, currency: 'USD', event_id: 'pev_x', at }]),
      overdue_at: new Date(),
    });
    const { data } = await ok(send('get', `/v1/disputes/${id}`));
    expect(data).toMatchObject({
      object: 'dispute', id, payment_id: charge.paymentId, charge_id: charge.chargeId, account_id: m.account.id, amount: 2000, currency: 'USD',
      reason: 'fraudulent', status: 'NEEDS_RESPONSE', evidence_due_by: expect.any(String), evidence_submitted_at: null, is_inquiry: false,
      processor_dispute_id: expect.stringMatching(/^du/), payment_provider_config_id: f.primary.id,
      balance_transactions: [{ kind: 'withdrawn', amount: 2000, fee: 1500, currency: 'USD', at }],
      evidence_details: { due_by: data.evidence_due_by, past_due: true, has_evidence: true, submission_count: 0 },
      temporal: { workflow_id: `dispute/${id}`, ui_url: expect.any(String) },
    });
    expect(data.evidence.customer_name).toBe('Ada');
    expect(data.evidence.uncategorized_text).toBeNull();
    expect(Object.keys(data.evidence)).toHaveLength(16);
    // The processor's exchanges and the applied event ids are the engine's, not the merchant's.
    expect(data).not.toHaveProperty('exchanges');
    expect(data).not.toHaveProperty('applied_event_ids');
  });

  it('lists newest first, by status and payment, in keyset pages', async () => {
    const charge = await succeeded();
    const first = await disputeRow(charge, { status: 'WON', created_at: new Date(Date.now() - 2000) });
    const second = await disputeRow(charge, { status: 'NEEDS_RESPONSE', created_at: new Date(Date.now() - 1000) });
    const byPayment = await ok(send('get', `/v1/disputes?payment_id=${charge.paymentId}`));
    expect(byPayment.data.map((d: Json) => d.id)).toEqual([second, first]);
    expect(byPayment.total).toBe(2);
    const won = await ok(send('get', `/v1/disputes?payment_id=${charge.paymentId}&status=WON`));
    expect(won.data.map((d: Json) => d.id)).toEqual([first]);
    const after = await ok(send('get', `/v1/disputes?payment_id=${charge.paymentId}&limit=1&starting_after=${second}`));
    expect([after.data.map((d: Json) => d.id), after.page, after.has_more]).toEqual([[first], null, false]);
    // Lists carry no workflow link (as invoices and payments in lists).
    expect(byPayment.data[0]).not.toHaveProperty('temporal');
  });
});

describe('validation', () => {
  let id: string;
  beforeAll(async () => { id = await disputeRow(await succeeded()); });

  it('refuses evidence that names nothing, a field too long, an unknown field and a submit that is not a boolean', async () => {
    const nothing = await refused(send('post', `/v1/disputes/${id}/evidence`, {}), 400, 'validation_failed', 'body');
    expect(nothing.details.fields[0].message).toBe('give at least one evidence field, or submit: true');
    await refused(send('post', `/v1/disputes/${id}/evidence`, { submit: false }), 400, 'validation_failed', 'body');
    await refused(send('post', `/v1/disputes/${id}/evidence`, { customer_name: 'x'.repeat(20_001) }), 400, 'validation_failed', 'body/customer_name');
    await refused(send('post', `/v1/disputes/${id}/evidence`, { customer_phone: '1' }), 400, 'unknown_field', 'body/customer_phone');
    await refused(send('post', `/v1/disputes/${id}/evidence`, { uncategorized_text: 'x', submit: 'yes' }), 400, 'validation_failed', 'body/submit');
    await refused(send('post', `/v1/disputes/${id}/accept`, { reason: 'x' }), 400, 'unknown_field', 'body/reason');
  });

  it('refuses a list filter outside the catalogue and a cursor that is not one of the account\'s disputes', async () => {
    await refused(send('get', '/v1/disputes?status=OPEN'), 400, 'validation_failed', 'query/status');
    await refused(send('get', '/v1/disputes?payment_id=ch_x'), 400, 'validation_failed', 'query/payment_id');
    await refused(send('get', `/v1/disputes?starting_after=${newId('dp')}`), 422, 'invalid_pagination');
  });

  it('answers a closed dispute 409 dispute_closed before asking its workflow', async () => {
    const lost = await disputeRow(await succeeded(), { status: 'LOST' });
    const res = await refused(send('post', `/v1/disputes/${lost}/evidence`, { uncategorized_text: 'x' }), 409, 'invalid_state');
    expect(res.details).toMatchObject({ refusal: 'dispute_closed', status: 'LOST' });
    expect((await refused(send('post', `/v1/disputes/${lost}/accept`), 409, 'invalid_state')).details.refusal).toBe('dispute_closed');
  });
});

describe('who may call what', () => {
  let id: string;
  beforeAll(async () => { id = await disputeRow(await succeeded()); });

  it('refuses publishable keys', async () => {
    await refused(send('get', '/v1/disputes', undefined, m.publishableKey), 403, 'publishable_key_not_allowed');
    await refused(send('get', `/v1/disputes/${id}`, undefined, m.publishableKey), 403, 'publishable_key_not_allowed');
  });

  it('lets a dispute:read key read but not answer', async () => {
    const key = (await ok(send('post', '/v1/api-keys', { name: 'disputes reader', permissions: { dispute: ['read'] } }), 201)).data.key;
    await ok(send('get', `/v1/disputes/${id}`, undefined, key));
    await refused(send('post', `/v1/disputes/${id}/evidence`, { uncategorized_text: 'x' }, key), 403, 'insufficient_permissions');
    await refused(send('post', `/v1/disputes/${id}/accept`, {}, key), 403, 'insufficient_permissions');
    const payments = (await ok(send('post', '/v1/api-keys', { name: 'payments only', permissions: { payment: ['read'] } }), 201)).data.key;
    await refused(send('get', '/v1/disputes', undefined, payments), 403, 'insufficient_permissions');
  });

  it('hides another account\'s disputes: 404 on read and answers, absent from its list', async () => {
    await refused(send('get', `/v1/disputes/${id}`, undefined, other.secretKey), 404, 'not_found');
    await refused(send('post', `/v1/disputes/${id}/evidence`, { uncategorized_text: 'x' }, other.secretKey), 404, 'not_found');
    await refused(send('post', `/v1/disputes/${id}/accept`, {}, other.secretKey), 404, 'not_found');
    const listed = await ok(send('get', '/v1/disputes', undefined, other.secretKey));
    expect(listed.data).toEqual([]);
  });
});

describe('disputes on payments, charges and refunds', () => {
  it('shows disputed and amount_disputed on the payment (over its charges) and on the charge; an inquiry claims nothing', async () => {
    const clean = await succeeded();
    const charge = await succeeded(3000);
    await disputeRow(charge, { amount: 3000 });
    await disputeRow(charge, { amount: 3000, is_inquiry: true, status: 'WARNING_CLOSED' });
    const payment = await getPayment(stack, m, charge.paymentId, 'include_charges=true');
    expect(payment).toMatchObject({ disputed: true, amount_disputed: 3000 });
    expect(payment.charges.find((c: Json) => c.id === charge.chargeId)).toMatchObject({ disputed: true, amount_disputed: 3000 });
    const plain = await getPayment(stack, m, charge.paymentId, '');
    expect(plain).toMatchObject({ disputed: true, amount_disputed: 3000 });
    expect(await getPayment(stack, m, clean.paymentId, 'include_charges=true')).toMatchObject({ disputed: false, amount_disputed: 0 });
    // A list page reads its disputes at once, with or without the charges.
    for (const query of ['limit=5', 'limit=5&include_charges=true']) {
      const listed = await ok(send('get', `/v1/payments?${query}`));
      const byId = new Map(listed.data.map((p: Json) => [p.id, p]));
      expect(byId.get(charge.paymentId), query).toMatchObject({ disputed: true, amount_disputed: 3000 });
      expect(byId.get(clean.paymentId), query).toMatchObject({ disputed: false, amount_disputed: 0 });
    }
  });

  it('refuses to refund a charge with an open dispute (409 charge_disputed), by charge and by payment; a won one is refundable', async () => {
    const charge = await succeeded();
    const id = await disputeRow(charge);
    const byCharge = await refused(send('post', '/v1/refunds', { charge_id: charge.chargeId, amount: 100 }), 409, 'charge_disputed');
    expect(byCharge.details.charge_id).toBe(charge.chargeId);
    await refused(send('post', '/v1/refunds', { payment_id: charge.paymentId }), 409, 'charge_disputed');
    await stack.db(envTable('production', 'disputes')).where({ id }).update({ status: 'WON' });
    const refund = await ok(send('post', '/v1/refunds', { payment_id: charge.paymentId, amount: 100 }), 201);
    expect(refund.data).toMatchObject({ charge_id: charge.chargeId, amount: 100 });
  });

  it('declares 409 charge_disputed on the refund route', async () => {
    const doc = (await ok(send('get', '/v1/openapi.json'))) as Json;
    const responses = doc.paths['/v1/refunds'].post.responses;
    expect(JSON.stringify(responses['409'])).toContain('charge_disputed');
  });
});
