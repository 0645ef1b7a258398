import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createMerchant, Merchant, RunningWorker, startStack, startWorker, TestStack, unique } from '../support/stack';
import { card, CARDS, confirm, getPayment, pay, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { createConfig, createProvider } from '../support/routing';
import { refundCommand, refundWorkflowId, type RefundWorkflowInput } from '../../contracts/refunds';
import { createRefund } from '../../workflows/refunds/client';
import { newId } from '../../lib/ids';
import { eventually, spawnWorker, WorkerProcess } from '../support/worker-process';

// One file on purpose: vitest runs files in parallel, and every file's workers poll the same `payments`
// task queue on the suite's Temporal server, each against its own simulator. The worker-crash case at
// the end stops this file's in-process worker first and runs child-process workers only.
let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker | undefined;
let f: PaymentsFixture;
const children: WorkerProcess[] = [];
const extraSims: TestSimulator[] = [];

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '1000' });
  worker = await startWorker(stack);
  f = await paymentsFixture(stack);
});
afterAll(async () => {
  for (const child of children) await child.stop().catch(() => {});
  await worker?.stop();
  await stack?.close();
  await sim?.close();
  for (const s of extraSims) await s.close();
});

function refund(m: Merchant, body: Record<string, unknown>, opts: { key?: string; query?: string; headers?: Record<string, string> } = {}) {
  return stack.http.post(`/v1/refunds${opts.query ?? ''}`).set(opts.headers ?? bearer(opts.key ?? m.secretKey)).send(body);
}

/** A payment of `amount` captured on the merchant's cheapest config. */
async function captured(m: Merchant, amount = 1000) {
  const res = await pay(stack, m, CARDS.visa, { amount });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.data.status).toBe('SUCCEEDED');
  return res.body.data as { id: string; charges: any[] };
}

const chargeRow = (id: string, schema = 'live') => stack.db(`${schema}.charges`).where({ id }).first();
const refundRow = (id: string, schema = 'live') => stack.db(`${schema}.refunds`).where({ id }).first();

async function settled(id: string, timeoutMs = 30_000) {
  return eventually(async () => {
    const row = await refundRow(id);
    return row && row.status !== 'PENDING' ? row : undefined;
  }, timeoutMs, 200);
}

async function setSimulate(m: Merchant, configId: string, simulate?: Record<string, unknown>) {
  const res = await stack.http.put(`/v1/payment-provider-configs/${configId}`).set(bearer(m.token))
    .send({ credentials: { api_key: 'sim_primary_key_0001', ...(simulate ? { simulate } : {}) } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function eventsOf(m: Merchant, paymentId: string) {
  const res = await stack.http.get(`/v1/events?payment_id=${paymentId}&limit=100`).set(bearer(m.secretKey));
  expect(res.status).toBe(200);
  return res.body.data as any[];
}

describe('concurrent refunds', () => {
  it('accepts exactly what was captured: 20 × 100 against 1,000 → 10 accepted, 10 refused, each refunded once', async () => {
    const payment = await captured(f.merchant, 1000);
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: 20 }, () => refund(f.merchant, { payment_id: payment.id, amount: 100 })));
    const took = Date.now() - started;
    console.log(`20 concurrent refunds answered in ${took} ms`);

    const accepted = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 422);
    expect(accepted).toHaveLength(10);
    expect(refused).toHaveLength(10);
    for (const r of refused) {
      expect(r.body.error.details.reason).toBe('refund_exceeds_available');
      expect(r.body.error.details.available).toBeGreaterThanOrEqual(0);
      expect(r.body.error.details.available).toBeLessThan(100);
    }
    const ids = accepted.map((r) => r.body.data.id as string);
    expect(new Set(ids).size).toBe(10);

    const charge = await eventually(async () => {
      const row = await chargeRow(payment.charges[0].id);
      return Number(row.refunded_amount) === 1000 ? row : undefined;
    });
    expect(Number(charge.pending_refund_amount)).toBe(0);
    expect(charge.status).toBe('REFUNDED');
    const read = await getPayment(stack, f.merchant, payment.id, '');
    expect(read).toMatchObject({ status: 'REFUNDED', amount_refunded: 1000 });
    const rows = await stack.db('live.refunds').where({ payment_id: payment.id });
    expect(rows.map((r) => r.status)).toEqual(Array(10).fill('SUCCEEDED'));
    // The processor saw each accepted refund once, under its own id, and refunded it once.
    for (const id of ids) {
      expect(await sim.key(id)).toMatchObject({ calls: 1, operation: 'refund', status_code: 200 });
    }
  });

  it('has the database refuse an over-reservation even if code tried one (CHECK constraint)', async () => {
    const payment = await captured(f.merchant, 500);
    await expect(stack.db('live.charges').where({ id: payment.charges[0].id }).update({ pending_refund_amount: 501 }))
      .rejects.toThrow(/charges_refunds_within_captured/);
  });
});

describe('partial and full refunds', () => {
  it('moves the payment to PARTIALLY_REFUNDED, then REFUNDED, with the events and a visible workflow', async () => {
    const payment = await captured(f.merchant, 1000);
    const chargeId = payment.charges[0].id;

    const first = await refund(f.merchant, { payment_id: payment.id, amount: 300, reason: 'REQUESTED_BY_CUSTOMER', metadata: { ticket: 't-1' } });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.data).toMatchObject({
      object: 'refund', charge_id: chargeId, payment_id: payment.id, status: 'SUCCEEDED', amount: 300, currency: 'USD',
      reason: 'REQUESTED_BY_CUSTOMER', reason_other: null, metadata: { ticket: 't-1' }, failure_reason: null,
    });
    expect(first.body.data.id).toMatch(/^re_[0-9A-Z]{26}$/);
    let read = await getPayment(stack, f.merchant, payment.id, 'include_charges=true');
    expect(read).toMatchObject({ status: 'PARTIALLY_REFUNDED', amount_refunded: 300 });
    expect(read.charges[0]).toMatchObject({ status: 'PARTIALLY_REFUNDED', refunded_amount: 300, pending_refund_amount: 0 });

    // No amount: all that remains, here by charge id.
    const second = await refund(f.merchant, { charge_id: chargeId, reason: 'OTHER', reason_other: 'goodwill' });
    expect(second.status, JSON.stringify(second.body)).toBe(201);
    expect(second.body.data).toMatchObject({ status: 'SUCCEEDED', amount: 700, reason: 'OTHER', reason_other: 'goodwill' });
    read = await getPayment(stack, f.merchant, payment.id, 'include_charges=true');
    expect(read).toMatchObject({ status: 'REFUNDED', amount_refunded: 1000 });
    expect(read.charges[0]).toMatchObject({ status: 'REFUNDED', refunded_amount: 1000 });
    expect(read.charges[0].exchanges.map((e: any) => e.operation)).toEqual(['authorize', 'refund', 'refund']);

    const nothingLeft = await refund(f.merchant, { payment_id: payment.id });
    expect(nothingLeft.status).toBe(422);
    expect(nothingLeft.body.error.details).toMatchObject({ reason: 'refund_exceeds_available', available: 0 });

    const events = await eventsOf(f.merchant, payment.id);
    for (const r of [first, second]) {
      // Oldest first; the two events of one settlement share a transaction (and a timestamp).
      const mine = events.filter((e) => e.refund_id === r.body.data.id).reverse().map((e) => e.event);
      expect(mine[0]).toBe('refund.created');
      expect(mine.slice(1).sort()).toEqual(['charge.refunded', 'refund.succeeded']);
    }
    const succeeded = events.find((e) => e.event === 'refund.succeeded' && e.refund_id === first.body.data.id);
    expect(succeeded).toMatchObject({ subject_type: 'refund', subject_id: first.body.data.id, charge_id: chargeId, actor_type: 'api_key' });
    expect(succeeded.data.object).toMatchObject({ object: 'refund', id: first.body.data.id, status: 'SUCCEEDED' });
    const chargeRefunded = events.find((e) => e.event === 'charge.refunded');
    expect(chargeRefunded.data.object).toMatchObject({ object: 'charge', id: chargeId, status: 'REFUNDED', refunded_amount: 1000 });

    // Reads: one refund, the list (newest first) and its filters.
    const one = await stack.http.get(`/v1/refunds/${first.body.data.id}`).set(bearer(f.merchant.secretKey));
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual(first.body.data);
    const list = await stack.http.get(`/v1/refunds?payment_id=${payment.id}`).set(bearer(f.merchant.secretKey));
    expect(list.body).toMatchObject({ success: true, total: 2, page: 1, limit: 10, pages: 1 });
    expect(list.body.data.map((r: any) => r.id)).toEqual([second.body.data.id, first.body.data.id]);
    const byCharge = await stack.http.get(`/v1/refunds?charge_id=${chargeId}&status=SUCCEEDED&limit=1&page=2`).set(bearer(f.merchant.secretKey));
    expect(byCharge.body).toMatchObject({ total: 2, pages: 2 });
    expect(byCharge.body.data.map((r: any) => r.id)).toEqual([first.body.data.id]);
    const failedOnes = await stack.http.get(`/v1/refunds?payment_id=${payment.id}&status=FAILED`).set(bearer(f.merchant.secretKey));
    expect(failedOnes.body.total).toBe(0);

    // The workflow: findable by search attributes, and nothing secret in its history.
    const client = await stack.deps.temporal();
    const handle = client.workflow.getHandle(refundWorkflowId(first.body.data.id));
    const description = await handle.describe();
    expect(description.status.name).toBe('COMPLETED');
    expect(description.typedSearchAttributes.get({ name: 'RefundStatus', type: 'KEYWORD' } as any)).toBe('SUCCEEDED');
    expect(description.typedSearchAttributes.get({ name: 'PaymentId', type: 'KEYWORD' } as any)).toBe(payment.id);
    const history = JSON.stringify(await handle.fetchHistory());
    expect(history).not.toContain('sim_primary_key');
    expect(history).not.toContain(CARDS.visa);
  });

  it('replays a create retried with the same Idempotency-Key', async () => {
    const payment = await captured(f.merchant, 800);
    const key = unique('idem');
    const headers = { ...bearer(f.merchant.secretKey), 'Idempotency-Key': key };
    const a = await refund(f.merchant, { payment_id: payment.id, amount: 200 }, { headers });
    const b = await refund(f.merchant, { payment_id: payment.id, amount: 200 }, { headers });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers['idempotent-replayed']).toBe('true');
    expect(b.body.data.id).toBe(a.body.data.id);
    expect(Number((await chargeRow(payment.charges[0].id)).refunded_amount)).toBe(200);
  });
});

describe('a refund the processor declines', () => {
  it('fails and releases its reservation, so a later refund can use the amount', async () => {
    const payment = await captured(f.merchant, 1000);
    const charge = payment.charges[0];
    // Someone refunded 400 in the processor's own dashboard: it has 600 left, while our books say 1,000.
    const outOfBand = await fetch(`${sim.url}/v1/charges/${charge.provider_reference}/refunds`, {
      method: 'POST',
      headers: { authorization: 'Bearer sim_primary_key_0001', 'content-type': 'application/json', 'idempotency-key': unique('dashboard') },
      body: JSON.stringify({ amount: 400 }),
    });
    expect(outOfBand.status).toBe(200);

    const declined = await refund(f.merchant, { payment_id: payment.id, amount: 700 });
    expect(declined.status, JSON.stringify(declined.body)).toBe(201);
    expect(declined.body.data).toMatchObject({ status: 'FAILED', amount: 700, failure_reason: 'refund_exceeds_captured' });
    const row = await chargeRow(charge.id);
    expect(row).toMatchObject({ status: 'CAPTURED' });
    expect([Number(row.refunded_amount), Number(row.pending_refund_amount)]).toEqual([0, 0]);
    expect((await getPayment(stack, f.merchant, payment.id, '')).status).toBe('SUCCEEDED');

    // With the 700 still reserved only 300 would be available; released, 600 is accepted and succeeds.
    const later = await refund(f.merchant, { payment_id: payment.id, amount: 600 });
    expect(later.status, JSON.stringify(later.body)).toBe(201);
    expect(later.body.data.status).toBe('SUCCEEDED');
    expect(await chargeRow(charge.id)).toMatchObject({ status: 'PARTIALLY_REFUNDED' });

    const names = (await eventsOf(f.merchant, payment.id)).map((e) => e.event);
    expect(names.filter((n) => n === 'refund.failed')).toHaveLength(1);
    expect(names.filter((n) => n === 'refund.succeeded')).toHaveLength(1);
  });
});

describe('the processor down', () => {
  it('keeps the refund PENDING while the processor is out, and completes it once when it is back', async () => {
    const fx = await paymentsFixture(stack);
    const payment = await captured(fx.merchant, 1000);
    const charge = payment.charges[0];
    expect(charge.payment_provider_config_id).toBe(fx.primary.id);
    await setSimulate(fx.merchant, fx.primary.id, { outage: true });

    const res = await refund(fx.merchant, { payment_id: payment.id, amount: 250 });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toMatchObject({ message: 'Refund is pending', data: { status: 'PENDING', amount: 250 } });
    const id = res.body.data.id as string;
    expect(await chargeRow(charge.id)).toMatchObject({ pending_refund_amount: 250, refunded_amount: 0 });
    // The processor is being asked (and answers 503); nothing is recorded under the key yet.
    await eventually(async () => (await sim.key(id)).calls >= 2, 20_000, 200);
    expect((await sim.key(id)).operation).toBeNull();
    expect((await refundRow(id)).status).toBe('PENDING');

    // An operator finds it in Temporal by its search attributes.
    const client = await stack.deps.temporal();
    const found = await eventually(async () => {
      for await (const wf of client.workflow.list({ query: `RefundStatus = "PENDING" AND PaymentId = "${payment.id}"` })) return wf.workflowId;
      return undefined;
    }, 10_000, 250);
    expect(found).toBe(refundWorkflowId(id));

    await setSimulate(fx.merchant, fx.primary.id);
    const done = await settled(id, 60_000);
    expect(done.status).toBe('SUCCEEDED');
    expect(await sim.key(id)).toMatchObject({ operation: 'refund', status_code: 200 });
    expect(await chargeRow(charge.id)).toMatchObject({ refunded_amount: 250, pending_refund_amount: 0 });
    const names = (await eventsOf(fx.merchant, payment.id)).map((e) => e.event);
    expect(names.filter((n) => n === 'refund.succeeded')).toHaveLength(1);
    expect(names.filter((n) => n === 'charge.refunded')).toHaveLength(1);
  }, 90_000);
});

describe('what a refund request may be', () => {
  it('validates the body', async () => {
    const payment = await captured(f.merchant, 1000);
    const cases: [Record<string, unknown>, string][] = [
      [{ payment_id: payment.id, amount: 0 }, 'body/amount'],
      [{ payment_id: payment.id, amount: -100 }, 'body/amount'],
      [{ payment_id: payment.id, amount: 1.5 }, 'body/amount'],
      [{ payment_id: payment.id, reason: 'OTHER' }, 'body/reason_other'],
      [{ payment_id: payment.id, reason: 'DUPLICATE', reason_other: 'why' }, 'body/reason_other'],
      [{ payment_id: payment.id, reason: 'BORED' }, 'body/reason'],
      [{ payment_id: payment.id, charge_id: payment.charges[0].id }, 'body'],
      [{ amount: 100 }, 'body'],
    ];
    for (const [body, path] of cases) {
      const res = await refund(f.merchant, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.reason).toBe('validation_failed');
      expect(res.body.error.details.fields.map((x: any) => x.path), JSON.stringify(body)).toContain(path);
    }
    const unknownField = await refund(f.merchant, { payment_id: payment.id, note: 'x' });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.error.details.reason).toBe('unknown_field');
    expect(Number((await chargeRow(payment.charges[0].id)).pending_refund_amount)).toBe(0);
  });

  it('answers 404 for unknown or invisible payments and charges, 403 for another account', async () => {
    const unknownPayment = await refund(f.merchant, { payment_id: 'pay_01NOPE0000000000000000000' });
    expect(unknownPayment.status).toBe(404);
    expect(unknownPayment.body.error.details.reason).toBe('not_found');
    const unknownCharge = await refund(f.merchant, { charge_id: 'ch_01NOPE0000000000000000000' });
    expect(unknownCharge.status).toBe(404);

    const other = await createMerchant(stack);
    const payment = await captured(f.merchant, 1000);
    expect((await refund(other, { payment_id: payment.id })).status).toBe(404);
    expect((await refund(other, { charge_id: payment.charges[0].id })).status).toBe(404);
    const named = await refund(other, { payment_id: payment.id }, { query: `?account_id=${f.merchant.account.id}` });
    expect(named.status).toBe(403);
    expect(named.body.error.details.reason).toBe('account_access_denied');
    const viaJwt = await refund(other, { payment_id: payment.id }, { query: `?account_id=${f.merchant.account.id}`, headers: bearer(other.token) });
    expect(viaJwt.status).toBe(403);
    // The owner's JWT needs account_id, and then may refund.
    expect((await refund(f.merchant, { payment_id: payment.id, amount: 10 }, { headers: bearer(f.merchant.token) })).status).toBe(400);
    const owner = await refund(f.merchant, { payment_id: payment.id, amount: 10 }, { query: `?account_id=${f.merchant.account.id}`, headers: bearer(f.merchant.token) });
    expect(owner.status).toBe(201);
    expect(owner.body.data.status).toBe('SUCCEEDED');
    expect((await stack.http.get(`/v1/refunds/${owner.body.data.id}`).set(bearer(other.secretKey))).status).toBe(404);
    expect((await stack.http.get(`/v1/refunds/re_01NOPE0000000000000000000`).set(bearer(f.merchant.secretKey))).status).toBe(404);
  });

  it('refuses to refund what was never captured (409 invalid_state), saying so with the right article', async () => {
    const authorized = await pay(stack, f.merchant, CARDS.visa, { amount: 1000, auto_capture: false });
    expect(authorized.body.data.status).toBe('AUTHORIZED');
    const res = await refund(f.merchant, { payment_id: authorized.body.data.id });
    expect(res.status).toBe(409);
    expect(res.body.error.details).toMatchObject({ reason: 'invalid_state', status: 'AUTHORIZED' });
    expect(res.body.error.message).toBe('An AUTHORIZED payment has no captured charge to refund.');
    const byCharge = await refund(f.merchant, { charge_id: authorized.body.data.charges[0].id, amount: 100 });
    expect(byCharge.status).toBe(409);
    expect(byCharge.body.error.details).toMatchObject({ reason: 'invalid_state', status: 'AUTHORIZED' });
    expect(byCharge.body.error.message).toBe('An AUTHORIZED charge cannot be refunded.');
    const again = await confirm(stack, f.merchant, authorized.body.data.id, { payment_method: card(CARDS.visa) });
    expect([again.status, again.body.error.message]).toEqual([409, 'An AUTHORIZED payment cannot be confirmed.']);

    const declined = await pay(stack, f.merchant, CARDS.declined, { amount: 1000 });
    expect(declined.body.data.status).toBe('FAILED');
    const onFailed = await refund(f.merchant, { payment_id: declined.body.data.id });
    expect(onFailed.status).toBe(409);
    expect(onFailed.body.error.details).toMatchObject({ reason: 'invalid_state', status: 'FAILED' });
    expect(onFailed.body.error.message).toBe('A FAILED payment has no captured charge to refund.');
    expect((await refund(f.merchant, { charge_id: declined.body.data.charges[0].id })).body.error.details.status).toBe('DECLINED');
  });

  it('moves nothing for a refund workflow started by anyone but the API (no seal, or a seal of another command)', async () => {
    const paid = (await pay(stack, f.merchant, CARDS.visa, { amount: 1000 })).body.data;
    const charge = paid.charges[0];
    const client = await stack.deps.temporal();
    // A forger's input may leave the seal out altogether: the cast lets the test send what the type forbids.
    const forged = (refundId: string, extra: Partial<RefundWorkflowInput> = {}): RefundWorkflowInput => ({
      refundId, accountId: f.merchant.account.id, workspaceId: f.merchant.workspaceId, environment: 'production',
      paymentId: paid.id, chargeId: charge.id, amount: 1000, metadata: {}, context: { actor: { type: 'system', id: 'forger' } }, ...extra,
    }) as RefundWorkflowInput;
    // The ids a forger reads from search attributes; a seal made for 1 applied to 1000; a made-up one.
    const tries = [
      forged(newId('re')),
      forged(newId('re'), { seal: 'x'.repeat(43) }),
      (() => { const input = forged(newId('re'), { amount: 1 }); return { ...input, amount: 1000, seal: stack.deps.vault.seal('refund', refundCommand(input)) }; })(),
    ];
    for (const input of tries) {
      await expect(createRefund(client, input)).rejects.toThrow();
      expect(await stack.db('live.refunds').where({ id: input.refundId }).first()).toBeUndefined();
      expect(await sim.key(input.refundId)).toMatchObject({ calls: 0 });
    }
    const row = await stack.db('live.charges').where({ id: charge.id }).first();
    expect([Number(row.refunded_amount), Number(row.pending_refund_amount)]).toEqual([0, 0]);
    // The API's own refund of the same charge goes through.
    const res = await refund(f.merchant, { payment_id: paid.id });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });

  it('keeps environments apart: a live key cannot refund a sandbox payment', async () => {
    const sandbox = await createMerchant(stack, { sandboxOf: f.merchant });
    const provider = await createProvider(stack, { sandbox: true });
    await createConfig(stack, sandbox, provider.id, { credentials: { api_key: 'sim_sandbox_key_0003' } });
    const payment = await captured(sandbox, 1500);
    const live = await refund(f.merchant, { payment_id: payment.id });
    expect(live.status).toBe(404);
    expect((await refund(f.merchant, { charge_id: payment.charges[0].id })).status).toBe(404);
    expect((await stack.http.get(`/v1/refunds?payment_id=${payment.id}`).set(bearer(f.merchant.secretKey))).body.total).toBe(0);

    const ok = await refund(sandbox, { payment_id: payment.id, amount: 500 });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect(ok.body.data.status).toBe('SUCCEEDED');
    expect(await refundRow(ok.body.data.id, 'sandbox')).toMatchObject({ status: 'SUCCEEDED' });
    expect(await refundRow(ok.body.data.id, 'live')).toBeUndefined();
    expect((await stack.http.get(`/v1/refunds/${ok.body.data.id}`).set(bearer(f.merchant.secretKey))).status).toBe(404);
  });

  it('needs refund:create to create and refund:read to read', async () => {
    const payment = await captured(f.merchant, 1000);
    const created = await stack.http.post('/v1/api-keys').set(bearer(f.merchant.secretKey))
      .send({ name: 'refund reader', permissions: { refund: ['read'] } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const readerKey = created.body.data.key as string;
    const denied = await refund(f.merchant, { payment_id: payment.id }, { key: readerKey });
    expect(denied.status).toBe(403);
    expect(denied.body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'refund:create' });
    expect((await stack.http.get('/v1/refunds').set(bearer(readerKey))).status).toBe(200);
  });
});

// Last: this file's in-process worker stops here, so that only the child-process workers below run tasks.
describe('a worker killed mid-refund', () => {
  it('is replaced, and the refund completes once at the processor', async () => {
    await worker!.stop();
    worker = undefined;
    const crashSim = await startSimulator();
    extraSims.push(crashSim);
    const env = { SIMULATOR_URL: crashSim.url, PROVIDER_TIMEOUT_MS: '10000' };
    const first = await spawnWorker(stack, env);
    children.push(first);

    const fx = await paymentsFixture(stack);
    const payment = await captured(fx.merchant, 1000);
    // The processor now takes 3 s to answer: long enough to kill the worker with the refund in flight.
    await setSimulate(fx.merchant, fx.primary.id, { latency_ms: 3000 });

    // .then() sends it now (supertest sends on first await); it answers after the kill.
    const refunding = refund(fx.merchant, { payment_id: payment.id, amount: 400 }).then((r) => r);
    const refundId = await eventually(async () => (await stack.db('live.refunds').where({ payment_id: payment.id }).first('id'))?.id as string | undefined);
    await eventually(async () => (await crashSim.key(refundId)).calls >= 1, 20_000);
    await first.kill();

    const second = await spawnWorker(stack, env);
    children.push(second);
    const res = await refunding;
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data.id).toBe(refundId);
    expect(['PENDING', 'SUCCEEDED']).toContain(res.body.data.status);

    const done = await settled(refundId, 60_000);
    expect(done.status).toBe('SUCCEEDED');
    // Asked again after the crash with the same key: the processor answered from its record.
    const stats = await crashSim.stats();
    expect(stats.refunds).toBe(1);
    const key = await crashSim.key(refundId);
    expect(key).toMatchObject({ operation: 'refund', status_code: 200 });
    expect(key.calls).toBeGreaterThanOrEqual(2);
    expect(await chargeRow(payment.charges[0].id)).toMatchObject({ refunded_amount: 400, pending_refund_amount: 0, status: 'PARTIALLY_REFUNDED' });
    const names = (await eventsOf(fx.merchant, payment.id)).map((e) => e.event);
    expect(names.filter((n) => n === 'refund.succeeded')).toHaveLength(1);
  }, 120_000);
});
