import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Environment } from '../../db/environments';
import { envTable } from '../../db/environments';
import { newId } from '../../lib/ids';
import { bearer, createMerchant, Merchant, startStack, TestStack } from '../support/stack';

let stack: TestStack;
let live: Merchant;
let sandbox: Merchant;
let other: Merchant;
beforeAll(async () => {
  stack = await startStack();
  live = await createMerchant(stack);
  sandbox = await createMerchant(stack, { sandboxOf: live });
  other = await createMerchant(stack);
});
afterAll(async () => { await stack.close(); });

/**
 * What the payment workflow writes (a later issue): a payment, its routing plan and one charge per
 * attempt — a soft decline on the first candidate, then an approval on the second.
 */
async function seedPlan(env: Environment, accountId: string, createdAt: Date) {
  const paymentId = newId('pay');
  const planId = newId('rp');
  const candidates = [
    { payment_provider_config_id: 'ppc_A', payment_provider_id: 'pp_1', payment_provider_method_id: 'ppm_1', estimated_fee: 320, reason: 'least_cost' },
    { payment_provider_config_id: 'ppc_B', payment_provider_id: 'pp_1', payment_provider_method_id: 'ppm_1', estimated_fee: 410, reason: 'least_cost' },
  ];
  await stack.db(envTable(env, 'payments')).insert({
    id: paymentId, account_id: accountId, amount: 10_000, currency: 'USD', status: 'SUCCEEDED', amount_received: 10_000,
    metadata: JSON.stringify({ order: '42' }), created_at: createdAt, updated_at: createdAt,
  });
  await stack.db(envTable(env, 'routing_plans')).insert({
    id: planId, account_id: accountId, payment_id: paymentId, request_id: 'req_1', trace_id: 'trace_1', current_index: 1,
    candidates: JSON.stringify(candidates), metadata: JSON.stringify({ ineligible: [] }), created_at: createdAt, updated_at: createdAt,
  });
  const charge = (attemptNo: number, extra: Record<string, unknown>) => ({
    id: newId('ch'), payment_id: paymentId, account_id: accountId, amount: 10_000, currency: 'USD', attempt_no: attemptNo,
    routing_plan_id: planId, payment_provider_id: 'pp_1', payment_provider_method_id: 'ppm_1',
    payment_provider_config_id: candidates[attemptNo - 1].payment_provider_config_id,
    // A careless writer put credentials in the snapshot: the serializer must never show them.
    payment_provider_config_snapshot: JSON.stringify({
      id: candidates[attemptNo - 1].payment_provider_config_id, name: 'Primary', credentials: { api_key: 'sk_LEAKED_0001' },
      nested: { credentials_encrypted: 'v1.xyz' },
    }),
    performance: JSON.stringify({ duration: 120 + attemptNo }),
    exchanges: JSON.stringify([{ operation: 'authorize', outcome: attemptNo === 1 ? 'soft_decline' : 'approved' }]),
    ...extra,
  });
  const charges = [
    charge(2, { status: 'CAPTURED', authorized_amount: 10_000, captured_amount: 10_000, provider_reference: 'sim_2' }),
    charge(1, { status: 'DECLINED', decline_code: 'processing_error' }),
  ];
  await stack.db(envTable(env, 'charges')).insert(charges);
  return { paymentId, planId, chargeIds: [charges[1].id, charges[0].id] };
}

describe('GET /routing-plans', () => {
  let older: Awaited<ReturnType<typeof seedPlan>>;
  let newer: Awaited<ReturnType<typeof seedPlan>>;
  let sandboxPlan: Awaited<ReturnType<typeof seedPlan>>;
  beforeAll(async () => {
    older = await seedPlan('production', live.account.id, new Date('2026-01-01T10:00:00.000Z'));
    newer = await seedPlan('production', live.account.id, new Date('2026-01-02T10:00:00.000Z'));
    sandboxPlan = await seedPlan('sandbox', sandbox.account.id, new Date('2026-01-03T10:00:00.000Z'));
    await seedPlan('production', other.account.id, new Date('2026-01-04T10:00:00.000Z'));
  });

  it('lists the account\'s plans, newest first, with charges and payment embedded', async () => {
    const res = await stack.http.get(`/v1/routing-plans?account_id=${live.account.id}`).set(bearer(live.token));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, message: expect.any(String) });
    expect(res.body.data.map((p: any) => p.id)).toEqual([newer.planId, older.planId]);
    const plan = res.body.data[1];
    expect(plan).toMatchObject({
      object: 'routing_plan', id: older.planId, account_id: live.account.id, payment_id: older.paymentId, request_id: 'req_1',
      trace_id: 'trace_1', current_index: 1, routing_origin: 'MERCHANT_DIRECT', metadata: { ineligible: [] },
      created_at: '2026-01-01T10:00:00.000Z', updated_at: '2026-01-01T10:00:00.000Z',
    });
    expect(plan.candidates).toHaveLength(2);
    expect(plan.attempts).toBeUndefined();
    expect(plan.payment).toMatchObject({
      object: 'payment', id: older.paymentId, account_id: live.account.id, amount: 10_000, currency: 'USD', status: 'SUCCEEDED',
      installments: 1, routing_origin: 'MERCHANT_DIRECT', metadata: { order: '42' }, customer_id: null, checkout_session_id: null,
    });
    expect(plan.charges.map((c: any) => c.id)).toEqual(older.chargeIds);
    expect(plan.charges[0]).toMatchObject({
      object: 'charge', payment_id: older.paymentId, account_id: live.account.id, status: 'DECLINED', attempt_no: 1, amount: 10_000,
      authorized_amount: 0, captured_amount: 0, refunded_amount: 0, currency: 'USD', installments: 1,
      security: {}, transaction: {}, details: {}, metadata: {}, exchanges: [{ operation: 'authorize', outcome: 'soft_decline' }],
      performance: { duration: 121 }, routing_plan_id: older.planId, payment_provider_id: 'pp_1', payment_provider_method_id: 'ppm_1',
      routing_origin: 'MERCHANT_DIRECT', payment_provider_config_snapshot: { id: 'ppc_A', name: 'Primary', nested: {} },
      payment_method_id: null, customer_id: null, decline_code: 'processing_error',
    });
    expect(plan.charges[1]).toMatchObject({ status: 'CAPTURED', attempt_no: 2, captured_amount: 10_000 });
    expect(res.text).not.toContain('LEAKED');
    expect(res.text).not.toContain('credentials');
  });

  it('embeds attempts on request, and drops charges or payment when asked', async () => {
    const res = await stack.http.get(`/v1/routing-plans?include_attempts=true&include_charges=false&include_payment=false`).set(bearer(live.secretKey));
    expect(res.status).toBe(200);
    const plan = res.body.data.find((p: any) => p.id === older.planId);
    expect(plan.charges).toBeUndefined();
    expect(plan.payment).toBeUndefined();
    expect(plan.attempts).toEqual([
      expect.objectContaining({ attempt_no: 1, candidate_index: 0, charge_id: older.chargeIds[0], status: 'DECLINED', decline_code: 'processing_error', payment_provider_config_id: 'ppc_A' }),
      expect.objectContaining({ attempt_no: 2, candidate_index: 1, charge_id: older.chargeIds[1], status: 'CAPTURED', decline_code: null }),
    ]);
  });

  it('filters by payment and pages when page or limit is given', async () => {
    const byPayment = await stack.http.get(`/v1/routing-plans?payment_id=${older.paymentId}`).set(bearer(live.secretKey));
    expect(byPayment.body.data.map((p: any) => p.id)).toEqual([older.planId]);
    const first = await stack.http.get('/v1/routing-plans?page=1&limit=1').set(bearer(live.secretKey));
    expect(first.body.data.map((p: any) => p.id)).toEqual([newer.planId]);
    const second = await stack.http.get('/v1/routing-plans?page=2&limit=1').set(bearer(live.secretKey));
    expect(second.body.data.map((p: any) => p.id)).toEqual([older.planId]);
    const beyond = await stack.http.get('/v1/routing-plans?page=3&limit=1').set(bearer(live.secretKey));
    expect(beyond.body.data).toEqual([]);
  });

  it('validates page, limit and the include flags', async () => {
    for (const [query, path] of [
      ['page=0', 'query/page'], ['limit=0', 'query/limit'], ['page=-1', 'query/page'], ['limit=abc', 'query/limit'],
      ['page=1.5', 'query/page'], ['limit=101', 'query/limit'], ['include_charges=maybe', 'query/include_charges'],
      ['include_attempts=2', 'query/include_attempts'], ['account_id=nope', 'query/account_id'],
    ]) {
      const res = await stack.http.get(`/v1/routing-plans?${query}`).set(bearer(live.secretKey));
      expect(res.status, query).toBe(400);
      expect(res.body.error.details.reason).toBe('validation_failed');
      expect(res.body.error.details.fields[0].path, query).toBe(path);
    }
    const unknown = await stack.http.get('/v1/routing-plans?sort=asc').set(bearer(live.secretKey));
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details.reason).toBe('unknown_field');
  });

  it('keeps environments apart: a sandbox key lists sandbox plans only, a live key never sees them', async () => {
    const sandboxList = await stack.http.get('/v1/routing-plans').set(bearer(sandbox.secretKey));
    expect(sandboxList.body.data.map((p: any) => p.id)).toEqual([sandboxPlan.planId]);
    expect(sandboxList.body.data[0].payment.id).toBe(sandboxPlan.paymentId);
    const viaToken = await stack.http.get(`/v1/routing-plans?account_id=${sandbox.account.id}`).set(bearer(live.token));
    expect(viaToken.body.data.map((p: any) => p.id)).toEqual([sandboxPlan.planId]);
    const liveList = await stack.http.get('/v1/routing-plans').set(bearer(live.secretKey));
    expect(liveList.body.data.map((p: any) => p.id)).not.toContain(sandboxPlan.planId);
  });

  it('answers 403 for another account, a publishable key or a key without routing:read; 400 without account_id for a user', async () => {
    for (const credential of [live.token, live.secretKey]) {
      const res = await stack.http.get(`/v1/routing-plans?account_id=${other.account.id}`).set(bearer(credential));
      expect(res.status).toBe(403);
      expect(res.body.error.details.reason).toBe('account_access_denied');
    }
    const publishable = await stack.http.get('/v1/routing-plans').set(bearer(live.publishableKey));
    expect(publishable.status).toBe(403);
    expect(publishable.body.error.details.reason).toBe('publishable_key_not_allowed');
    const noAccount = await stack.http.get('/v1/routing-plans').set(bearer(live.token));
    expect(noAccount.status).toBe(400);
    const m = await createMerchant(stack);
    await stack.db('core.api_keys').where({ account_id: m.account.id, type: 'SECRET' }).update({ permissions: JSON.stringify({ routing: ['write'] }) });
    const limited = await stack.http.get('/v1/routing-plans').set(bearer(m.secretKey));
    expect(limited.status).toBe(403);
    expect(limited.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'routing:read' });
    expect((await stack.http.get('/v1/routing-plans')).status).toBe(401);
  });
});

describe('GET /routing-plans/:id', () => {
  it('gets one plan with charges and payment, and hides other accounts\' and the other environment\'s plans as 404', async () => {
    const mine = await seedPlan('production', live.account.id, new Date());
    const mySandbox = await seedPlan('sandbox', sandbox.account.id, new Date());
    const theirs = await seedPlan('production', other.account.id, new Date());

    const res = await stack.http.get(`/v1/routing-plans/${mine.planId}`).set(bearer(live.token));
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ object: 'routing_plan', id: mine.planId, payment: { id: mine.paymentId } });
    expect(res.body.data.charges.map((c: any) => c.id)).toEqual(mine.chargeIds);
    const lean = await stack.http.get(`/v1/routing-plans/${mine.planId}?include_charges=false&include_payment=false&include_attempts=true`).set(bearer(live.secretKey));
    expect(lean.body.data.charges).toBeUndefined();
    expect(lean.body.data.payment).toBeUndefined();
    expect(lean.body.data.attempts).toHaveLength(2);
    expect((await stack.http.get(`/v1/routing-plans/${mySandbox.planId}`).set(bearer(live.token))).status).toBe(200);

    const hidden: [string, string][] = [
      [live.token, theirs.planId], [live.secretKey, theirs.planId], [live.secretKey, mySandbox.planId],
      [sandbox.secretKey, mine.planId], [live.token, 'rp_01NOSUCHPLAN0000000000000'],
    ];
    for (const [credential, id] of hidden) {
      const miss = await stack.http.get(`/v1/routing-plans/${id}`).set(bearer(credential));
      expect(miss.status, id).toBe(404);
      expect(miss.body.error.details.reason).toBe('not_found');
    }
    const badFlag = await stack.http.get(`/v1/routing-plans/${mine.planId}?include_payment=sometimes`).set(bearer(live.token));
    expect(badFlag.status).toBe(400);
    expect((await stack.http.get(`/v1/routing-plans/${mine.planId}`).set(bearer(live.publishableKey))).status).toBe(403);
  });
});
