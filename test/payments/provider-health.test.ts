import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyOutcome, PAYMENT_METHOD_UNAVAILABLE } from '../../activities/payments/outcomes';
import { attemptActivities } from '../../activities/payments/attempts';
import type { PaymentActivityDeps } from '../../activities/payments/deps';
import type { ProviderExchange } from '../../activities/providers/types';
import { envTable } from '../../db/environments';
import { HEALTH_SHARDS, healthUpsert, healthWindows, latencyBucket, recordHealth, type HealthSample } from '../../db/provider-health';
import { ownConnection } from '../../db/knex';
import type { Client as PgClient } from 'pg';
import { newId } from '../../lib/ids';
import { LATENCY_BUCKETS_MS } from '../../lib/routing/adaptive-contract';
import type { AttemptArgs } from '../../contracts/payments';
import { bearer, createMerchant, DISPATCHER_CLAIM, Merchant, RunningWorker, startStack, startWorker, TestStack, unique } from '../support/stack';
import { CARDS, card, confirm, createPayment, getPayment, pay, paymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually } from '../support/worker-process';

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '1000' });
  worker = await startWorker(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

const BUCKETS = LATENCY_BUCKETS_MS.length + 1;

interface Health {
  rows: any[];
  attempts: number; approvals: number; hard_declines: number; soft_declines: number; transport_errors: number; unknown: number;
  latency_ms_sum: number; latency_ms_max: number; latency_buckets: number[]; last_error_at: Date | null;
}

/** A config's health rows (production) and their sums. */
async function healthOf(configId: string): Promise<Health> {
  const rows = await stack.db(envTable('production', 'provider_health')).where({ payment_provider_config_id: configId });
  const sum = (k: string) => rows.reduce((total: number, r: any) => total + Number(r[k]), 0);
  return {
    rows,
    attempts: sum('attempts'), approvals: sum('approvals'), hard_declines: sum('hard_declines'), soft_declines: sum('soft_declines'),
    transport_errors: sum('transport_errors'), unknown: sum('unknown'), latency_ms_sum: sum('latency_ms_sum'),
    latency_ms_max: Math.max(0, ...rows.map((r: any) => r.latency_ms_max)),
    latency_buckets: Array.from({ length: BUCKETS }, (_, i) => rows.reduce((total: number, r: any) => total + r.latency_buckets[i], 0)),
    last_error_at: rows.map((r: any) => r.last_error_at).filter(Boolean).sort().at(-1) ?? null,
  };
}

/** A connection of its own whose backend counts into another shard than `shard` (fresh backends take new pids). */
async function connectionOfAnotherShard(shard: number): Promise<PgClient> {
  for (;;) {
    const client = ownConnection(stack.db, 'test');
    await client.connect();
    if ((client as unknown as { processID: number }).processID % HEALTH_SHARDS !== shard) return client;
    await client.end();
  }
}

const NOTHING = { attempts: 0, approvals: 0, hard_declines: 0, soft_declines: 0, transport_errors: 0, unknown: 0 };
const counts = (h: Health) => ({
  attempts: h.attempts, approvals: h.approvals, hard_declines: h.hard_declines, soft_declines: h.soft_declines,
  transport_errors: h.transport_errors, unknown: h.unknown,
});

/** The histogram with one call in the bucket of `ms`. */
const oneCallAt = (ms: number) => Array.from({ length: BUCKETS }, (_, i) => (i === latencyBucket(ms) ? 1 : 0));

const authorizeOf = (charge: any): any => charge.exchanges.find((e: any) => e.operation === 'authorize');

describe('the recorder, on real payments', () => {
  it('counts an approved payment once: one attempt, one approval, its authorize latency, card network and currency', async () => {
    const f = await paymentsFixture(stack, { primary: { latency_ms: 300 } });
    const startedMinute = Math.floor(Date.now() / 60_000) * 60_000;
    const res = await pay(stack, f.merchant, CARDS.visa);
    expect(res.body.data.status).toBe('SUCCEEDED');
    const { charges } = await getPayment(stack, f.merchant, res.body.data.id);
    const latency = authorizeOf(charges[0]).duration_ms;
    expect(latency).toBeGreaterThanOrEqual(300);

    const primary = await healthOf(f.primary.id);
    expect(primary.rows).toHaveLength(1);
    expect(primary.rows[0]).toMatchObject({ account_id: f.merchant.account.id, card_network: 'VISA', currency: 'USD' });
    expect(primary.rows[0].minute.getTime()).toBeGreaterThanOrEqual(startedMinute);
    expect(primary.rows[0].minute.getTime() % 60_000).toBe(0);
    expect(counts(primary)).toEqual({ ...NOTHING, attempts: 1, approvals: 1 });
    expect(primary.latency_ms_sum).toBe(latency);
    expect(primary.latency_ms_max).toBe(latency);
    expect(primary.latency_buckets).toEqual(oneCallAt(latency));
    expect(latencyBucket(latency)).toBeGreaterThanOrEqual(LATENCY_BUCKETS_MS.indexOf(500));
    expect(primary.last_error_at).toBeNull();
    expect((await healthOf(f.backup.id)).rows).toEqual([]);

    // The attempt activity retried after its commit answers from the record: nothing is counted again.
    const activities = attemptActivities({ db: stack.db, vault: stack.deps.vault, config: stack.config } as unknown as PaymentActivityDeps);
    const retried = await activities.authorizeCharge({
      paymentId: res.body.data.id, accountId: f.merchant.account.id, workspaceId: f.merchant.workspaceId, environment: 'production',
      chargeId: charges[0].id, routingPlanId: charges[0].routing_plan_id, attemptNo: 1,
      candidate: { providerConfigId: f.primary.id, providerId: f.provider.id, methodId: charges[0].payment_provider_method_id, estimatedFee: null },
      paymentMethodId: charges[0].payment_method_id, capture: true, lastCandidate: false, context: { actor: { type: 'system', id: 'test' } },
    });
    expect(retried.outcome).toBe('approved');
    expect(counts(await healthOf(f.primary.id))).toEqual({ ...NOTHING, attempts: 1, approvals: 1 });
  });

  it('counts a hard decline at the provider that declined, and nothing at the next (never tried)', async () => {
    const f = await paymentsFixture(stack);
    const res = await pay(stack, f.merchant, CARDS.declined);
    expect(res.body.data.status).toBe('FAILED');
    const primary = await healthOf(f.primary.id);
    expect(counts(primary)).toEqual({ ...NOTHING, attempts: 1, hard_declines: 1 });
    expect(primary.latency_buckets.reduce((a, b) => a + b, 0)).toBe(1);
    expect(primary.last_error_at).toBeNull();
    expect((await healthOf(f.backup.id)).rows).toEqual([]);
  });

  it('counts each cascaded soft decline at its own provider', async () => {
    const f = await paymentsFixture(stack);
    const res = await pay(stack, f.merchant, CARDS.processingError);
    expect(res.body.data.status).toBe('FAILED');
    const { charges } = await getPayment(stack, f.merchant, res.body.data.id);
    expect(charges.map((c: any) => c.payment_provider_config_id)).toEqual([f.primary.id, f.backup.id]);
    for (const [config, charge] of [[f.primary, charges[0]], [f.backup, charges[1]]]) {
      const health = await healthOf(config.id);
      expect(counts(health)).toEqual({ ...NOTHING, attempts: 1, soft_declines: 1 });
      expect(health.latency_ms_sum).toBe(authorizeOf(charge).duration_ms);
    }
  });

  it('counts a transport error and stamps last_error_at; the approval that follows counts at the backup', async () => {
    const f = await paymentsFixture(stack, { primary: { outage: true } });
    const before = new Date(Date.now() - 1000);
    const res = await pay(stack, f.merchant, CARDS.mastercard);
    expect(res.body.data.status).toBe('SUCCEEDED');
    const primary = await healthOf(f.primary.id);
    expect(counts(primary)).toEqual({ ...NOTHING, attempts: 1, transport_errors: 1 });
    expect(primary.rows[0].card_network).toBe('MASTERCARD');
    expect(primary.last_error_at!.getTime()).toBeGreaterThanOrEqual(before.getTime());
    expect(primary.last_error_at!.getTime()).toBeLessThanOrEqual(Date.now());
    const backup = await healthOf(f.backup.id);
    expect(counts(backup)).toEqual({ ...NOTHING, attempts: 1, approvals: 1 });
    expect(backup.last_error_at).toBeNull();
  });

  it('counts an unknown outcome reconciled later as one attempt: the unknown, then the approval', async () => {
    // As in provider-faults.test.ts: the processor takes the authorization and never answers it.
    const f = await paymentsFixture(stack, { primary: { blackhole: true, latency_ms: 3000 } });
    const created = await createPayment(stack, f.merchant, { amount: 1234 });
    const paymentId = created.body.data.id;
    const confirming = confirm(stack, f.merchant, paymentId, { payment_method: card(CARDS.visa) });
    await eventually(async () => {
      const p = await getPayment(stack, f.merchant, paymentId);
      return p.charges[0]?.status === 'UNKNOWN' ? p : undefined;
    });
    const during = await healthOf(f.primary.id);
    expect(counts(during)).toEqual({ ...NOTHING, attempts: 1, unknown: 1 });
    expect(during.last_error_at).not.toBeNull();
    expect(during.latency_buckets.reduce((a, b) => a + b, 0)).toBe(1);
    await confirming;

    // The processor recovers and answers the status query.
    const put = await stack.http.put(`/v1/payment-provider-configs/${f.primary.id}`).set(bearer(f.merchant.token))
      .send({ credentials: { api_key: 'sim_primary_key_0001' } });
    expect(put.status).toBe(200);
    const done = await eventually(async () => {
      const p = await getPayment(stack, f.merchant, paymentId);
      return p.status === 'SUCCEEDED' ? p : undefined;
    }, 60_000, 500);
    expect(done.charges).toHaveLength(1);

    const after = await healthOf(f.primary.id);
    expect(counts(after)).toEqual({ ...NOTHING, attempts: 1, unknown: 1, approvals: 1 });
    // Only the authorize call's latency: the status queries that settled it are not authorizations.
    expect(after.latency_buckets.reduce((a, b) => a + b, 0)).toBe(1);
    expect(after.latency_ms_sum).toBe(authorizeOf(done.charges[0]).duration_ms);
    expect((await healthOf(f.backup.id)).rows).toEqual([]);
  }, 90_000);
});

describe('the recorder, outcome by outcome (applyOutcome on a seeded charge)', () => {
  let merchant: Merchant;
  beforeAll(async () => { merchant = await createMerchant(stack); });

  const exchange = (over: Partial<ProviderExchange> = {}): ProviderExchange => ({
    operation: 'authorize', idempotency_key: 'k', request: { method: 'POST', path: '/v1/charges' }, response: { status: 200 },
    outcome: 'approved', started_at: new Date().toISOString(), duration_ms: 42, ...over,
  });

  /** A payment with one CREATED charge at a config of its own, paid by a Mastercard. */
  async function seeded(): Promise<{ args: AttemptArgs; configId: string }> {
    const table = (name: string) => stack.db(envTable('production', name));
    const paymentId = newId('pay');
    const chargeId = newId('ch');
    const pmId = newId('pm');
    const configId = unique('ppc_seeded');
    await table('payments').insert({ id: paymentId, account_id: merchant.account.id, amount: 1000, currency: 'EUR', status: 'PROCESSING' });
    await table('payment_methods').insert({
      id: pmId, account_id: merchant.account.id, payment_id: paymentId, card_network: 'MASTERCARD', card_last4: '4444', pan_encrypted: 'sealed',
    });
    await table('charges').insert({
      id: chargeId, payment_id: paymentId, payment_method_id: pmId, account_id: merchant.account.id, status: 'CREATED', amount: 1000,
      currency: 'EUR', attempt_no: 1, payment_provider_config_id: configId,
    });
    return {
      configId,
      args: {
        paymentId, accountId: merchant.account.id, workspaceId: merchant.workspaceId, environment: 'production', chargeId,
        routingPlanId: newId('rp'), attemptNo: 1, candidate: { providerConfigId: configId, providerId: 'pp_x', methodId: 'ppm_x', estimatedFee: null },
        paymentMethodId: pmId, capture: false, lastCandidate: true, context: { actor: { type: 'system', id: 'test' } },
      },
    };
  }

  it('counts a customer authentication as one attempt: requires_action, then the approval its notification brings', async () => {
    const { args, configId } = await seeded();
    await applyOutcome(stack.db, args, { kind: 'requires_action', providerReference: 'ref_1', redirectUrl: 'https://acs.example/1' }, [
      exchange({ outcome: 'requires_action', duration_ms: 80 }),
    ]);
    expect(counts(await healthOf(configId))).toEqual({ ...NOTHING, attempts: 1 });
    // A notification is recorded under the operation it completes, but it is no call: no latency.
    await applyOutcome(stack.db, args, { kind: 'approved', providerReference: 'ref_1', authorizedAmount: 1000, capturedAmount: 0, refundedAmount: 0 }, [
      exchange({ request: { method: 'NOTIFICATION', path: 'AUTHORISATION' }, duration_ms: 0 }),
    ]);
    const health = await healthOf(configId);
    expect(counts(health)).toEqual({ ...NOTHING, attempts: 1, approvals: 1 });
    expect(health.rows[0]).toMatchObject({ card_network: 'MASTERCARD', currency: 'EUR' });
    expect(health.latency_buckets).toEqual(oneCallAt(80));
    expect(health.latency_ms_sum).toBe(80);
  });

  it('records from the charge as its attempt wrote it, and from the row itself once another outcome came first', async () => {
    const charges = () => stack.db(envTable('production', 'charges'));
    // As written: updated only while still CREATED, its attempt counted.
    const first = await seeded();
    const written = await charges().where({ id: first.args.chargeId }).first();
    await applyOutcome(stack.db, first.args, { kind: 'approved', providerReference: 'ref_w', authorizedAmount: 1000, capturedAmount: 0, refundedAmount: 0 }, [
      exchange({ duration_ms: 30 }),
    ], { cardNetwork: 'MASTERCARD', written });
    expect(await charges().where({ id: first.args.chargeId }).first()).toMatchObject({ status: 'AUTHORIZED', performance: { duration: 30, provider_calls: 1 } });
    expect(counts(await healthOf(first.configId))).toEqual({ ...NOTHING, attempts: 1, approvals: 1 });

    // Stale: the charge left CREATED after the caller wrote it (a challenge recorded meanwhile). The
    // outcome is computed from the locked row: no second attempt counted, both calls' time kept, the
    // payment's next_action cleared.
    const stale = await seeded();
    const writtenStale = await charges().where({ id: stale.args.chargeId }).first();
    await applyOutcome(stack.db, stale.args, { kind: 'requires_action', providerReference: 'ref_s', redirectUrl: 'https://acs.example/s' }, [
      exchange({ outcome: 'requires_action', duration_ms: 50 }),
    ]);
    await applyOutcome(stack.db, stale.args, { kind: 'approved', providerReference: 'ref_s', authorizedAmount: 1000, capturedAmount: 0, refundedAmount: 0 }, [
      exchange({ request: { method: 'NOTIFICATION', path: 'AUTHORISATION' }, duration_ms: 0 }),
    ], { written: writtenStale });
    expect(await charges().where({ id: stale.args.chargeId }).first()).toMatchObject({ status: 'AUTHORIZED', performance: { duration: 50, provider_calls: 2 } });
    expect(counts(await healthOf(stale.configId))).toEqual({ ...NOTHING, attempts: 1, approvals: 1 });
    expect(await stack.db(envTable('production', 'payments')).where({ id: stale.args.paymentId }).first()).toMatchObject({ status: 'AUTHORIZED', next_action: null });

    // Two at once from the same written row (a retry beside the first try): each is recorded once, the
    // second from the row the first left.
    const twice = await seeded();
    const writtenTwice = await charges().where({ id: twice.args.chargeId }).first();
    const approved = { kind: 'approved', providerReference: 'ref_t', authorizedAmount: 1000, capturedAmount: 0, refundedAmount: 0 } as const;
    await Promise.all([0, 1].map(() => applyOutcome(stack.db, twice.args, approved, [exchange({ duration_ms: 20 })], { cardNetwork: 'MASTERCARD', written: writtenTwice })));
    const after = await charges().where({ id: twice.args.chargeId }).first();
    expect(after).toMatchObject({ status: 'AUTHORIZED', performance: { duration: 40, provider_calls: 2 } });
    expect(after.exchanges).toHaveLength(2);
    expect(counts(await healthOf(twice.configId))).toEqual({ ...NOTHING, attempts: 1, approvals: 2 });
  });

  describe('in one statement, from the charge and the payment as the attempt knows them', () => {
    const table = (name: string) => stack.db(envTable('production', name));
    const declined = { kind: 'hard_decline', declineCode: 'do_not_honor', message: 'Do not honor' } as const;
    const approved = { kind: 'approved', providerReference: 'ref_o', authorizedAmount: 1000, capturedAmount: 0, refundedAmount: 0 } as const;

    /** Every statement knex sends while `run` runs, and whether it was in a transaction. */
    async function statementsOf(run: () => Promise<unknown>): Promise<{ sql: string; tx: boolean }[]> {
      const seen: { sql: string; tx: boolean }[] = [];
      const onQuery = (q: { sql: string; __knexTxId?: string }) => !DISPATCHER_CLAIM.test(q.sql) && seen.push({ sql: q.sql, tx: !!q.__knexTxId });
      stack.db.on('query', onQuery);
      try {
        await run();
      } finally {
        stack.db.off('query', onQuery);
      }
      return seen;
    }

    /** The events of a payment, oldest first, as the fan-out reads them. */
    const eventsOf = (paymentId: string) => table('events').where({ payment_id: paymentId }).orderBy('id');

    it('records a decline: charge, payment, the card\'s CVC and number, health and both events, in one statement showing the rows Postgres holds', async () => {
      const { args, configId } = await seeded();
      await table('payment_methods').where({ id: args.paymentMethodId }).update({ cvc_encrypted: 'sealed-cvc' });
      const written = await table('charges').where({ id: args.chargeId }).first();
      const payment = await table('payments').where({ id: args.paymentId }).first();
      const statements = await statementsOf(() => applyOutcome(stack.db, args, declined, [exchange({ outcome: 'hard_decline', duration_ms: 25 })], {
        cardNetwork: 'MASTERCARD', written, payment, wipeCvc: true,
      }));
      expect(statements).toHaveLength(1);
      expect(statements[0]).toMatchObject({ tx: false, sql: expect.stringMatching(/^with "charge_recorded" as \(update "live"."charges"/) });
      const charge = await table('charges').where({ id: args.chargeId }).first();
      const after = await table('payments').where({ id: args.paymentId }).first();
      expect(charge).toMatchObject({ status: 'DECLINED', decline_code: 'do_not_honor', performance: { duration: 25, provider_calls: 1 } });
      expect(after).toMatchObject({ status: 'FAILED', last_error: { code: 'card_declined', decline_code: 'do_not_honor', charge_id: args.chargeId } });
      expect(await table('payment_methods').where({ id: args.paymentMethodId }).first()).toMatchObject({ pan_encrypted: '', cvc_encrypted: null });
      expect(counts(await healthOf(configId))).toEqual({ ...NOTHING, attempts: 1, hard_declines: 1 });
      const events = await eventsOf(args.paymentId);
      expect(events.map((e: any) => e.event)).toEqual(['charge.failed', 'payment_intent.payment_failed']);
      // The events show the rows as the statement left them (computed before it, from the rows known).
      const shown = (row: any) => ({ ...row, created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString() });
      expect(events[1].data.object).toMatchObject({ id: args.paymentId, status: 'FAILED', last_error: after.last_error, created_at: shown(after).created_at, updated_at: shown(after).updated_at });
      expect(events[0].data.object).toMatchObject({ id: args.chargeId, status: 'DECLINED', created_at: shown(charge).created_at, updated_at: shown(charge).updated_at });
    });

    it('writes nothing in it when the payment changed since the attempt read it: the transaction records the outcome from the rows as they are', async () => {
      const { args, configId } = await seeded();
      const written = await table('charges').where({ id: args.chargeId }).first();
      const payment = await table('payments').where({ id: args.paymentId }).first();
      // Written meanwhile: the same status, a later updated_at and new metadata.
      await table('payments').where({ id: args.paymentId }).update({ metadata: { changed: 'meanwhile' }, updated_at: new Date(payment.updated_at.getTime() + 5) });
      const statements = await statementsOf(() => applyOutcome(stack.db, args, approved, [exchange({ duration_ms: 30 })], {
        cardNetwork: 'MASTERCARD', written, payment,
      }));
      expect(statements[0]).toMatchObject({ tx: false, sql: expect.stringMatching(/^with "charge_recorded" as \(update "live"."charges"/) });
      expect(statements.slice(1).every((q) => q.tx)).toBe(true);
      expect(await table('charges').where({ id: args.chargeId }).first()).toMatchObject({ status: 'AUTHORIZED', performance: { duration: 30, provider_calls: 1 } });
      expect(counts(await healthOf(configId))).toEqual({ ...NOTHING, attempts: 1, approvals: 1 });
      const events = await eventsOf(args.paymentId);
      expect(events.map((e: any) => e.event)).toEqual(['payment_intent.amount_capturable_updated']);
      expect(events[0].data.object).toMatchObject({ status: 'AUTHORIZED', metadata: { changed: 'meanwhile' } });
    });

    it('records two at once from the same rows once each: the second from the charge the first left', async () => {
      const { args, configId } = await seeded();
      const written = await table('charges').where({ id: args.chargeId }).first();
      const payment = await table('payments').where({ id: args.paymentId }).first();
      await Promise.all([0, 1].map(() => applyOutcome(stack.db, args, approved, [exchange({ duration_ms: 20 })], { cardNetwork: 'MASTERCARD', written, payment })));
      const after = await table('charges').where({ id: args.chargeId }).first();
      expect(after).toMatchObject({ status: 'AUTHORIZED', performance: { duration: 40, provider_calls: 2 } });
      expect(after.exchanges).toHaveLength(2);
      expect(counts(await healthOf(configId))).toEqual({ ...NOTHING, attempts: 1, approvals: 2 });
      expect((await eventsOf(args.paymentId)).map((e: any) => e.event)).toEqual(['payment_intent.amount_capturable_updated', 'payment_intent.amount_capturable_updated']);
    });
  });

  it('does not count payment_method_unavailable: the card was refused before any call', async () => {
    const { args, configId } = await seeded();
    const result = await applyOutcome(stack.db, args, { kind: 'hard_decline', declineCode: PAYMENT_METHOD_UNAVAILABLE }, []);
    expect(result.paymentStatus).toBe('FAILED');
    expect((await healthOf(configId)).rows).toEqual([]);
  });

  it('counts an outcome without an authorize call (a status query) without latency', async () => {
    const { args, configId } = await seeded();
    await applyOutcome(stack.db, args, { kind: 'transport_error', error: 'the provider has no record of the charge' }, [
      exchange({ operation: 'get_status', outcome: 'not_found', duration_ms: 15 }),
    ]);
    const health = await healthOf(configId);
    expect(counts(health)).toEqual({ ...NOTHING, attempts: 1, transport_errors: 1 });
    expect(health.latency_buckets).toEqual(new Array(BUCKETS).fill(0));
    expect(health.last_error_at).not.toBeNull();
  });
});

describe('recordHealth and healthWindows', () => {
  const sample = (over: Partial<HealthSample>): HealthSample => ({
    providerConfigId: 'ppc_x', accountId: 'acct_x', at: new Date(), cardNetwork: 'VISA', currency: 'USD', attempt: true, outcome: 'approved',
    latencyMs: 100, ...over,
  });

  it.each([
    [0, 0], [10, 0], [11, 1], [25, 1], [26, 2], [100, 3], [101, 4], [1000, 6], [2500, 7], [10_000, 9], [10_001, 10], [600_000, 10],
  ])('puts %i ms in bucket %i', (ms, bucket) => {
    expect(latencyBucket(ms)).toBe(bucket);
  });

  it('adds outcomes recorded at once in one minute without losing any', async () => {
    const configId = unique('ppc_busy');
    const at = new Date();
    await Promise.all(Array.from({ length: 20 }, (_, i) => recordHealth(stack.db, 'production', sample({
      providerConfigId: configId, at, outcome: i % 4 === 0 ? 'transport_error' : 'approved', latencyMs: i * 10,
    }))));
    const health = await healthOf(configId);
    // Counted into the shards of the connections that recorded them: one minute's rows, summed.
    expect(health.rows.length).toBeLessThanOrEqual(HEALTH_SHARDS);
    expect(new Set(health.rows.map((r: any) => r.minute.getTime())).size).toBe(1);
    expect(counts(health)).toEqual({ ...NOTHING, attempts: 20, approvals: 15, transport_errors: 5 });
    expect(health.latency_ms_sum).toBe(Array.from({ length: 20 }, (_, i) => i * 10).reduce((a, b) => a + b, 0));
    expect(health.latency_ms_max).toBe(190);
    const expected = new Array(BUCKETS).fill(0);
    for (let i = 0; i < 20; i += 1) expected[latencyBucket(i * 10)] += 1;
    expect(health.latency_buckets).toEqual(expected);
    expect(health.last_error_at!.getTime()).toBe(at.getTime());
  });

  it('counts an outcome side by side with another one at the same config and minute, not after its commit', async () => {
    const configId = unique('ppc_side');
    const at = new Date();
    await stack.db.transaction(async (first) => {
      await recordHealth(first, 'production', sample({ providerConfigId: configId, at }));
      // Uncommitted, `first` holds its shard's row. A connection of another shard counts at once.
      const firstShard = (await first.raw('select pg_backend_pid() % ? as shard', [HEALTH_SHARDS])).rows[0].shard as number;
      const second = await connectionOfAnotherShard(firstShard);
      try {
        await second.query("SET lock_timeout = '2s'");
        const { sql, bindings } = healthUpsert(stack.db, 'production', sample({ providerConfigId: configId, at, outcome: 'hard_decline' }))!.toSQL().toNative();
        await second.query(sql, bindings as unknown[]);
      } finally {
        await second.end();
      }
    });
    expect(counts(await healthOf(configId))).toEqual({ ...NOTHING, attempts: 2, approvals: 1, hard_declines: 1 });
  });

  it('keeps its counts per minute, card network and currency', async () => {
    const configId = unique('ppc_keys');
    const at = new Date('2030-01-01T10:00:30Z');
    await recordHealth(stack.db, 'production', sample({ providerConfigId: configId, at }));
    await recordHealth(stack.db, 'production', sample({ providerConfigId: configId, at: new Date('2030-01-01T10:00:59.999Z') }));
    await recordHealth(stack.db, 'production', sample({ providerConfigId: configId, at: new Date('2030-01-01T10:01:00Z') }));
    await recordHealth(stack.db, 'production', sample({ providerConfigId: configId, at, cardNetwork: '' }));
    await recordHealth(stack.db, 'production', sample({ providerConfigId: configId, at, currency: 'EUR' }));
    // Attempts per minute, card network and currency, whatever shards they were counted in.
    const attempts: Record<string, number> = {};
    for (const r of (await healthOf(configId)).rows) {
      const key = `${r.minute.toISOString()} ${r.card_network || '(none)'} ${r.currency}`;
      attempts[key] = (attempts[key] ?? 0) + r.attempts;
    }
    expect(attempts).toEqual({
      '2030-01-01T10:00:00.000Z (none) USD': 1,
      '2030-01-01T10:00:00.000Z VISA EUR': 1,
      '2030-01-01T10:00:00.000Z VISA USD': 2,
      '2030-01-01T10:01:00.000Z VISA USD': 1,
    });
  });

  it('reads a window: the sums per config over the minutes since now − window, absent without data', async () => {
    const [a, b, idle] = [unique('ppc_a'), unique('ppc_b'), unique('ppc_idle')];
    const now = new Date('2031-06-01T12:00:30Z');
    const minutesAgo = (m: number) => new Date(now.getTime() - m * 60_000);
    await recordHealth(stack.db, 'production', sample({ providerConfigId: a, at: now, latencyMs: 50 }));
    await recordHealth(stack.db, 'production', sample({ providerConfigId: a, at: minutesAgo(3), outcome: 'unknown', latencyMs: 1000 }));
    await recordHealth(stack.db, 'production', sample({ providerConfigId: a, at: minutesAgo(3), outcome: 'soft_decline', cardNetwork: 'AMEX' }));
    await recordHealth(stack.db, 'production', sample({ providerConfigId: a, at: minutesAgo(4), attempt: false, outcome: 'approved', latencyMs: null }));
    // Outside the window (before it, and after now).
    await recordHealth(stack.db, 'production', sample({ providerConfigId: a, at: minutesAgo(6), outcome: 'transport_error' }));
    await recordHealth(stack.db, 'production', sample({ providerConfigId: a, at: minutesAgo(-2), outcome: 'transport_error' }));
    await recordHealth(stack.db, 'production', sample({ providerConfigId: b, at: minutesAgo(1), outcome: 'hard_decline', latencyMs: 7 }));
    // Another environment's rows are another table.
    await recordHealth(stack.db, 'sandbox', sample({ providerConfigId: b, at: now }));

    const windows = await healthWindows(stack.db, 'production', [a, b, idle], 5, now);
    expect(Object.keys(windows).sort()).toEqual([a, b].sort());
    expect(windows[a]).toEqual({
      provider_config_id: a, attempts: 3, approvals: 2, hard_declines: 0, soft_declines: 1, transport_errors: 0, unknown: 1,
      latency_ms_sum: 1150, last_error_at: minutesAgo(3).toISOString(),
    });
    expect(windows[b]).toEqual({
      provider_config_id: b, attempts: 1, approvals: 0, hard_declines: 1, soft_declines: 0, transport_errors: 0, unknown: 0,
      latency_ms_sum: 7, last_error_at: null,
    });
    expect(await healthWindows(stack.db, 'production', [a], 1, now.toISOString())).toMatchObject({ [a]: { attempts: 1, approvals: 1 } });
    expect(await healthWindows(stack.db, 'production', [], 5, now)).toEqual({});
  });

  it('reads windows by the (config, minute) key and analytics by (account, minute)', async () => {
    // Seq scans disabled for the plan only: the tables are tiny here, so the planner would not bother otherwise.
    const plans = await stack.db.transaction(async (trx) => {
      await trx.raw('SET LOCAL enable_seqscan = off');
      const explain = async (where: string) => JSON.stringify((await trx.raw(`EXPLAIN (FORMAT JSON) SELECT sum(attempts) FROM live.provider_health WHERE ${where}`)).rows);
      return {
        window: await explain(`payment_provider_config_id IN ('ppc_a', 'ppc_b') AND minute >= now() - interval '5 minutes' AND minute <= now()`),
        analytics: await explain(`account_id = 'acct_x' AND minute >= now() - interval '1 day' AND minute < now()`),
      };
    });
    expect(plans.window).toContain('provider_health_pkey');
    expect(plans.analytics).toContain('provider_health_account_id_minute_index');
  });
});
