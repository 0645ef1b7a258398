import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createMerchant, RunningWorker, startStack, startWorker, TestStack, unique } from '../support/stack';
import {
  CARDS, card, confirm, createPayment, getPayment, pay, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator,
} from '../support/payments';
import { paymentWorkflowId } from '../../contracts/payments';
import { createActivities } from '../../activities';
import { flatten } from '../support/history';

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

describe('creating a payment', () => {
  it('answers 201 with the payment in CREATED, readable at once, with its workflow running', async () => {
    const res = await createPayment(stack, f.merchant, { amount: 2599, metadata: { order: 'o-1' } });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      object: 'payment', status: 'CREATED', amount: 2599, currency: 'USD', installments: 1, auto_capture: true,
      routing_origin: 'MERCHANT_DIRECT', metadata: { order: 'o-1' }, account_id: f.merchant.account.id,
    });
    expect(res.body.data.id).toMatch(/^pay_[0-9A-Z]{26}$/);
    expect(res.body.data.temporal.workflow_id).toBe(paymentWorkflowId(res.body.data.id));
    const read = await getPayment(stack, f.merchant, res.body.data.id, '');
    expect(read.status).toBe('CREATED');
    const client = await stack.deps.temporal();
    const description = await client.workflow.getHandle(paymentWorkflowId(res.body.data.id)).describe();
    expect(description.status.name).toBe('RUNNING');
    expect(description.typedSearchAttributes.get({ name: 'PaymentStatus', type: 'KEYWORD' } as any)).toBe('CREATED');
  });

  it('creates a guest customer with the payment; its contact details stay out of the workflow history', async () => {
    const email = `${unique('guest')}@example.com`;
    const res = await createPayment(stack, f.merchant, { customer: { name: 'Guest Traveller', email, phone: '+44 20 7946 0958', country: 'GB' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const read = await getPayment(stack, f.merchant, res.body.data.id, 'include_customer=true');
    expect(read.customer).toMatchObject({ object: 'customer', name: 'Guest Traveller', email, phone: '+44 20 7946 0958', is_guest: true });
    const history = flatten(await (await stack.deps.temporal()).workflow.getHandle(paymentWorkflowId(res.body.data.id)).fetchHistory()).join('\n');
    // The workflow is given the customer's id, and none of what a customer's erasure must reach.
    expect(history).toContain(read.customer.id);
    for (const detail of ['Guest Traveller', email, '7946 0958']) expect(history).not.toContain(detail);
  });

  it('writes no guest customer when the create and confirm is refused for its card', async () => {
    const email = `${unique('refused')}@example.com`;
    const res = await createPayment(stack, f.merchant, {
      customer: { email }, confirm: true, save_payment_method: true, payment_method: { ...card(CARDS.visa), card: { ...card(CARDS.visa).card, exp_year: 2001 } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.details.reason).toBe('invalid_card');
    expect(await stack.db('live.customers').where({ email })).toEqual([]);
  });

  it('maps ten concurrent creates with one Idempotency-Key to one payment and one workflow', async () => {
    const key = unique('idem');
    const results = await Promise.all(Array.from({ length: 10 }, () => createPayment(stack, f.merchant, { amount: 777 }, { 'Idempotency-Key': key })));
    const ok = results.filter((r) => r.status === 201);
    expect(results.every((r) => r.status === 201 || r.status === 409)).toBe(true);
    expect(new Set(ok.map((r) => r.body.data.id)).size).toBe(1);
    const count = await stack.db('live.payments').where({ account_id: f.merchant.account.id, amount: 777 }).count().first();
    expect(Number(count!.count)).toBe(1);
  });

  it('validates the body', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ amount: 0 }, 'body/amount'], [{ amount: 1.5 }, 'body/amount'], [{ amount: 100_000_000 }, 'body/amount'],
      [{ currency: 'usd' }, 'body/currency'], [{ routing: { max_attempts: 6 } }, 'body/routing/max_attempts'],
      [{ customer_id: 'cus_01NOPE' }, 'body/customer_id'],
    ];
    for (const [body, path] of cases) {
      const res = await createPayment(stack, f.merchant, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.fields.map((x: any) => x.path)).toContain(path);
    }
  });
});

describe('confirming', () => {
  it('approves and captures on the cheapest provider', async () => {
    const res = await pay(stack, f.merchant, CARDS.visa);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.status).toBe('SUCCEEDED');
    expect(res.body.data.charges).toHaveLength(1);
    expect(res.body.data.charges[0]).toMatchObject({
      object: 'charge', status: 'CAPTURED', attempt_no: 1, amount: 1000, authorized_amount: 1000, captured_amount: 1000,
      payment_provider_config_id: f.primary.id, payment_provider_id: f.provider.id,
    });
    expect(res.body.data.charges[0].performance.duration).toBeGreaterThanOrEqual(0);
    // Captured with the approval: one call, which asked for the capture (no `<charge>:capture` follows).
    expect(res.body.data.charges[0].exchanges.map((e: any) => [e.operation, e.request.body.capture])).toEqual([['authorize', true]]);
    expect(JSON.stringify(res.body)).not.toContain(CARDS.visa);
    expect(JSON.stringify(res.body.data.charges[0].payment_provider_config_snapshot)).not.toContain('sim_primary_key');
    const read = await getPayment(stack, f.merchant, res.body.data.id);
    expect(read.routing_plans).toHaveLength(1);
    expect(read.routing_plans[0]).toMatchObject({ current_index: 0 });
    expect(read.routing_plans[0].candidates.map((c: any) => c.payment_provider_config_id)).toEqual([f.primary.id, f.backup.id]);
    expect(read.events.map((e: any) => e.event)).toEqual([
      'payment_intent.created', 'payment_intent.processing', 'charge.succeeded', 'payment_intent.succeeded',
    ]);
    expect(read.events[3]).toMatchObject({ object: 'event', version: 1, payment_id: read.id, actor_type: 'api_key' });
  });

  for (const [name, number, code] of [
    ['card_declined', CARDS.declined, 'card_declined'],
    ['insufficient_funds', CARDS.insufficientFunds, 'insufficient_funds'],
    ['expired_card', CARDS.expired, 'expired_card'],
  ] as const) {
    it(`stops at a hard decline (${name}): one charge, payment FAILED`, async () => {
      const res = await pay(stack, f.merchant, number);
      expect(res.status).toBe(200);
      expect(res.body.data.status).toBe('FAILED');
      expect(res.body.data.charges).toHaveLength(1);
      expect(res.body.data.charges[0]).toMatchObject({ status: 'DECLINED', decline_code: code });
      expect(res.body.data.last_error).toMatchObject({ decline_code: code });
    });
  }

  it('cascades on soft declines and fails when every candidate does', async () => {
    const res = await pay(stack, f.merchant, CARDS.processingError);
    expect(res.body.data.status).toBe('FAILED');
    expect(res.body.data.charges.map((c: any) => [c.attempt_no, c.status, c.decline_code, c.payment_provider_config_id])).toEqual([
      [1, 'FAILED', 'processing_error', f.primary.id],
      [2, 'FAILED', 'processing_error', f.backup.id],
    ]);
    const read = await getPayment(stack, f.merchant, res.body.data.id);
    expect(read.events.filter((e: any) => e.event === 'charge.failed')).toHaveLength(2);
    expect(read.events.at(-1).event).toBe('payment_intent.payment_failed');
  });

  it('may be confirmed again after it failed', async () => {
    const failed = await pay(stack, f.merchant, CARDS.declined);
    const again = await confirm(stack, f.merchant, failed.body.data.id, { payment_method: card(CARDS.visa) });
    expect(again.body.data.status).toBe('SUCCEEDED');
    expect(again.body.data.charges).toHaveLength(2);
  });

  it('honours routing hints and exclusions', async () => {
    const hinted = await pay(stack, f.merchant, CARDS.visa, { routing: { provider_config_ids: [f.backup.id] } });
    expect(hinted.body.data.charges[0].payment_provider_config_id).toBe(f.backup.id);
    const excluded = await pay(stack, f.merchant, CARDS.visa, {}, { routing: { exclude_provider_config_ids: [f.primary.id] } });
    expect(excluded.body.data.charges[0].payment_provider_config_id).toBe(f.backup.id);
  });

  it('answers 422 no_eligible_provider and leaves the payment FAILED', async () => {
    const created = await createPayment(stack, f.merchant, { routing: { exclude_provider_config_ids: [f.primary.id, f.backup.id] } });
    const res = await confirm(stack, f.merchant, created.body.data.id, { payment_method: card(CARDS.visa) });
    expect(res.status).toBe(422);
    expect(res.body.error.details.reason).toBe('no_eligible_provider');
    expect((await getPayment(stack, f.merchant, created.body.data.id)).status).toBe('FAILED');
  });

  it('refuses to confirm a payment that already succeeded (409), and bad bodies (400)', async () => {
    const done = await pay(stack, f.merchant, CARDS.visa);
    const again = await confirm(stack, f.merchant, done.body.data.id, { payment_method: card(CARDS.visa) });
    expect(again.status).toBe(409);
    expect(again.body.error.details).toMatchObject({ reason: 'invalid_state', status: 'SUCCEEDED' });
    const created = await createPayment(stack, f.merchant);
    for (const body of [{}, { payment_method_id: 'pm_01X', payment_method: card(CARDS.visa) }]) {
      expect((await confirm(stack, f.merchant, created.body.data.id, body)).status).toBe(400);
    }
    const badCard = await confirm(stack, f.merchant, created.body.data.id, { payment_method: card('4242424242424241') });
    expect(badCard.status).toBe(400);
    expect(badCard.body.error.details.reason).toBe('invalid_card');
  });

  it('refuses routing hints from a publishable key (403 at body/routing), but takes installments', async () => {
    const created = await createPayment(stack, f.merchant);
    const calls = (await sim.stats()).calls;
    for (const routing of [{ provider_config_ids: [f.backup.id] }, { exclude_provider_config_ids: [f.primary.id] }, {}]) {
      const res = await stack.http.post(`/v1/payments/${created.body.data.id}/confirm`).set(bearer(f.merchant.publishableKey))
        .send({ payment_method: card(CARDS.visa), routing });
      expect(res.status, JSON.stringify(routing)).toBe(403);
      expect(res.body.error.details).toMatchObject({ reason: 'publishable_key_not_allowed', fields: ['body/routing'] });
    }
    expect((await sim.stats()).calls).toBe(calls);
    expect(await stack.db('live.payment_methods').where({ payment_id: created.body.data.id })).toEqual([]);
    const res = await stack.http.post(`/v1/payments/${created.body.data.id}/confirm`).set(bearer(f.merchant.publishableKey))
      .send({ client_secret: created.body.data.client_secret, payment_method: card(CARDS.visa), installments: 1 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.status).toBe('SUCCEEDED');
    // A secret key still steers.
    const steered = await pay(stack, f.merchant, CARDS.visa, {}, { routing: { provider_config_ids: [f.backup.id] } });
    expect(steered.body.data.charges[0].payment_provider_config_id).toBe(f.backup.id);
  });

  it('lets a publishable key confirm and read with the payment\'s client_secret, but not create', async () => {
    const created = await createPayment(stack, f.merchant);
    const { id, client_secret: clientSecret } = created.body.data;
    const res = await stack.http.post(`/v1/payments/${id}/confirm`).set(bearer(f.merchant.publishableKey)).send({ client_secret: clientSecret, payment_method: card(CARDS.mastercard) });
    expect(res.body.data.status).toBe('SUCCEEDED');
    expect((await stack.http.get(`/v1/payments/${id}?client_secret=${clientSecret}`).set(bearer(f.merchant.publishableKey))).status).toBe(200);
    expect((await stack.http.post('/v1/payments').set(bearer(f.merchant.publishableKey)).send({ amount: 1, currency: 'USD' })).status).toBe(403);
  });
});

describe('capture and cancel', () => {
  it('authorizes only, then captures in full', async () => {
    const res = await pay(stack, f.merchant, CARDS.visa, { auto_capture: false });
    expect(res.body.data).toMatchObject({ status: 'AUTHORIZED', amount_capturable: 1000 });
    expect(res.body.data.charges[0].status).toBe('AUTHORIZED');
    // The authorize did not ask for the capture; the capture command makes the second call.
    expect(res.body.data.charges[0].exchanges.map((e: any) => [e.operation, e.request.body.capture])).toEqual([['authorize', undefined]]);
    const captured = await stack.http.post(`/v1/payments/${res.body.data.id}/capture`).set(bearer(f.merchant.secretKey)).send({});
    expect(captured.status).toBe(200);
    expect(captured.body.data).toMatchObject({ status: 'SUCCEEDED', amount_received: 1000 });
    expect(captured.body.data.charges[0]).toMatchObject({ status: 'CAPTURED', captured_amount: 1000 });
    expect(captured.body.data.charges[0].exchanges.map((e: any) => e.operation)).toEqual(['authorize', 'capture']);
  });

  it('captures part of an authorization and refuses more than authorized', async () => {
    const res = await pay(stack, f.merchant, CARDS.visa, { auto_capture: false, amount: 5000 });
    const tooMuch = await stack.http.post(`/v1/payments/${res.body.data.id}/capture`).set(bearer(f.merchant.secretKey)).send({ amount: 5001 });
    expect(tooMuch.status).toBe(400);
    const part = await stack.http.post(`/v1/payments/${res.body.data.id}/capture`).set(bearer(f.merchant.secretKey)).send({ amount: 3000 });
    expect(part.body.data).toMatchObject({ status: 'SUCCEEDED', amount_received: 3000 });
    expect(part.body.data.charges[0]).toMatchObject({ captured_amount: 3000, authorized_amount: 5000 });
  });

  it('cancels an authorization (voided at the processor) and then refuses to capture it', async () => {
    const res = await pay(stack, f.merchant, CARDS.visa, { auto_capture: false });
    const canceled = await stack.http.post(`/v1/payments/${res.body.data.id}/cancel`).set(bearer(f.merchant.secretKey)).send({ reason: 'REQUESTED_BY_CUSTOMER' });
    expect(canceled.status).toBe(200);
    expect(canceled.body.data).toMatchObject({ status: 'CANCELED', cancellation_reason: 'requested_by_customer' });
    expect(canceled.body.data.charges[0].status).toBe('VOIDED');
    expect((await sim.key(`${res.body.data.charges[0].id}:void`)).calls).toBe(1);
    const capture = await stack.http.post(`/v1/payments/${res.body.data.id}/capture`).set(bearer(f.merchant.secretKey)).send({});
    expect(capture.status).toBe(409);
    expect(capture.body.error.details).toMatchObject({ reason: 'invalid_state', status: 'CANCELED' });
  });

  it('cancels a payment that was never confirmed, and refuses to capture a CREATED one', async () => {
    const created = await createPayment(stack, f.merchant);
    const capture = await stack.http.post(`/v1/payments/${created.body.data.id}/capture`).set(bearer(f.merchant.secretKey)).send({});
    expect(capture.status).toBe(409);
    const canceled = await stack.http.post(`/v1/payments/${created.body.data.id}/cancel`).set(bearer(f.merchant.secretKey)).send({});
    expect(canceled.body.data.status).toBe('CANCELED');
    const confirmAfter = await confirm(stack, f.merchant, created.body.data.id, { payment_method: card(CARDS.visa) });
    expect(confirmAfter.status).toBe(409);
  });
});

describe('cancel reasons', () => {
  const cancel = (id: string, body: Record<string, unknown>) =>
    stack.http.post(`/v1/payments/${id}/cancel`).set(bearer(f.merchant.secretKey)).send(body);

  for (const reason of ['duplicate', 'fraudulent', 'requested_by_customer', 'abandoned']) {
    it(`stores and shows ${reason} as given, and takes ${reason.toUpperCase()} too, shown lower-case`, async () => {
      for (const sent of [reason, reason.toUpperCase()]) {
        const created = await createPayment(stack, f.merchant);
        const res = await cancel(created.body.data.id, { reason: sent });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.data).toMatchObject({ status: 'CANCELED', cancellation_reason: reason });
        expect((await getPayment(stack, f.merchant, created.body.data.id, '')).cancellation_reason).toBe(reason);
        expect((await stack.db('live.payments').where({ id: created.body.data.id }).first()).cancellation_reason).toBe(reason);
      }
    });
  }

  it('refuses any other reason with 400 at body/reason, and leaves the payment as it was', async () => {
    const created = await createPayment(stack, f.merchant);
    for (const reason of ['nope', 'Duplicate', '', 'authorization_expired', 'expired', 42]) {
      const res = await cancel(created.body.data.id, { reason });
      expect(res.status, String(reason)).toBe(400);
      expect(res.body.error.details.reason).toBe('validation_failed');
      expect(new Set(res.body.error.details.fields.map((x: any) => x.path))).toEqual(new Set(['body/reason']));
    }
    expect((await getPayment(stack, f.merchant, created.body.data.id, '')).status).toBe('CREATED');
  });

  it('documents the lower-case reasons, and the upper-case ones as aliases', async () => {
    const doc = (await stack.http.get('/v1/openapi.json')).body;
    const schema = doc.paths['/v1/payments/{id}/cancel'].post.requestBody.content['application/json'].schema.properties.reason;
    const [lower, upper] = schema.anyOf;
    expect(lower.enum).toEqual(['duplicate', 'fraudulent', 'requested_by_customer', 'abandoned']);
    expect(upper).toMatchObject({ enum: ['DUPLICATE', 'FRAUDULENT', 'REQUESTED_BY_CUSTOMER', 'ABANDONED'], deprecated: true });
  });
});

describe('reading', () => {
  it('lists newest first with pagination, filters and include flags', async () => {
    const m = (await paymentsFixture(stack)).merchant;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await createPayment(stack, m, { amount: 100 + i })).body.data.id);
    const page = await stack.http.get('/v1/payments?limit=2&page=1').set(bearer(m.secretKey));
    expect(page.body).toMatchObject({ total: 3, page: 1, limit: 2, pages: 2 });
    expect(page.body.data.map((p: any) => p.id)).toEqual([ids[2], ids[1]]);
    expect(page.body.data[0].charges).toBeUndefined();
    const filtered = await stack.http.get('/v1/payments?status=CANCELED').set(bearer(m.secretKey));
    expect(filtered.body.total).toBe(0);
    const withAll = await stack.http.get('/v1/payments?include_charges=true&include_events=true&include_routing_plans=true&include_customer=true').set(bearer(m.secretKey));
    expect(withAll.body.data[0]).toHaveProperty('charges');
    expect(withAll.body.data[0]).toHaveProperty('events');
    expect(withAll.body.data[0]).toHaveProperty('routing_plans');
    expect(withAll.body.data[0]).toHaveProperty('customer');
    expect((await stack.http.get('/v1/payments?page=0').set(bearer(m.secretKey))).status).toBe(400);
  });

  it('answers 404 when account_id names another of the caller\'s accounts, 403 for an account not theirs, and 404 across tenants', async () => {
    const created = await createPayment(stack, f.merchant);
    const other = (await paymentsFixture(stack)).merchant;
    // The same user owns this sandbox account: the payment is not in it, so it does not exist there.
    const sandbox = await createMerchant(stack, { sandboxOf: f.merchant });
    const mismatch = await stack.http.get(`/v1/payments/${created.body.data.id}?account_id=${sandbox.account.id}`).set(bearer(f.merchant.token));
    expect(mismatch.status).toBe(404);
    expect(mismatch.body.error.details.reason).toBe('not_found');
    const notTheirs = await stack.http.get(`/v1/payments/${created.body.data.id}?account_id=${other.account.id}`).set(bearer(f.merchant.token));
    expect(notTheirs.status).toBe(403);
    expect(notTheirs.body.error.details.reason).toBe('account_access_denied');
    const foreign = await stack.http.get(`/v1/payments/${created.body.data.id}`).set(bearer(other.secretKey));
    expect(foreign.status).toBe(404);
  });

  it('lists events with filters', async () => {
    const res = await pay(stack, f.merchant, CARDS.visa);
    const events = await stack.http.get(`/v1/events?payment_id=${res.body.data.id}&type=payment_intent.succeeded`).set(bearer(f.merchant.secretKey));
    expect(events.body.total).toBe(1);
    expect(events.body.data[0]).toMatchObject({ object: 'event', event: 'payment_intent.succeeded', payment_id: res.body.data.id });
  });
});

describe('Temporal history', () => {
  it('holds no card number, CVC or credential', async () => {
    const res = await pay(stack, f.merchant, CARDS.amex, { auto_capture: false });
    const client = await stack.deps.temporal();
    const history = JSON.stringify(await client.workflow.getHandle(paymentWorkflowId(res.body.data.id)).fetchHistory());
    const decoded = history.replace(/"data":"([A-Za-z0-9+/=]+)"/g, (_m, b64: string) => Buffer.from(b64, 'base64').toString('utf8'));
    for (const secret of [CARDS.amex, 'sim_primary_key_0001', 'sim_backup_key_0002', f.merchant.secretKey]) {
      expect(decoded, secret).not.toContain(secret);
    }
    expect(decoded).not.toMatch(/"(cvc|number|pan|credentials)"\s*:/);
    expect(decoded).toContain(res.body.data.id);
  });
});

describe('a cancel the row does not allow', () => {
  it('leaves a payment that took money, or holds an authorization no void released, as it is', async () => {
    const activities = createActivities({ db: stack.db, config: stack.config });
    const cancel = (payment: { id: string }, chargeId?: string) => activities.cancelPayment({
      paymentId: payment.id, accountId: f.merchant.account.id, workspaceId: f.merchant.workspaceId, environment: 'production',
      ...(chargeId ? { chargeId } : {}), reason: 'expired', context: { actor: { type: 'system', id: 'test' } },
    });
    const statusOf = async (id: string) => (await stack.db('live.payments').where({ id }).first()).status;

    // What a workflow whose confirm was aborted (and never sent again) would do at its expiry: cancel
    // without a charge, believing the payment CREATED.
    const succeeded = (await pay(stack, f.merchant, CARDS.visa)).body.data;
    const authorized = (await pay(stack, f.merchant, CARDS.visa, { auto_capture: false })).body.data;
    const refunded = (await pay(stack, f.merchant, CARDS.visa)).body.data;
    const refund = await stack.http.post('/v1/refunds').set(bearer(f.merchant.secretKey)).send({ payment_id: refunded.id, amount: 100 });
    expect(refund.status, JSON.stringify(refund.body)).toBe(201);
    await expect.poll(() => statusOf(refunded.id)).toBe('PARTIALLY_REFUNDED');
    for (const [payment, status] of [[succeeded, 'SUCCEEDED'], [authorized, 'AUTHORIZED'], [refunded, 'PARTIALLY_REFUNDED']] as const) {
      expect(await cancel(payment)).toEqual({});
      expect(await statusOf(payment.id)).toBe(status);
    }
    expect((await sim.key(authorized.charges[0].id)).status_code).toBe(200);

    // A created payment is canceled as before.
    const created = (await createPayment(stack, f.merchant)).body.data;
    await cancel(created);
    expect(await statusOf(created.id)).toBe('CANCELED');
  });
});

describe('an attempt retried after its outcome was committed', () => {
  it('answers with the recorded outcome and never calls the processor again', async () => {
    const res = await pay(stack, f.merchant, CARDS.visa);
    const charge = res.body.data.charges[0];
    const before = await sim.key(charge.id);
    const activities = createActivities({ db: stack.db, config: stack.config });
    const args = {
      paymentId: res.body.data.id, accountId: f.merchant.account.id, workspaceId: f.merchant.workspaceId, environment: 'production' as const,
      chargeId: charge.id, routingPlanId: charge.routing_plan_id, attemptNo: 1,
      candidate: { providerConfigId: f.primary.id, providerId: f.provider.id, methodId: charge.payment_provider_method_id, estimatedFee: null },
      paymentMethodId: charge.payment_method_id, capture: true, lastCandidate: false,
      context: { actor: { type: 'system' as const, id: 'test' } },
    };
    expect(await activities.authorizeCharge(args)).toEqual({ outcome: 'approved', declineCode: undefined, paymentStatus: 'SUCCEEDED' });
    expect(await activities.reconcileCharge(args)).toMatchObject({ outcome: 'approved', paymentStatus: 'SUCCEEDED', pending: false });
    expect((await sim.key(charge.id)).calls).toBe(before.calls);

    const declined = await pay(stack, f.merchant, CARDS.declined);
    const declinedCharge = declined.body.data.charges[0];
    expect(await activities.reconcileCharge({ ...args, paymentId: declined.body.data.id, chargeId: declinedCharge.id, routingPlanId: declinedCharge.routing_plan_id }))
      .toMatchObject({ outcome: 'hard_decline', declineCode: 'card_declined', paymentStatus: 'FAILED', pending: false });
  });
});
