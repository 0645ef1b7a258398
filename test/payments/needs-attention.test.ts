import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envTable } from '../../db/environments';
import { runOps } from '../../scripts/ops';
import { failureType } from '../../workflows/client';
import { paymentWorkflowId, type PaymentState } from '../../contracts/payments';
import { refundWorkflowId } from '../../contracts/refunds';
import { bearer, RunningWorker, startStack, startWorker, suiteEnv, TestStack } from '../support/stack';
import { CARDS, card, confirm, createPayment, getPayment, pay, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually } from '../support/worker-process';
import { flatten } from '../support/history';

const PAYMENTS = envTable('production', 'payments');
const REFUNDS = envTable('production', 'refunds');
const CHARGES = envTable('production', 'charges');
const tag = `${process.pid}_${Date.now().toString(36)}`;
/** Payments with this metadata key can never be written SUCCEEDED or AUTHORIZED (the CHECK below). */
const REFUSED = `refuse_${tag}`;
/** Payments with this metadata key lose their connection the first time one is written SUCCEEDED (the trigger below). */
const CUT = `cut_${tag}`;
const CONSTRAINT = `sb_test_refuse_${tag}`;
const CUTTER = `sb_test_cut_${tag}`;

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let f: PaymentsFixture;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '2000' });
  worker = await startWorker(stack);
  f = await paymentsFixture(stack);
  // Real refusals by Postgres, for these tests' payments only (marked in their metadata): a CHECK
  // constraint violation (23514, permanent) and a connection terminated by the server (57P01, transient).
  await stack.db.raw(`ALTER TABLE ${PAYMENTS} ADD CONSTRAINT ?? CHECK (status NOT IN ('SUCCEEDED', 'AUTHORIZED') OR metadata->>'${REFUSED}' IS NULL) NOT VALID`, [CONSTRAINT]);
  await stack.db.raw(`ALTER TABLE ${REFUNDS} ADD CONSTRAINT ?? CHECK (metadata->>'${REFUSED}' IS NULL) NOT VALID`, [CONSTRAINT]);
  await stack.db.raw(`CREATE SEQUENCE live.${CUTTER}`);
  await stack.db.raw(`CREATE FUNCTION live.${CUTTER}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.metadata->>'${CUT}' IS NOT NULL AND NEW.status = 'SUCCEEDED' AND nextval('live.${CUTTER}') = 1 THEN
        PERFORM pg_terminate_backend(pg_backend_pid());
        PERFORM pg_sleep(5);
      END IF;
      RETURN NEW;
    END $$`);
  await stack.db.raw(`CREATE TRIGGER ${CUTTER} BEFORE INSERT OR UPDATE ON ${PAYMENTS} FOR EACH ROW EXECUTE FUNCTION live.${CUTTER}()`);
});

afterAll(async () => {
  await worker?.stop();
  await stack?.db.raw(`ALTER TABLE ${PAYMENTS} DROP CONSTRAINT IF EXISTS ??`, [CONSTRAINT]).catch(() => {});
  await stack?.db.raw(`ALTER TABLE ${REFUNDS} DROP CONSTRAINT IF EXISTS ??`, [CONSTRAINT]).catch(() => {});
  await stack?.db.raw(`DROP TRIGGER IF EXISTS ${CUTTER} ON ${PAYMENTS}`).catch(() => {});
  await stack?.db.raw(`DROP FUNCTION IF EXISTS live.${CUTTER}()`).catch(() => {});
  await stack?.db.raw(`DROP SEQUENCE IF EXISTS live.${CUTTER}`).catch(() => {});
  await stack?.close();
  await sim?.close();
});

async function ops(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runOps(argv, { env: suiteEnv(), io: { out: (t) => { out += `${t}\n`; }, err: (t) => { err += `${t}\n`; } } });
  return { code, out, err };
}

describe('a write Postgres refuses for good', () => {
  it('stops at the first refusal: the payment keeps the status it has, flagged needs_attention, the account told, the ops CLI lists it', async () => {
    const created = await createPayment(stack, f.merchant, { amount: 4321, metadata: { [REFUSED]: 'yes' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id: string = created.body.data.id;
    const answered = await confirm(stack, f.merchant, id, { payment_method: card(CARDS.visa) });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);

    // The workflow ends instead of retrying the refused write forever.
    const client = await stack.deps.temporal();
    const result: PaymentState = await Promise.race([
      client.workflow.getHandle(paymentWorkflowId(id)).result(),
      sleep(20_000).then(() => { throw new Error('the payment workflow did not end'); }),
    ]);
    expect(result.needsAttention).toMatchObject({ reason: 'permanent_data_error', step: 'walk' });
    expect(result.status).toBe('PROCESSING');
    // The failure in history names the SQLSTATE and the constraint, not the statement or the row's values.
    const history = flatten(await client.workflow.getHandle(paymentWorkflowId(id)).fetchHistory()).join('\n');
    expect(history).toContain(`check_violation (SQLSTATE 23514) on table payments, constraint ${CONSTRAINT}`);
    expect(history).not.toMatch(/Failing row|update "live"|insert into/i);

    const row = await stack.db(PAYMENTS).where({ id }).first();
    expect(row).toMatchObject({ status: 'PROCESSING', needs_attention_reason: 'permanent_data_error' });
    expect(row.needs_attention_at).toBeInstanceOf(Date);

    // One processor call: the refused outcome's attempt was not made again (its retries would call again).
    const [charge] = await stack.db(CHARGES).where({ payment_id: id });
    await sleep(3000);
    expect((await sim.key(charge.id)).calls).toBe(1);

    const payment = await getPayment(stack, f.merchant, id, '');
    expect(payment).toMatchObject({ status: 'PROCESSING', needs_attention: true, needs_attention_reason: 'permanent_data_error' });

    const notifications = await stack.db('core.notifications').where({ type: 'payment.needs_attention' }).whereRaw("details->>'payment_id' = ?", [id]);
    expect(notifications).toHaveLength(1);
    expect(notifications[0]).toMatchObject({ account_id: f.merchant.account.id });
    expect(notifications[0].details).toMatchObject({
      payment_id: id, environment: 'production', status: 'PROCESSING', reason: 'permanent_data_error', step: 'walk',
      sqlstate: '23514', table: 'payments', constraint: CONSTRAINT, row_missing: false, workflow_id: paymentWorkflowId(id),
    });
    const listed = await stack.http.get(`/v1/notifications?account_id=${f.merchant.account.id}`).set(bearer(f.merchant.token));
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(JSON.stringify(listed.body)).toContain(id);

    const json = await ops('payments:attention', '--account', f.merchant.account.id, '--json');
    expect(json.code, json.err).toBe(0);
    expect(JSON.parse(json.out)).toEqual([expect.objectContaining({
      payment_id: id, account_id: f.merchant.account.id, environment: 'production', amount: 4321, currency: 'USD', status: 'PROCESSING',
      reason: 'permanent_data_error', workflow_id: paymentWorkflowId(id),
    })]);
    const text = await ops('payments:attention', '--account', f.merchant.account.id);
    expect(text.out).toMatch(/PAYMENT\s+ACCOUNT\s+ENV\s+AMOUNT\s+DB STATUS\s+REASON\s+SINCE/);
    expect(text.out).toContain(id);

    // A flagged payment takes no more commands: its workflow has ended.
    const cancel = await stack.http.post(`/v1/payments/${id}/cancel`).set(bearer(f.merchant.secretKey)).send({});
    expect(cancel.status, JSON.stringify(cancel.body)).toBe(409);
    expect(cancel.body.error.details.reason).toBe('invalid_state');
  }, 60_000);
});

describe('a refund whose write Postgres refuses for good', () => {
  it('ends its workflow at once with the failure, and flags its payment for an operator, naming the refund', async () => {
    const paid = await pay(stack, f.merchant, CARDS.visa, { amount: 2500 });
    expect(paid.body.data.status, JSON.stringify(paid.body)).toBe('SUCCEEDED');
    const paymentId: string = paid.body.data.id;
    const answered = await stack.http.post('/v1/refunds').set(bearer(f.merchant.secretKey))
      .send({ payment_id: paymentId, amount: 500, metadata: { [REFUSED]: 'yes' } });
    // Our database refusing our own write: the catalogue's internal_error, without the values or a stack.
    expect(answered.status, JSON.stringify(answered.body)).toBe(500);
    expect(answered.body.error.details.reason).toBe('internal_error');
    expect(JSON.stringify(answered.body)).not.toMatch(/Failing row|insert into|at .*\.ts/);

    const notification = await eventually(async () => (await stack.db('core.notifications')
      .where({ type: 'payment.needs_attention' }).whereRaw("details->>'payment_id' = ?", [paymentId]))[0], 20_000, 200);
    expect(notification.details).toMatchObject({
      payment_id: paymentId, status: 'SUCCEEDED', reason: 'permanent_data_error', step: 'refund reserve',
      sqlstate: '23514', table: 'refunds', constraint: CONSTRAINT,
    });
    const refundId: string = notification.details.refund_id;
    expect(refundId).toMatch(/^re_/);
    const client = await stack.deps.temporal();
    const failed = await client.workflow.getHandle(refundWorkflowId(refundId)).result().then(() => undefined, (err: unknown) => err);
    expect(failureType(failed)).toBe('permanent_data_error');
    expect(await stack.db(REFUNDS).where({ id: refundId })).toHaveLength(0);
    expect(await getPayment(stack, f.merchant, paymentId, '')).toMatchObject({ status: 'SUCCEEDED', needs_attention: true });
  }, 60_000);
});

describe('a connection the server cuts', () => {
  it('is retried, and the payment succeeds unflagged', async () => {
    const created = await createPayment(stack, f.merchant, { amount: 1234, metadata: { [CUT]: 'yes' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id: string = created.body.data.id;
    const answered = await confirm(stack, f.merchant, id, { payment_method: card(CARDS.visa) });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);

    const row = await eventually(async () => {
      const found = await stack.db(PAYMENTS).where({ id }).first();
      return found.status === 'SUCCEEDED' ? found : undefined;
    }, 30_000, 200);
    expect(row.needs_attention_at).toBeNull();
    // The cut happened (the first SUCCEEDED write), and the retry after it went through.
    const { rows } = await stack.db.raw(`SELECT last_value FROM live.${CUTTER}`);
    expect(Number(rows[0].last_value)).toBeGreaterThanOrEqual(2);
    const charges = await stack.db(CHARGES).where({ payment_id: id });
    expect(charges.map((c) => c.status)).toEqual(['CAPTURED']);
    expect(Number(charges[0].captured_amount)).toBe(1234);
    expect((await sim.key(charges[0].id)).calls).toBe(2);
    expect(await stack.db('core.notifications').where({ type: 'payment.needs_attention' }).whereRaw("details->>'payment_id' = ?", [id])).toHaveLength(0);
    expect((await getPayment(stack, f.merchant, id, '')).needs_attention).toBe(false);
  }, 60_000);
});
