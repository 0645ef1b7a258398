import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, DISPATCHER_CLAIM, Merchant, RunningWorker, startStack, startWorker, TestStack, unique } from '../support/stack';
import {
  CARDS, card, confirm, createPayment, getPayment, newCustomer, paymentsFixture, PaymentsFixture, savedCard, startSimulator, TestSimulator,
} from '../support/payments';
import { eventually } from '../support/worker-process';
import { paymentWorkflowId } from '../../contracts/payments';
import { appendEventsOfWrite } from '../../db/events';
import { chargeInsertWithPayment, newChargeRow, newPaymentRow, PAYMENT_WRITTEN, paymentInsert, type PaymentRow } from '../../db/payments';
import { newId } from '../../lib/ids';
import { onlyIfFirstWrote } from '../../db/knex';
import { singleUseCardsErasure } from '../../db/payment-methods';

/**
 * `POST /payments` with `confirm: true`: one request, one update-with-start whose `create` update carries
 * the confirm; the workflow walks the plan as soon as the row is written. Against the real stack.
 */

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

const createConfirmed = (m: Merchant, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  createPayment(stack, m, { confirm: true, ...body }, headers);

const processorCharges = async (): Promise<number> => (await sim.stats()).charges.total;
const paymentCount = async (m: Merchant): Promise<number> =>
  Number((await stack.db('live.payments').where({ account_id: m.account.id }).count().first())!.count);

async function history(paymentId: string) {
  const client = await stack.deps.temporal();
  return client.workflow.getHandle(paymentWorkflowId(paymentId)).fetchHistory();
}

/** The one statement of `statements` that contains `marker`, made of `parts` (regular expressions) in order. */
function expectOneStatement(statements: string[], marker: string, parts: string[]): void {
  const matching = statements.filter((sql) => sql.includes(marker));
  expect(matching).toHaveLength(1);
  expect(matching[0]).toMatch(new RegExp(parts.join(''), 's'));
}

describe('creating and confirming in one request', () => {
  it('writes an approved create-and-confirm in 7 statements, none in a transaction: six on their own and the answer\'s prepared read', async () => {
    // Every statement knex sends (the prepared read goes around it), grouped by transaction.
    const seen: { sql: string; tx?: string; name?: string }[] = [];
    const onQuery = (q: { sql: string; __knexTxId?: string; options?: { name?: string } }) => seen.push({ sql: q.sql.trim(), tx: q.__knexTxId, name: q.options?.name });
    stack.db.on('query', onQuery);
    const res = await createConfirmed(f.merchant, { amount: 1502, payment_method: card(CARDS.visa) });
    stack.db.off('query', onQuery);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data.status).toBe('SUCCEEDED');

    const payments = seen.filter((q) => q.sql.includes('"live".') && !DISPATCHER_CLAIM.test(q.sql));
    expect(payments.filter((q) => q.tx)).toEqual([]);
    const alone = payments.map((q) => q.sql);
    // The outcome's one statement: the charge's update (while still CREATED and its payment's row as the
    // attempt wrote it, that row locked by the check), then, each only if that one wrote, the payment's
    // update, the card's CVC wiped and number erased (one update), the health count, and the events.
    expectOneStatement(alone, 'update "live"."charges"', [
      '^with "charge_recorded" as \\(update "live"."charges" set .* where "id" = \\$\\d+ and "status" = \\$\\d+ and exists \\(select 1 from "live"."payments" where .* for update\\) returning "id"\\)',
      ', "payment_updated" as \\(update "live"."payments" set .* where "id" = \\$\\d+ and exists \\(select 1 from "charge_recorded"\\)\\)',
      ', "cards_updated" as \\(update "live"."payment_methods" set .* and exists \\(select 1 from "charge_recorded"\\)\\)',
      ', "health_counted" as \\(\\s*INSERT INTO "live"."provider_health".* WHERE exists \\(select 1 from "charge_recorded"\\).*\\)',
      ' insert into "live"."events" .* where exists \\(select 1 from "charge_recorded"\\)',
    ]);
    // The API's card; the worker's card, routing inputs, config, and the row with its plan, its first
    // charge and both events (one statement, no transaction). The answer's charges come with its read.
    expect(alone, alone.join('\n')).toHaveLength(6);
    expect(alone.filter((sql) => sql.startsWith('select') && sql.includes('from "live"."charges"'))).toEqual([]);
    expectOneStatement(alone, 'insert into "live"."payments"', [
      '^with "payment_written" as \\(insert into "live"."payments".*returning "id"\\)',
      ', "plan_stored" as \\(insert into "live"."routing_plans" .* where exists \\(select 1 from "payment_written"\\)\\)',
      ', "first_charge" as \\(insert into "live"."charges" .* where exists \\(select 1 from "payment_written"\\)\\)',
      ', "command_claimed" as \\(insert into "live"."payment_commands" .* where exists \\(select 1 from "payment_written"\\)\\)',
      ' insert into "live"."events" .* where exists \\(select 1 from "payment_written"\\)',
    ]);
    // Every one is a prepared statement (db/knex.ts PREPARED): Postgres parses and plans each once per connection.
    expect(payments.filter((q) => !q.name).map((q) => q.sql)).toEqual([]);
    // The charges the answer read with its payment are the charges a GET reads on their own.
    expect(res.body.data.charges).toHaveLength(1);
    expect(res.body.data.charges).toEqual((await getPayment(stack, f.merchant, res.body.data.id, 'include_charges=true')).charges);
  });

  it('knows the row it writes: the payment as the create-and-confirm wrote it is the row Postgres holds', async () => {
    const res = await createConfirmed(f.merchant, {
      amount: 1503, currency: 'USD', metadata: { order: 'o-2' }, auto_capture: false, payment_method: card(CARDS.visa), return_url: 'https://shop.example/r',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    // The processing event carries the row as the statement wrote it (newPaymentRow): every column, as
    // the API would serialize the row it reads back, the status and amounts the outcome changed aside.
    const events = await stack.http.get(`/v1/events?payment_id=${res.body.data.id}&type=payment_intent.processing`).set(bearer(f.merchant.secretKey));
    expect(events.body.total, JSON.stringify(events.body)).toBe(1);
    const processing = events.body.data[0].data.object;
    const read = await getPayment(stack, f.merchant, res.body.data.id, '');
    // (and the client_secret: on the merchant's read, never in an event)
    const changedByOutcome = ['status', 'amount_capturable', 'updated_at', 'charges', 'events', 'links', 'temporal', 'client_secret'];
    expect(processing).not.toHaveProperty('client_secret');
    const without = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([k]) => !changedByOutcome.includes(k)));
    expect(Object.keys(processing).length).toBeGreaterThan(15);
    expect(without(processing)).toEqual(without(read));
    expect(processing).toMatchObject({ status: 'PROCESSING', amount_capturable: 0, updated_at: read.created_at });
  });

  it('writes a create\'s charge and events with its row only: a retry that finds the row written writes neither', async () => {
    const write = (payment: PaymentRow) => {
      const charge = newChargeRow({
        id: newId('ch'), payment_id: payment.id, payment_method_id: null, customer_id: null, account_id: payment.account_id, amount: payment.amount,
        currency: payment.currency, installments: 1, attempt_no: 1, routing_plan_id: null, payment_provider_id: null,
        payment_provider_config_id: f.primary.id, payment_provider_method_id: null, security: { secure_mode: 'NONE' }, payment_provider_config_snapshot: { id: f.primary.id },
      }, payment.created_at);
      const event = { event: 'payment_intent.created', accountId: payment.account_id, paymentId: payment.id, data: { object: { id: payment.id } } };
      return { charge, written: appendEventsOfWrite(stack.db, 'production', [event], [PAYMENT_WRITTEN, paymentInsert(stack.db, 'production', payment)], [['first_charge', chargeInsertWithPayment(stack.db, 'production', charge)]]) };
    };
    const payment = newPaymentRow({
      id: newId('pay'), account_id: f.merchant.account.id, customer_id: null, checkout_session_id: null, amount: 700, currency: 'EUR', auto_capture: true,
      secure_mode: 'NONE', installments: 1, routing: {}, metadata: { k: 'v' },
    }, { status: 'PROCESSING' }, new Date());
    const first = write(payment);
    expect(await first.written).toHaveLength(1);
    const charges = () => stack.db('live.charges').where({ payment_id: payment.id });
    const events = () => stack.db('live.events').where({ payment_id: payment.id });
    expect(await charges()).toMatchObject([{ id: first.charge.id, status: 'CREATED', amount: 700, payment_provider_config_snapshot: { id: f.primary.id } }]);
    expect(await events()).toHaveLength(1);
    // The retry planned otherwise (another charge): the row is there, so nothing else goes in.
    const retry = write({ ...payment, amount: 800 });
    expect(await retry.written).toBeUndefined();
    expect((await charges()).map((c: { id: string }) => c.id)).toEqual([first.charge.id]);
    expect(await events()).toHaveLength(1);
    // Nor is its card used up, as a retry whose plan found nothing eligible would: the stored plan may need it.
    const card = { id: newId('pm'), account_id: payment.account_id, payment_id: payment.id, card_network: 'VISA', card_last4: '4242', pan_encrypted: 'v1.sealed' };
    await stack.db('live.payment_methods').insert(card);
    const event = { event: 'payment_intent.payment_failed', accountId: payment.account_id, paymentId: payment.id };
    const erasure = onlyIfFirstWrote(singleUseCardsErasure(stack.db, 'production', payment.id, card.id), PAYMENT_WRITTEN);
    expect(await appendEventsOfWrite(stack.db, 'production', [event], [PAYMENT_WRITTEN, paymentInsert(stack.db, 'production', payment)], [['cards_used_up', erasure]])).toBeUndefined();
    expect(await stack.db('live.payment_methods').where({ id: card.id }).first()).toMatchObject({ pan_encrypted: 'v1.sealed' });
    expect(await stack.db('live.payments').where({ id: payment.id }).first()).toMatchObject({ amount: 700, status: 'PROCESSING', metadata: { k: 'v' } });
  });

  it('approves an inline card: 201 SUCCEEDED with its one charge, after one update-with-start', async () => {
    const before = await processorCharges();
    const res = await createConfirmed(f.merchant, { amount: 1501, payment_method: card(CARDS.visa) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.message).toBe('Payment created and confirmed');
    expect(res.body.data).toMatchObject({ object: 'payment', status: 'SUCCEEDED', amount: 1501, amount_received: 1501 });
    expect(res.body.data.charges).toHaveLength(1);
    expect(res.body.data.charges[0]).toMatchObject({ status: 'CAPTURED', attempt_no: 1, payment_provider_config_id: f.primary.id });
    expect(await processorCharges()).toBe(before + 1);

    // The card was bound to this payment (single use) and its number is gone now that the walk is over.
    const pm = await stack.db('live.payment_methods').where({ id: res.body.data.payment_method_id }).first();
    expect(pm).toMatchObject({ payment_id: res.body.data.id, customer_id: null, pan_encrypted: '' });

    const read = await getPayment(stack, f.merchant, res.body.data.id);
    expect(read.events.map((e: any) => e.event)).toEqual([
      'payment_intent.created', 'payment_intent.processing', 'charge.succeeded', 'payment_intent.succeeded',
    ]);

    // One update (`create`, carrying the confirm) and nothing secret in the history.
    const events = (await history(res.body.data.id)).events ?? [];
    expect(events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes)).toHaveLength(1);
    // One workflow task: the row, the plan and the authorization in one local activity, and no expiry
    // timer for a payment that succeeded at once; no activity round trip through the server. The
    // candidate went up with the status its attempt led to: one search-attribute upsert.
    const localActivities = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
    expect(localActivities).toHaveLength(1);
    expect(events.filter((e) => e.upsertWorkflowSearchAttributesEventAttributes)).toHaveLength(1);
    const described = await (await stack.deps.temporal()).workflow.getHandle(paymentWorkflowId(res.body.data.id)).describe();
    expect(described.typedSearchAttributes.get({ name: 'PaymentStatus', type: 'KEYWORD' } as any)).toBe('SUCCEEDED');
    expect(described.typedSearchAttributes.get({ name: 'ProviderConfigId', type: 'KEYWORD' } as any)).toBe(f.primary.id);
    expect(events.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(1);
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toHaveLength(0);
    expect(events.filter((e) => e.timerStartedEventAttributes)).toHaveLength(0);
    const decoded = JSON.stringify(events).replace(/"data":"([A-Za-z0-9+/=]+)"/g, (_m, b64: string) => Buffer.from(b64, 'base64').toString('utf8'));
    expect(decoded).not.toContain(CARDS.visa);
    expect(decoded).not.toMatch(/"(cvc|number|pan|credentials)"\s*:/);
    expect(decoded).toContain(res.body.data.payment_method_id);
  });

  it('writes the row once, as its plan leaves it, and its payment_intent.created shows the payment as a create alone does', async () => {
    const eventOf = async (paymentId: string, type: string) => {
      const res = await stack.http.get(`/v1/events?payment_id=${paymentId}&type=${type}`).set(bearer(f.merchant.secretKey));
      expect(res.body.total, JSON.stringify(res.body)).toBe(1);
      return res.body.data[0].data.object;
    };
    const body = { amount: 2402, currency: 'USD', installments: 1, metadata: { order: 'o-1' } };
    const confirmed = await createConfirmed(f.merchant, { ...body, payment_method: card(CARDS.visa), return_url: 'https://shop.example/back' });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(201);
    const alone = await createPayment(stack, f.merchant, body);
    expect(alone.status, JSON.stringify(alone.body)).toBe(201);

    const [createdConfirmed, createdAlone] = [await eventOf(confirmed.body.data.id, 'payment_intent.created'), await eventOf(alone.body.data.id, 'payment_intent.created')];
    const differing = ['id', 'created_at', 'updated_at', 'customer_id'];
    const without = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([k]) => !differing.includes(k)));
    expect(without(createdConfirmed)).toEqual(without(createdAlone));
    expect(createdConfirmed).toMatchObject({ status: 'CREATED', payment_method_id: null, last_error: null });
    // The next event and the row itself carry what the confirm set.
    expect(await eventOf(confirmed.body.data.id, 'payment_intent.processing')).toMatchObject({
      status: 'PROCESSING', payment_method_id: confirmed.body.data.payment_method_id,
    });
    const row = await stack.db('live.payments').where({ id: confirmed.body.data.id }).first();
    expect(row).toMatchObject({ status: 'SUCCEEDED', payment_method_id: confirmed.body.data.payment_method_id, return_url: 'https://shop.example/back', installments: 1 });
  });

  it('authorizes only with auto_capture: false (AUTHORIZED), and the payment can then be captured', async () => {
    const res = await createConfirmed(f.merchant, { auto_capture: false, payment_method: card(CARDS.mastercard) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data).toMatchObject({ status: 'AUTHORIZED', amount_capturable: 1000 });
    expect(res.body.data.charges.map((c: any) => c.status)).toEqual(['AUTHORIZED']);
    const captured = await stack.http.post(`/v1/payments/${res.body.data.id}/capture`).set(bearer(f.merchant.secretKey)).send({});
    expect(captured.body.data).toMatchObject({ status: 'SUCCEEDED', amount_received: 1000 });
  });

  it('answers 201 FAILED with the decline for a hard-declined card', async () => {
    const res = await createConfirmed(f.merchant, { payment_method: card(CARDS.declined) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data.status).toBe('FAILED');
    expect(res.body.data.last_error).toMatchObject({ code: 'card_declined', decline_code: 'card_declined' });
    expect(res.body.data.charges.map((c: any) => [c.status, c.decline_code])).toEqual([['DECLINED', 'card_declined']]);
    // FAILED may be confirmed again, with a new card.
    const again = await stack.http.post(`/v1/payments/${res.body.data.id}/confirm`).set(bearer(f.merchant.secretKey)).send({ payment_method: card(CARDS.visa) });
    expect(again.body.data.status).toBe('SUCCEEDED');
  });

  it('answers 201 FAILED with last_error no_eligible_provider when no provider can take it', async () => {
    const res = await createConfirmed(f.merchant, {
      routing: { exclude_provider_config_ids: [f.primary.id, f.backup.id] }, payment_method: card(CARDS.visa),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data.status).toBe('FAILED');
    expect(res.body.data.last_error).toMatchObject({ code: 'no_eligible_provider' });
    expect(res.body.data.charges).toEqual([]);
    expect((await stack.db('live.payment_methods').where({ id: res.body.data.payment_method_id }).first()).pan_encrypted).toBe('');

    // Confirmed again, with another card and every provider allowed: a walk of its own, with its own
    // first attempt (nothing of the create's confirm carried over).
    const again = await confirm(stack, f.merchant, res.body.data.id, { payment_method: card(CARDS.mastercard), routing: { exclude_provider_config_ids: [] } });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.data).toMatchObject({ status: 'SUCCEEDED', amount_received: 1000 });
    const paid = await getPayment(stack, f.merchant, res.body.data.id);
    expect(paid.charges).toHaveLength(1);
    expect(paid.charges[0]).toMatchObject({ status: 'CAPTURED', attempt_no: 1, payment_method_id: again.body.data.payment_method_id });
    expect(again.body.data.payment_method_id).not.toBe(res.body.data.payment_method_id);
  });

  it('pays with a saved card of the customer named in the same request', async () => {
    const customer = await newCustomer(stack, f.merchant);
    const saved = await savedCard(stack, f.merchant, customer, CARDS.mastercard);
    const res = await createConfirmed(f.merchant, { customer_id: customer, payment_method_id: saved });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data).toMatchObject({ status: 'SUCCEEDED', customer_id: customer, payment_method_id: saved });
    // A saved card keeps its number for the customer's next payment.
    expect((await stack.db('live.payment_methods').where({ id: saved }).first()).pan_encrypted).not.toBe('');
  });

  it('saves an inline card to the payment\'s customer when asked, a guest customer created with it included', async () => {
    const customer = await newCustomer(stack, f.merchant);
    const named = await createConfirmed(f.merchant, { customer_id: customer, payment_method: card(CARDS.visa), save_payment_method: true });
    expect(named.status, JSON.stringify(named.body)).toBe(201);
    // Saved for later charges, but its CVC went with the attempt's outcome: held only until the first authorization.
    const saved = await stack.db('live.payment_methods').where({ id: named.body.data.payment_method_id }).first();
    expect(saved).toMatchObject({ customer_id: customer, payment_id: null, cvc_encrypted: null });
    expect(saved.pan_encrypted).toMatch(/^v2\.k0\./);

    const guest = await createConfirmed(f.merchant, { customer: { name: 'Guest', email: 'g@example.com' }, payment_method: card(CARDS.visa), save_payment_method: true });
    expect(guest.status, JSON.stringify(guest.body)).toBe(201);
    expect(guest.body.data.status).toBe('SUCCEEDED');
    const guestId = guest.body.data.customer_id;
    expect(guestId).toBe(`cus_${guest.body.data.id.slice(4)}`);
    expect(await stack.db('live.customers').where({ id: guestId }).first()).toMatchObject({ is_guest: true, name: 'Guest', email: 'g@example.com' });
    const pm = await stack.db('live.payment_methods').where({ id: guest.body.data.payment_method_id }).first();
    expect(pm).toMatchObject({ customer_id: guestId, payment_id: null, cvc_encrypted: null });
    expect(pm.pan_encrypted).not.toBe('');
  });

  it('refuses a card the payment may not use with 400 at body/payment_method_id, creating nothing', async () => {
    const [victim, buyer] = [await newCustomer(stack, f.merchant), await newCustomer(stack, f.merchant)];
    const victimCard = await savedCard(stack, f.merchant, victim);
    const other = await paymentsFixture(stack);
    const foreignTenantCard = await savedCard(stack, other.merchant, await newCustomer(stack, other.merchant));
    const payments = await paymentCount(f.merchant);
    const calls = (await sim.stats()).calls;
    for (const body of [
      { customer_id: buyer, payment_method_id: victimCard }, // another customer's saved card
      { payment_method_id: victimCard }, // a saved card, but the payment has no customer
      { customer_id: buyer, payment_method_id: foreignTenantCard }, // another tenant's card
      { customer_id: buyer, payment_method_id: 'pm_01NOSUCHCARD' },
    ]) {
      const res = await createConfirmed(f.merchant, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.reason).toBe('validation_failed');
      expect(res.body.error.details.fields).toEqual([{ path: 'body/payment_method_id', message: 'is not a payment method this payment can use' }]);
    }
    expect(await paymentCount(f.merchant)).toBe(payments);
    expect((await sim.stats()).calls).toBe(calls);
  });

  it('refuses an invalid inline card with 400 invalid_card, creating nothing (not even the guest customer)', async () => {
    const payments = await paymentCount(f.merchant);
    const customers = async () => Number((await stack.db('live.customers').where({ account_id: f.merchant.account.id }).count().first())!.count);
    const before = await customers();
    for (const body of [
      { payment_method: card('4242424242424241') },
      { customer: { name: 'Guest' }, save_payment_method: true, payment_method: card('4242424242424241') },
    ]) {
      const res = await createConfirmed(f.merchant, body);
      expect(res.status).toBe(400);
      expect(res.body.error.details.reason).toBe('invalid_card');
    }
    expect(await paymentCount(f.merchant)).toBe(payments);
    expect(await customers()).toBe(before);
  });

  it('takes the confirm fields only with confirm: true, and confirm: true only with a payment method', async () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ payment_method: card(CARDS.visa) }, 'body/payment_method', 'only with confirm: true'],
      [{ payment_method_id: 'pm_01X' }, 'body/payment_method_id', 'only with confirm: true'],
      [{ save_payment_method: true }, 'body/save_payment_method', 'only with confirm: true'],
      [{ confirm: false, payment_method: card(CARDS.visa) }, 'body/payment_method', 'only with confirm: true'],
      [{ confirm: true }, 'body/payment_method', 'confirm: true needs payment_method or payment_method_id'],
      [{ confirm: true, save_payment_method: true }, 'body/payment_method', 'confirm: true needs payment_method or payment_method_id'],
      [{ confirm: true, payment_method_id: 'pm_01X', payment_method: card(CARDS.visa) }, 'body', 'give exactly one of payment_method_id and payment_method'],
      [{ confirm: 'yes', payment_method: card(CARDS.visa) }, 'body/confirm', 'must be boolean'],
    ];
    const payments = await paymentCount(f.merchant);
    for (const [body, path, message] of cases) {
      const res = await createPayment(stack, f.merchant, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.details.fields, JSON.stringify(body)).toContainEqual({ path, message });
    }
    expect(await paymentCount(f.merchant)).toBe(payments);
  });

  it('is not open to a publishable key', async () => {
    const res = await stack.http.post('/v1/payments').set(bearer(f.merchant.publishableKey))
      .send({ amount: 1000, currency: 'USD', confirm: true, payment_method: card(CARDS.visa) });
    expect(res.status).toBe(403);
    expect(res.body.error.details.reason).toBe('publishable_key_not_allowed');
  });
});

describe('idempotency covers the pair', () => {
  it('answers a retry with the same Idempotency-Key with the same payment, charged once', async () => {
    const key = unique('idem');
    const before = await processorCharges();
    const first = await createConfirmed(f.merchant, { amount: 1777, payment_method: card(CARDS.visa) }, { 'Idempotency-Key': key });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    const second = await createConfirmed(f.merchant, { amount: 1777, payment_method: card(CARDS.visa) }, { 'Idempotency-Key': key });
    expect(second.status).toBe(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body.data.id).toBe(first.body.data.id);
    expect(second.body.data.charges.map((c: any) => c.id)).toEqual(first.body.data.charges.map((c: any) => c.id));
    expect(await processorCharges()).toBe(before + 1);
  });

  /** Makes the key look like its first request died mid-way (its lock older than 5 minutes, no reply stored). */
  const crashed = (key: string) => stack.db('core.idempotency_keys').where({ key }).update({
    state: 'in_progress', locked_at: new Date(Date.now() - 10 * 60_000), response_status: null, response_body: null, response_headers: null,
  });

  for (const [name, number, status] of [
    ['after the payment succeeded (its workflow has finished)', CARDS.visa, 'SUCCEEDED'],
    ['after the payment failed (its workflow is still open)', CARDS.declined, 'FAILED'],
  ] as const) {
    it(`walks once when a retry takes over a crashed request's key, ${name}`, async () => {
      const key = unique('idem');
      const body = { amount: 1778, payment_method: card(number) };
      const before = await processorCharges();
      const first = await createConfirmed(f.merchant, body, { 'Idempotency-Key': key });
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      expect(first.body.data.status).toBe(status);
      await crashed(key);

      const retry = await createConfirmed(f.merchant, body, { 'Idempotency-Key': key });
      expect(retry.status, JSON.stringify(retry.body)).toBe(201);
      expect(retry.headers['idempotent-replayed']).toBeUndefined();
      expect(retry.body.data).toMatchObject({ id: first.body.data.id, status, payment_method_id: first.body.data.payment_method_id });
      expect(retry.body.data.charges.map((c: any) => c.id)).toEqual(first.body.data.charges.map((c: any) => c.id));
      expect(await processorCharges()).toBe(before + 1);
      // The retry vaulted the card again; that copy was never used and holds no number.
      const cards = await stack.db('live.payment_methods').where({ payment_id: first.body.data.id });
      expect(cards).toHaveLength(2);
      expect(cards.map((c: any) => c.pan_encrypted)).toEqual(['', '']);
      // One workflow run, one walk.
      const client = await stack.deps.temporal();
      const runs: string[] = [];
      for await (const wf of client.workflow.list({ query: `WorkflowId="${paymentWorkflowId(first.body.data.id)}"` })) runs.push(wf.runId);
      expect(runs).toHaveLength(1);
    });
  }
});

describe('a walk that outlasts the request', () => {
  it('answers 201 PROCESSING after 10 s, and the payment completes on its own', async () => {
    // The processor takes the authorization but never answers it: the outcome is unknown, and reconciled.
    const slow = await paymentsFixture(stack, { primary: { blackhole: true, latency_ms: 3000 } });
    const res = await createConfirmed(slow.merchant, { payment_method: card(CARDS.visa) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.message).toBe('Payment is processing');
    expect(res.body.data.status).toBe('PROCESSING');
    expect(res.body.data.charges.map((c: any) => c.status)).toEqual(['UNKNOWN']);

    const put = await stack.http.put(`/v1/payment-provider-configs/${slow.primary.id}`).set(bearer(slow.merchant.token))
      .send({ credentials: { api_key: 'sim_primary_key_0001' } });
    expect(put.status).toBe(200);
    const done = await eventually(async () => {
      const p = await getPayment(stack, slow.merchant, res.body.data.id);
      return p.status === 'SUCCEEDED' ? p : undefined;
    }, 60_000, 500);
    expect(done.charges).toHaveLength(1);
  }, 90_000);
});
