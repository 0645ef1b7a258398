import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { analyticsPoint, intervalStarts, latencyPercentile, pointCount } from '../../resources/analytics';
import { circuitState } from '../../lib/routing/adaptive';
import { insertApiKey } from '../../db/api-keys';
import { recordHealth, type HealthSample } from '../../db/provider-health';
import { DEFAULT_ROUTING_SETTINGS, type HealthWindow, LATENCY_BUCKETS_MS } from '../../lib/routing/adaptive-contract';
import { envTable } from '../../db/environments';
import { disputeIdOf } from '../../lib/ids';
import { bearer, createMerchant, Merchant, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { createConfig, createProvider } from '../support/routing';
import { CARDS, getPayment, pay, paymentsFixture, startSimulator, TestSimulator } from '../support/payments';

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let provider: any;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url });
  worker = await startWorker(stack);
  provider = await createProvider(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

const analytics = (m: Merchant, query = '', key = m.secretKey) => stack.http.get(`/v1/analytics/providers${query}`).set(bearer(key));
const providerOf = (res: any, id: string) => res.body.data.providers.find((p: any) => p.provider_config_id === id);
const sampleFor = (m: Merchant) => (configId: string, over: Partial<HealthSample>) => recordHealth(stack.db, 'production', {
  providerConfigId: configId, accountId: m.account.id, at: new Date(), cardNetwork: 'VISA', currency: 'USD', attempt: true, outcome: 'approved',
  latencyMs: null, ...over,
});

/** A dispute row as the dispute engine writes it (the engine itself is not what these tests are about). */
async function insertDispute(charge: any, over: { is_inquiry?: boolean; created_at?: Date; status?: string } = {}) {
  const processorId = `du_${Math.random().toString(36).slice(2)}`;
  await stack.db(envTable('production', 'disputes')).insert({
    id: disputeIdOf(charge.payment_provider_config_id, processorId), account_id: charge.account_id, payment_id: charge.payment_id,
    charge_id: charge.id, payment_provider_config_id: charge.payment_provider_config_id, processor_dispute_id: processorId,
    amount: charge.amount, currency: charge.currency, reason: 'fraudulent', status: over.status ?? 'NEEDS_RESPONSE', status_at: new Date(),
    is_inquiry: over.is_inquiry ?? false, created_at: over.created_at ?? new Date(), updated_at: new Date(),
  });
}

const ZERO = {
  attempts: 0, approvals: 0, approval_rate: null, hard_declines: 0, soft_declines: 0, transport_errors: 0, unknown: 0,
  latency_ms: { mean: null, p50: null, p95: null, p99: null },
};

describe('GET /analytics/providers after real payments', () => {
  it('answers each config\'s totals, a series over the last 24 hours by hour, its name and circuit', async () => {
    const f = await paymentsFixture(stack);
    const started = Date.now();
    for (const number of [CARDS.visa, CARDS.mastercard, CARDS.declined, CARDS.processingError]) {
      expect((await pay(stack, f.merchant, number)).status).toBe(200);
    }
    const payments = (await stack.http.get('/v1/payments?limit=10').set(bearer(f.merchant.secretKey))).body.data;
    const charges = (await Promise.all(payments.map((p: any) => getPayment(stack, f.merchant, p.id)))).flatMap((p: any) => p.charges);
    const durations = charges.filter((c: any) => c.payment_provider_config_id === f.primary.id)
      .map((c: any) => c.exchanges.find((e: any) => e.operation === 'authorize').duration_ms);
    expect(durations).toHaveLength(4);

    const res = await analytics(f.merchant);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.message).toBe('Provider analytics retrieved');
    const data = res.body.data;
    expect(data).toMatchObject({ object: 'provider_analytics', interval: 'hour' });
    const to = Date.parse(data.to);
    expect(to).toBeGreaterThanOrEqual(started);
    expect(to - Date.parse(data.from)).toBe(24 * 3_600_000);
    expect(data.providers.map((p: any) => [p.provider_config_id, p.name, p.circuit]).sort()).toEqual([
      [f.backup.id, 'Backup', 'closed'], [f.primary.id, 'Primary', 'closed'],
    ].sort());

    const primary = providerOf(res, f.primary.id);
    expect(primary.totals).toMatchObject({
      attempts: 4, approvals: 2, approval_rate: 2 / 3, hard_declines: 1, soft_declines: 1, transport_errors: 0, unknown: 0,
    });
    expect(primary.totals.latency_ms.mean).toBeCloseTo(durations.reduce((a: number, b: number) => a + b, 0) / 4, 6);
    const max = Math.max(...durations);
    for (const p of ['p50', 'p95', 'p99']) {
      expect(primary.totals.latency_ms[p]).toBeGreaterThanOrEqual(Math.min(...durations));
      expect(primary.totals.latency_ms[p]).toBeLessThanOrEqual(max);
    }
    expect(primary.totals.latency_ms.p99).toBe(max);
    expect(providerOf(res, f.backup.id).totals).toMatchObject({ attempts: 1, approvals: 0, approval_rate: 0, soft_declines: 1 });

    // One point per hour overlapping the range, oldest first, the empty ones included; they add up to the totals.
    expect(primary.series).toHaveLength(pointCount(new Date(data.from), new Date(data.to), 'hour'));
    expect(primary.series[0].at).toBe(new Date(Math.floor(Date.parse(data.from) / 3_600_000) * 3_600_000).toISOString());
    expect(primary.series.reduce((sum: number, p: any) => sum + p.attempts, 0)).toBe(4);
    expect(primary.series.filter((p: any) => p.attempts === 0).every((p: any) => JSON.stringify({ ...p, at: undefined }) === JSON.stringify({ ...ZERO, at: undefined }))).toBe(true);
  });
});

describe('GET /analytics/providers, the dispute rate', () => {
  it('counts chargebacks made in the range against the charges captured in it, per config', async () => {
    const f = await paymentsFixture(stack);
    for (const number of [CARDS.visa, CARDS.visa, CARDS.mastercard, CARDS.declined]) {
      expect((await pay(stack, f.merchant, number)).status).toBe(200);
    }
    // Authorized only: not a captured charge.
    expect((await pay(stack, f.merchant, CARDS.visa, { auto_capture: false })).status).toBe(200);
    const payments = (await stack.http.get('/v1/payments?limit=10').set(bearer(f.merchant.secretKey))).body.data;
    const charges = (await Promise.all(payments.map((p: any) => getPayment(stack, f.merchant, p.id)))).flatMap((p: any) => p.charges);
    const captured = charges.filter((c: any) => c.status === 'CAPTURED');
    expect(captured).toHaveLength(3);
    const [first, second] = captured;
    await insertDispute(first);
    await insertDispute(second, { status: 'LOST' });
    // An inquiry is not a chargeback, nor is a dispute opened before the range.
    await insertDispute(captured[2], { is_inquiry: true, status: 'WARNING_NEEDS_RESPONSE' });
    await insertDispute(captured[2], { created_at: new Date(Date.now() - 2 * 86_400_000) });

    const res = await analytics(f.merchant);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(providerOf(res, f.primary.id).disputes).toEqual({ chargebacks: 2, captured_charges: 3, dispute_rate: 2 / 3 });
    expect(providerOf(res, f.backup.id).disputes).toEqual({ chargebacks: 0, captured_charges: 0, dispute_rate: null });
    // The range decides: the older dispute counts in a range that holds it (without its charge).
    const older = await analytics(f.merchant, `?from=${new Date(Date.now() - 3 * 86_400_000).toISOString()}&to=${new Date(Date.now() - 86_400_000).toISOString()}`);
    expect(providerOf(older, f.primary.id).disputes).toEqual({ chargebacks: 1, captured_charges: 0, dispute_rate: null });
    // Another account sees none of it.
    const other = await createMerchant(stack);
    expect((await analytics(other)).body.data.providers).toEqual([]);
  });
});

describe('GET /analytics/providers, numbers from known rows', () => {
  let m: Merchant;
  let x: any;
  let y: any;
  let z: any;

  beforeAll(async () => {
    m = await createMerchant(stack);
    x = await createConfig(stack, m, provider.id, { name: 'Xpress' });
    y = await createConfig(stack, m, provider.id, { name: 'Yonder' });
    z = await createConfig(stack, m, provider.id, { name: 'Zed' });
    const sample = sampleFor(m);
    const at = (time: string) => new Date(`2030-03-01T${time}Z`);
    await sample(x.id, { at: at('10:00:10'), latencyMs: 5 });
    await sample(x.id, { at: at('10:00:20'), latencyMs: 20, cardNetwork: '', currency: 'EUR' });
    await sample(x.id, { at: at('10:01:00'), outcome: 'soft_decline', latencyMs: 300 });
    await sample(x.id, { at: at('10:59:59'), outcome: 'hard_decline', latencyMs: 3000 });
    await sample(x.id, { at: at('11:30:00'), outcome: 'transport_error', latencyMs: 12_000 });
    // An approval after the attempt (a reconciliation): no attempt, no call.
    await sample(x.id, { at: at('11:31:00'), attempt: false, outcome: 'approved' });
    // Outside [10:00, 12:00).
    await sample(x.id, { at: at('09:59:59'), latencyMs: 1 });
    await sample(x.id, { at: at('12:00:00'), latencyMs: 1 });
    // A config deleted since: still shown, under its name.
    await sample(z.id, { at: at('10:05:00'), latencyMs: 40 });
    expect((await stack.http.delete(`/v1/payment-provider-configs/${z.id}`).set(bearer(m.token))).status).toBe(200);
    // Another account's rows, at the same times.
    const other = await createMerchant(stack);
    const theirs = await createConfig(stack, other, provider.id, { name: 'Theirs' });
    await sampleFor(other)(theirs.id, { at: at('10:00:00'), latencyMs: 5 });
  });

  it('answers totals and an hourly series: rates without hard declines, mean and percentiles from the histogram', async () => {
    const res = await analytics(m, '?from=2030-03-01T10:00:00Z&to=2030-03-01T12:00:00Z&interval=hour');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ from: '2030-03-01T10:00:00.000Z', to: '2030-03-01T12:00:00.000Z', interval: 'hour' });
    expect(res.body.data.providers.map((p: any) => p.name).sort()).toEqual(['Xpress', 'Yonder', 'Zed']);
    const xs = providerOf(res, x.id);
    expect(xs).toMatchObject({ name: 'Xpress', circuit: 'closed' });
    expect(xs.totals).toEqual({
      attempts: 5, approvals: 3, approval_rate: 0.75, hard_declines: 1, soft_declines: 1, transport_errors: 1, unknown: 0,
      // Buckets: ≤10, ≤25, ≤500, ≤5000 and the open one; p50 is the ≤500 bucket's bound, p95 and p99 the largest seen.
      latency_ms: { mean: (5 + 20 + 300 + 3000 + 12_000) / 5, p50: 500, p95: 12_000, p99: 12_000 },
    });
    expect(xs.series).toEqual([
      {
        at: '2030-03-01T10:00:00.000Z', attempts: 4, approvals: 2, approval_rate: 2 / 3, hard_declines: 1, soft_declines: 1, transport_errors: 0,
        unknown: 0, latency_ms: { mean: 3325 / 4, p50: 25, p95: 3000, p99: 3000 },
      },
      {
        at: '2030-03-01T11:00:00.000Z', attempts: 1, approvals: 1, approval_rate: 1, hard_declines: 0, soft_declines: 0, transport_errors: 1,
        unknown: 0, latency_ms: { mean: 12_000, p50: 12_000, p95: 12_000, p99: 12_000 },
      },
    ]);
    expect(providerOf(res, y.id)).toEqual({
      provider_config_id: y.id, name: 'Yonder', circuit: 'closed', totals: ZERO, disputes: { chargebacks: 0, captured_charges: 0, dispute_rate: null },
      series: [{ at: '2030-03-01T10:00:00.000Z', ...ZERO }, { at: '2030-03-01T11:00:00.000Z', ...ZERO }],
    });
    expect(providerOf(res, z.id).totals).toMatchObject({ attempts: 1, approvals: 1, latency_ms: { mean: 40, p50: 40, p95: 40, p99: 40 } });
  });

  it('answers by minute and by day, empty intervals included', async () => {
    const byMinute = await analytics(m, '?from=2030-03-01T10:00:00Z&to=2030-03-01T10:03:00Z&interval=minute');
    expect(byMinute.status, JSON.stringify(byMinute.body)).toBe(200);
    expect(providerOf(byMinute, x.id).series.map((p: any) => [p.at, p.attempts, p.approvals, p.soft_declines, p.latency_ms.p50])).toEqual([
      ['2030-03-01T10:00:00.000Z', 2, 2, 0, 10],
      ['2030-03-01T10:01:00.000Z', 1, 0, 1, 300],
      ['2030-03-01T10:02:00.000Z', 0, 0, 0, null],
    ]);
    // An unaligned range: the intervals it overlaps.
    const byDay = await analytics(m, '?from=2030-02-28T23:00:00Z&to=2030-03-01T13:00:00Z&interval=day');
    expect(providerOf(byDay, x.id).series.map((p: any) => [p.at, p.attempts])).toEqual([
      ['2030-02-28T00:00:00.000Z', 0], ['2030-03-01T00:00:00.000Z', 7],
    ]);
    expect(providerOf(byDay, x.id).totals.attempts).toBe(7);
  });

  it('shows the circuit as routing sees it now', async () => {
    const n = await createMerchant(stack);
    const [open, halfOpen, few] = [
      await createConfig(stack, n, provider.id, { name: 'Failing' }),
      await createConfig(stack, n, provider.id, { name: 'Cooling' }),
      await createConfig(stack, n, provider.id, { name: 'Quiet' }),
    ];
    const sample = sampleFor(n);
    const ago = (ms: number) => new Date(Date.now() - ms);
    for (let i = 0; i < 6; i += 1) {
      await sample(open.id, { outcome: i < 4 ? 'transport_error' : 'approved', at: ago(1000) });
      await sample(halfOpen.id, { outcome: i < 4 ? 'unknown' : 'approved', at: ago(120_000) });
    }
    for (let i = 0; i < 3; i += 1) await sample(few.id, { outcome: 'transport_error', at: ago(1000) });
    const circuits = async () => Object.fromEntries((await analytics(n)).body.data.providers.map((p: any) => [p.name, p.circuit]));
    const put = (body: object) => stack.http.put('/v1/routing-settings').set(bearer(n.secretKey)).send(body);
    // Elimination is off until the account turns it on: every circuit closed.
    expect(await circuits()).toEqual({ Failing: 'closed', Cooling: 'closed', Quiet: 'closed' });
    expect((await put({ elimination: { enabled: true } })).status).toBe(200);
    expect(await circuits()).toEqual({ Failing: 'open', Cooling: 'half_open', Quiet: 'closed' });
    // The account's own elimination settings decide.
    expect((await put({ elimination: { cool_down_seconds: 3600, min_attempts: 3 } })).status).toBe(200);
    expect(await circuits()).toEqual({ Failing: 'open', Cooling: 'open', Quiet: 'open' });
    expect((await put({ elimination: { enabled: false } })).status).toBe(200);
    expect(await circuits()).toEqual({ Failing: 'closed', Cooling: 'closed', Quiet: 'closed' });
  });

  it('validates the range and the interval', async () => {
    const cases: [string, string, string][] = [
      ['?from=2030-03-01T10:00:00Z&to=2030-03-01T10:00:00Z', 'validation_failed', 'query/from'],
      ['?from=2030-03-02T00:00:00Z&to=2030-03-01T00:00:00Z', 'validation_failed', 'query/from'],
      ['?from=2030-01-01T00:00:00Z&to=2030-02-01T00:00:01Z&interval=day', 'validation_failed', 'query/from'],
      [`?from=${new Date(Date.now() - 32 * 86_400_000).toISOString()}`, 'validation_failed', 'query/from'],
      ['?from=2030-03-01T00:00:00Z&to=2030-03-03T00:00:00Z&interval=minute', 'validation_failed', 'query/interval'],
      ['?from=2030-03-01T00:00:00Z&to=2030-03-02T01:00:01Z&interval=minute', 'validation_failed', 'query/interval'],
      ['?interval=week', 'validation_failed', 'query/interval'],
      ['?from=yesterday', 'validation_failed', 'query/from'],
      ['?to=2030-03-01', 'validation_failed', 'query/to'],
      ['?granularity=hour', 'unknown_field', 'query/granularity'],
    ];
    for (const [query, reason, path] of cases) {
      const res = await analytics(m, query);
      expect(res.status, `${query}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.error.details.reason, query).toBe(reason);
      expect(res.body.error.details.fields[0].path, query).toBe(path);
    }
    const points = await analytics(m, '?from=2030-03-01T00:00:00Z&to=2030-03-02T01:00:01Z&interval=minute');
    expect(points.body.error.details.fields[0].message).toBe('gives 1501 points per series, more than 1500: choose a longer interval or a shorter range');
    // At the limits: 31 days, 1,500 points.
    expect((await analytics(m, '?from=2030-01-01T00:00:00Z&to=2030-02-01T00:00:00Z&interval=day')).status).toBe(200);
    const full = await analytics(m, '?from=2030-03-01T00:00:00Z&to=2030-03-02T01:00:00Z&interval=minute');
    expect(full.status).toBe(200);
    expect(providerOf(full, x.id).series).toHaveLength(1500);
    // `to` alone: the 24 hours before it.
    const before = await analytics(m, '?to=2030-03-01T12:00:00Z');
    expect(before.body.data).toMatchObject({ from: '2030-02-28T12:00:00.000Z', to: '2030-03-01T12:00:00.000Z', interval: 'hour' });
    expect(providerOf(before, x.id).series).toHaveLength(24);
  });

  it('is the account\'s own: scoped, routing:read, no publishable keys', async () => {
    const other = await createMerchant(stack);
    const theirs = await analytics(other);
    expect(theirs.status).toBe(200);
    expect(theirs.body.data.providers).toEqual([]);
    const named = await stack.http.get(`/v1/analytics/providers?account_id=${m.account.id}`).set(bearer(other.token));
    expect(named.status).toBe(403);
    expect(named.body.error.details.reason).toBe('account_access_denied');
    const byUser = await stack.http.get(`/v1/analytics/providers?account_id=${m.account.id}&from=2030-03-01T10:00:00Z&to=2030-03-01T12:00:00Z`).set(bearer(m.token));
    expect(providerOf(byUser, x.id).totals.attempts).toBe(5);
    expect((await stack.http.get('/v1/analytics/providers').set(bearer(m.token))).body.error.details.fields[0].path).toBe('query/account_id');
    const publishable = await analytics(m, '', m.publishableKey);
    expect(publishable.status).toBe(403);
    expect(publishable.body.error.details.reason).toBe('publishable_key_not_allowed');
    const { plaintext: reader } = await insertApiKey(stack.db, stack.config.apiKeyPepper, {
      accountId: m.account.id, environment: 'production', type: 'SECRET', name: 'reader', managed: false, permissions: { routing: ['read'] },
    });
    expect((await analytics(m, '', reader)).status).toBe(200);
    const { plaintext: payments } = await insertApiKey(stack.db, stack.config.apiKeyPepper, {
      accountId: m.account.id, environment: 'production', type: 'SECRET', name: 'payments', managed: false, permissions: { payment: ['read'] },
    });
    expect((await analytics(m, '', payments)).body.error.details).toMatchObject({ reason: 'insufficient_permissions', required: 'routing:read' });
  });
});

describe('the pure parts', () => {
  const window = (over: Partial<HealthWindow>): HealthWindow => ({
    provider_config_id: 'ppc_x', attempts: 10, approvals: 0, hard_declines: 0, soft_declines: 0, transport_errors: 0, unknown: 0,
    latency_ms_sum: 0, last_error_at: null, ...over,
  });
  const now = new Date('2030-01-01T12:00:00Z');
  const secondsAgo = (s: number) => new Date(now.getTime() - s * 1000).toISOString();
  const elimination = { ...DEFAULT_ROUTING_SETTINGS.elimination, enabled: true }; // min 5 attempts, 0.5, 30 s

  it.each<[string, HealthWindow | undefined, Partial<typeof elimination>, string]>([
    ['no data', undefined, {}, 'closed'],
    ['no errors', window({ approvals: 10 }), {}, 'closed'],
    ['errors below the threshold', window({ transport_errors: 4, last_error_at: secondsAgo(1) }), {}, 'closed'],
    ['errors at the threshold, the last just now', window({ transport_errors: 3, unknown: 2, last_error_at: secondsAgo(1) }), {}, 'open'],
    ['errors at the threshold, the last just inside the cool-down', window({ transport_errors: 5, last_error_at: secondsAgo(29) }), {}, 'open'],
    ['errors at the threshold, the last before the cool-down', window({ unknown: 5, last_error_at: secondsAgo(31) }), {}, 'half_open'],
    ['too few attempts', window({ attempts: 4, transport_errors: 4, last_error_at: secondsAgo(1) }), {}, 'closed'],
    ['no attempts', window({ attempts: 0, transport_errors: 2, last_error_at: secondsAgo(1) }), { min_attempts: 1 }, 'closed'],
    ['elimination disabled', window({ transport_errors: 10, last_error_at: secondsAgo(1) }), { enabled: false }, 'closed'],
  ])('%s: %s', (_name, w, settings, expected) => {
    expect(circuitState(w, { ...elimination, ...settings }, now.getTime())).toBe(expected);
  });

  const histogram = (counts: Record<number, number>) => Array.from({ length: LATENCY_BUCKETS_MS.length + 1 }, (_, i) => counts[i] ?? 0);
  it.each<[string, number[], number, number, number | null]>([
    ['no calls', histogram({}), 0, 50, null],
    ['one call: its bucket\'s bound, at most the largest seen', histogram({ 3: 1 }), 80, 50, 80],
    ['the bucket where the cumulative count reaches the share', histogram({ 0: 50, 4: 50 }), 240, 50, 10],
    ['just past it', histogram({ 0: 49, 4: 51 }), 240, 50, 240],
    ['p95 of 100 calls', histogram({ 1: 94, 6: 5, 7: 1 }), 2000, 95, 1000],
    ['p99 of 100 calls', histogram({ 1: 94, 6: 5, 7: 1 }), 2000, 99, 1000],
    ['the open-ended bucket: the largest seen', histogram({ 10: 2 }), 60_000, 50, 60_000],
  ])('percentile: %s', (_name, buckets, max, percent, expected) => {
    expect(latencyPercentile(buckets, max, percent)).toBe(expected);
  });

  it('leaves hard declines out of the approval rate, and caps a rate an interval\'s late approvals push over 1', () => {
    const sums = { attempts: 4, approvals: 3, hard_declines: 2, soft_declines: 0, transport_errors: 0, unknown: 0, latency_ms_sum: 0, latency_ms_max: 0, latency_buckets: histogram({}) };
    expect(analyticsPoint(sums).approval_rate).toBe(1);
    expect(analyticsPoint({ ...sums, approvals: 1 }).approval_rate).toBe(0.5);
    expect(analyticsPoint({ ...sums, attempts: 2, approvals: 0 }).approval_rate).toBeNull();
  });

  it.each<[string, string, 'minute' | 'hour' | 'day', number, string]>([
    ['2030-01-01T00:00:00Z', '2030-01-02T00:00:00Z', 'hour', 24, '2030-01-01T00:00:00.000Z'],
    ['2030-01-01T00:30:00Z', '2030-01-02T00:30:00Z', 'hour', 25, '2030-01-01T00:00:00.000Z'],
    ['2030-01-01T00:00:00Z', '2030-01-01T00:00:00.001Z', 'day', 1, '2030-01-01T00:00:00.000Z'],
    ['2030-01-01T23:59:00Z', '2030-01-02T00:01:00Z', 'minute', 2, '2030-01-01T23:59:00.000Z'],
  ])('intervals of [%s, %s) by %s: %i from %s', (from, to, interval, count, first) => {
    const starts = intervalStarts(new Date(from), new Date(to), interval);
    expect(starts).toHaveLength(count);
    expect(pointCount(new Date(from), new Date(to), interval)).toBe(count);
    expect(starts[0].toISOString()).toBe(first);
  });
});
