import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envTable } from '../../db/environments';
import { newId } from '../../lib/ids';
import { chargesOfPayments, PAYMENT_COLUMNS, readPayment } from '../../db/payments';
import { bearer, createMerchant, Merchant, startStack, TestStack } from '../support/stack';

let stack: TestStack;
let m: Merchant;
let other: Merchant;
beforeAll(async () => {
  stack = await startStack();
  m = await createMerchant(stack);
  other = await createMerchant(stack);
});
afterAll(async () => { await stack.close(); });

const created = new Date('2026-03-01T10:00:00.123Z');
const updated = new Date('2026-03-01T10:00:05.456Z');

/** A payment with every field the read shows set to something, as the workflow writes it. */
async function seedPayment(accountId: string): Promise<string> {
  const id = newId('pay');
  await stack.db(envTable('production', 'payments')).insert({
    id, account_id: accountId, customer_id: null, checkout_session_id: 'cs_42', payment_method_id: 'pm_1',
    amount: 12_345, currency: 'EUR', status: 'REQUIRES_ACTION', auto_capture: false, secure_mode: 'PREFERRED', installments: 3,
    routing_origin: 'MERCHANT_DIRECT', routing: JSON.stringify({ max_attempts: 2 }),
    amount_capturable: 0, amount_received: 0, amount_refunded: 0, cancellation_reason: null,
    last_error: JSON.stringify({ code: 'card_declined', decline_code: 'insufficient_funds', charge_id: 'ch_1', message: 'Declined' }),
    pending_operation: null,
    next_action: JSON.stringify({
      type: 'redirect_to_url', redirect_to_url: { url: 'https://acs.example/3ds?x=1', return_url: 'https://shop.example/back' },
      since: '2026-03-01T10:00:04.000Z', charge_id: 'ch_1',
    }),
    return_url: 'https://shop.example/back',
    metadata: JSON.stringify({ order: '42', 'ключ': 'значение "quoted"' }),
    created_at: created, updated_at: updated,
  });
  return id;
}

/** The client_secret Postgres drew for the payment when its row was inserted. */
async function clientSecretOf(id: string): Promise<string> {
  return (await stack.db(envTable('production', 'payments')).where({ id }).first('client_secret')).client_secret;
}

describe('GET /v1/payments/:id', () => {
  it('answers a secret key with exactly these bytes: the envelope, the payment in its field order, the workflow link', async () => {
    const id = await seedPayment(m.account.id);
    const res = await stack.http.get(`/v1/payments/${id}`).set(bearer(m.secretKey));
    expect(res.status).toBe(200);
    const { uiUrl, namespace } = stack.config.temporal;
    const expected = {
      message: 'Payment retrieved',
      success: true,
      data: {
        object: 'payment', id, account_id: m.account.id, customer_id: null, checkout_session_id: 'cs_42', payment_method_id: 'pm_1',
        amount: 12_345, currency: 'EUR', status: 'REQUIRES_ACTION', auto_capture: false, secure_mode: 'PREFERRED', installments: 3,
        routing_origin: 'MERCHANT_DIRECT', routing: { max_attempts: 2 },
        amount_capturable: 0, amount_received: 0, amount_refunded: 0, cancellation_reason: null,
        // jsonb keeps an object's keys by length, then bytes: the order it answers them in.
        last_error: { code: 'card_declined', message: 'Declined', charge_id: 'ch_1', decline_code: 'insufficient_funds' },
        next_action: {
          type: 'redirect_to_url', redirect_to_url: { url: 'https://acs.example/3ds?x=1', return_url: 'https://shop.example/back' },
          since: '2026-03-01T10:00:04.000Z',
        },
        pending_operation: null,
        needs_attention: false, needs_attention_reason: null,
        metadata: { order: '42', 'ключ': 'значение "quoted"' },
        disputed: false, amount_disputed: 0,
        created_at: '2026-03-01T10:00:00.123Z', updated_at: '2026-03-01T10:00:05.456Z',
        client_secret: await clientSecretOf(id),
        temporal: {
          workflow_id: `payment/${id}`, namespace,
          ui_url: `${uiUrl}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(`payment/${id}`)}`,
        },
      },
    };
    expect(res.text).toBe(JSON.stringify(expected));
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['x-request-id']).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/);
  });

  it('gives each request its own generated id, and echoes a well-formed X-Request-Id', async () => {
    const id = await seedPayment(m.account.id);
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) ids.add((await stack.http.get(`/v1/payments/${id}`).set(bearer(m.secretKey))).headers['x-request-id']);
    expect(ids.size).toBe(20);
    const echoed = await stack.http.get(`/v1/payments/${id}`).set(bearer(m.secretKey)).set('X-Request-Id', 'client:abc-1');
    expect(echoed.headers['x-request-id']).toBe('client:abc-1');
  });

  it('answers the same payment the same to a user token with the account named', async () => {
    const id = await seedPayment(m.account.id);
    const byKey = await stack.http.get(`/v1/payments/${id}`).set(bearer(m.secretKey));
    const byUser = await stack.http.get(`/v1/payments/${id}?account_id=${m.account.id}`).set(bearer(m.token));
    expect(byUser.status).toBe(200);
    expect(byUser.text).toBe(byKey.text);
  });

  it('shows a publishable key the checkout view only, with a generic decline', async () => {
    const id = await seedPayment(m.account.id);
    const res = await stack.http.get(`/v1/payments/${id}?client_secret=${await clientSecretOf(id)}`).set(bearer(m.publishableKey));
    expect(res.status).toBe(200);
    expect(res.text).toBe(JSON.stringify({
      message: 'Payment retrieved',
      success: true,
      data: {
        object: 'payment', id, amount: 12_345, currency: 'EUR', status: 'REQUIRES_ACTION',
        next_action: { type: 'redirect_to_url', redirect_to_url: { url: 'https://acs.example/3ds?x=1', return_url: 'https://shop.example/back' } },
        last_error: { code: 'card_declined', decline_code: 'generic_decline' },
        card: null,
      },
    }));
  });

  it('keeps other tenants\' payments hidden (404), a wrong key out (401) and unknown query fields refused (400)', async () => {
    const id = await seedPayment(m.account.id);
    const hidden = await stack.http.get(`/v1/payments/${id}`).set(bearer(other.secretKey));
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.details.reason).toBe('not_found');
    // Its last character changed (to another one: a key that already ends in x made this read succeed).
    const last = m.secretKey.slice(-1);
    const wrong = await stack.http.get(`/v1/payments/${id}`).set(bearer(`${m.secretKey.slice(0, -1)}${last === 'x' ? 'y' : 'x'}`));
    expect(wrong.status).toBe(401);
    expect(wrong.body.error.details.reason).toBe('invalid_api_key');
    const unknown = await stack.http.get(`/v1/payments/${id}?expand=all`).set(bearer(m.secretKey));
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.details.reason).toBe('unknown_field');
  });

  it('reads its timestamps as the API shows them whatever the session time zone, as a Date read shows them', async () => {
    const id = await seedPayment(m.account.id);
    // Given with microseconds; the column keeps milliseconds (rounded: 10:00:02.000).
    await stack.db(envTable('production', 'charges')).insert({
      id: newId('ch'), payment_id: id, account_id: m.account.id, status: 'DECLINED', amount: 12_345, currency: 'EUR', attempt_no: 1,
      routing_origin: 'MERCHANT_DIRECT', created_at: stack.db.raw("'2026-03-01 10:00:01.999999+00'::timestamptz"), updated_at: updated,
    });
    for (const zone of ['UTC', 'Asia/Kolkata', 'America/St_Johns']) {
      await stack.db.transaction(async (trx) => {
        await trx.raw(`SET LOCAL TIME ZONE '${zone}'`);
        const row = await readPayment(trx, 'production', id);
        expect([zone, row?.created_at, row?.updated_at]).toEqual([zone, '2026-03-01T10:00:00.123Z', '2026-03-01T10:00:05.456Z']);
        const [charge] = await chargesOfPayments(trx, 'production', [id]);
        const asDates = await trx(envTable('production', 'charges')).where({ payment_id: id }).first();
        expect([zone, charge.created_at, charge.updated_at])
          .toEqual([zone, asDates.created_at.toISOString(), '2026-03-01T10:00:05.456Z']);
        expect(charge.created_at).toBe('2026-03-01T10:00:02.000Z');
      });
    }
  });

  it('reads every column of the table, with a statement a migration adding a column does not break', async () => {
    const id = await seedPayment(m.account.id);
    const asStored = await stack.db(envTable('production', 'payments')).where({ id }).first();
    const { disputes, ...row } = (await readPayment(stack.db, 'production', id))!;
    expect(Object.keys(row)).toEqual(Object.keys(asStored));
    expect(Object.keys(row)).toEqual([...PAYMENT_COLUMNS]);
    // Its charges' disputes come with it, from the same statement: none here.
    expect(disputes).toEqual([]);

    // The read is a statement each connection prepares once: one prepared before a column is added
    // must still run after it (a prepared `select *` fails: "cached plan must not change result type").
    const rolledBack = new Error('rolled back');
    await expect(stack.db.transaction(async (trx) => {
      await trx.raw("SET LOCAL lock_timeout = '5s'");
      expect((await readPayment(trx, 'production', id))?.id).toBe(id);
      await trx.raw(`ALTER TABLE ${envTable('production', 'payments')} ADD COLUMN read_probe integer`);
      expect((await readPayment(trx, 'production', id))?.id).toBe(id);
      throw rolledBack;
    })).rejects.toBe(rolledBack);
    expect(await readPayment(stack.db, 'production', 'pay_missing')).toBeUndefined();
  });
});
