import supertest from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../api/app';
import { bearer, createMerchant, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, createPayment, pay, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually } from '../support/worker-process';
import { emit, enabledEndpoint, Receiver, waitForDelivery } from '../webhooks/support';
import { startWorkerMetrics, WorkerMetricsServer } from '../../worker/metrics';

let sim: TestSimulator;
let stack: TestStack;
let limited: TestStack;
let worker: RunningWorker;
let workerMetrics: WorkerMetricsServer;
let f: PaymentsFixture;
let receiver: Receiver;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '1000' });
  limited = await startStack({ RATE_LIMIT_RPS: '1', RATE_LIMIT_BURST: '0' });
  worker = await startWorker(stack);
  workerMetrics = await startWorkerMetrics(0, stack.db, '127.0.0.1');
  f = await paymentsFixture(stack);
  receiver = await Receiver.start();
});
afterAll(async () => {
  await workerMetrics?.close();
  await worker?.stop();
  await limited?.close();
  await stack?.close();
  await sim?.close();
  await receiver?.close();
});

type Samples = Map<string, number>;

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = `[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*"`;
const SAMPLE = new RegExp(`^(${NAME})(\\{(?:${LABEL}(?:,${LABEL})*)?\\})? (-?[0-9.e+-]+|[Nn]a[Nn]|[+-]Inf)$`);
const COMMENT = new RegExp(`^# (?:HELP ${NAME} .*|TYPE ${NAME} (?:counter|gauge|histogram|summary|untyped))$`);

/**
 * The text exposition format, strictly: every line a HELP, a TYPE or a sample; each sample's family
 * declared by a TYPE before it. Returns `name{labels}` → value (labels as written).
 */
function parseExposition(text: string): Samples {
  const samples: Samples = new Map();
  const typed = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      expect(line, 'a HELP or TYPE line').toMatch(COMMENT);
      if (line.startsWith('# TYPE ')) typed.add(line.split(' ')[2]);
      continue;
    }
    const m = SAMPLE.exec(line);
    expect(m, `a sample line: ${line}`).not.toBeNull();
    const family = m![1].replace(/_(?:bucket|sum|count)$/, '');
    expect(typed.has(m![1]) || typed.has(family), `a TYPE for ${m![1]}`).toBe(true);
    samples.set(`${m![1]}${m![2] ?? ''}`, Number(m![3]));
  }
  return samples;
}

async function scrape(url: string): Promise<{ samples: Samples; text: string }> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  return { samples: parseExposition(text), text };
}

const apiMetrics = (s: TestStack = stack) => scrape(`${s.baseUrl}/metrics`);
const workerScrape = () => scrape(`http://127.0.0.1:${workerMetrics.port}/metrics`);

/** The sum of a family's samples whose labels include every given one. */
function total(samples: Samples, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const [key, value] of samples) {
    if (!key.startsWith(`${name}{`) && key !== name) continue;
    if (Object.entries(labels).every(([k, v]) => key.includes(`${k}="${v}"`))) sum += value;
  }
  return sum;
}

/** Every label value must be bounded: none may look like one of our ids or carry a secret. */
function expectNoIds(text: string): void {
  const values = [...text.matchAll(/="((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]);
  expect(values.length).toBeGreaterThan(0);
  for (const value of values) {
    expect(value).not.toMatch(/^[a-z]{2,4}_[0-9A-Z]{10,}/);
    expect(value).not.toMatch(/sk_|pk_|sim_|Bearer|4242/);
  }
}

describe('the API /metrics', () => {
  it('is Prometheus text with the process metrics, without credentials, outside /v1', async () => {
    const { samples, text } = await apiMetrics();
    expect(total(samples, 'process_cpu_user_seconds_total')).toBeGreaterThanOrEqual(0);
    expect(text).toContain('# TYPE http_request_duration_seconds histogram');
    expect(text).toContain('# TYPE idempotency_replays_total counter');
    expect(text).toContain('# TYPE rate_limit_rejections_total counter');
  });

  it('with METRICS_TOKEN answers only its bearer (the API\'s port is the public one): 401 in the envelope otherwise', async () => {
    const guarded = supertest(createApp({ ...stack.deps, config: { ...stack.config, metricsToken: 'scrape-t0ken' } }).callback());
    const missing = await guarded.get('/metrics');
    expect([missing.status, missing.body.error?.details.reason]).toEqual([401, 'missing_authorization']);
    for (const wrong of ['Bearer scrape-t0ke', 'Bearer scrape-t0kenX', 'Basic c2NyYXBlLXQwa2Vu', 'scrape-t0ken']) {
      const res = await guarded.get('/metrics').set('Authorization', wrong);
      expect([res.status, res.body.error?.details.reason], wrong).toEqual([401, 'invalid_token']);
      expect(res.text).not.toContain('http_requests_total');
    }
    const scraped = await guarded.get('/metrics').set('Authorization', 'Bearer scrape-t0ken');
    expect(scraped.status).toBe(200);
    expect(scraped.text).toContain('# TYPE http_requests_total counter');
  });

  it('counts requests by route template, method and status; unknown paths as unmatched', async () => {
    const before = (await apiMetrics()).samples;
    const created = await createPayment(stack, f.merchant);
    expect(created.status).toBe(201);
    const got = await stack.http.get(`/v1/payments/${created.body.data.id}`).set(bearer(f.merchant.secretKey));
    expect(got.status).toBe(200);
    expect((await stack.http.get('/v1/no-such-thing').set(bearer(f.merchant.secretKey))).status).toBe(404);
    const { samples: after, text } = await apiMetrics();

    const delta = (labels: Record<string, string>) => total(after, 'http_requests_total', labels) - total(before, 'http_requests_total', labels);
    expect(delta({ route: '/v1/payments', method: 'POST', status: '201' })).toBe(1);
    expect(delta({ route: '/v1/payments/:id', method: 'GET', status: '200' })).toBe(1);
    expect(delta({ route: 'unmatched', method: 'GET', status: '404' })).toBe(1);
    const histogram = (s: Samples) => total(s, 'http_request_duration_seconds_count', { route: '/v1/payments/:id', method: 'GET', status: '200' });
    expect(histogram(after) - histogram(before)).toBe(1);
    expectNoIds(text);
  });

  it('counts a replayed idempotent request once', async () => {
    const before = total((await apiMetrics()).samples, 'idempotency_replays_total');
    const key = { 'Idempotency-Key': `metrics-${Date.now()}` };
    const first = await createPayment(stack, f.merchant, {}, key);
    const again = await createPayment(stack, f.merchant, {}, key);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(total((await apiMetrics()).samples, 'idempotency_replays_total') - before).toBe(1);
  });

  it('counts each request refused by the rate limit', async () => {
    const m = await createMerchant(limited);
    const before = (await apiMetrics(limited)).samples;
    const answers = await Promise.all([1, 2, 3].map(() => limited.http.get('/v1/payments').set(bearer(m.secretKey))));
    const refused = answers.filter((r) => r.status === 429).length;
    expect(refused).toBeGreaterThanOrEqual(1);
    const { samples: after, text } = await apiMetrics(limited);
    expectNoIds(text);
    expect(total(after, 'rate_limit_rejections_total') - total(before, 'rate_limit_rejections_total')).toBe(refused);
    expect(total(after, 'http_requests_total', { route: '/v1/payments', status: '429' })
      - total(before, 'http_requests_total', { route: '/v1/payments', status: '429' })).toBe(refused);
  });
});

describe('the worker /metrics', () => {
  it('counts a payment, its provider calls by adapter identifier and outcome class, and times them', async () => {
    const before = (await workerScrape()).samples;
    const res = await pay(stack, f.merchant, CARDS.visa);
    expect(res.body.data.status).toBe('SUCCEEDED');
    const { samples: after, text } = await workerScrape();
    const delta = (name: string, labels: Record<string, string>) => total(after, name, labels) - total(before, name, labels);
    expect(delta('payment_transitions_total', { status: 'SUCCEEDED' })).toBe(1);
    expect(delta('provider_calls_total', { provider: 'sandbox', operation: 'authorize', outcome: 'approved' })).toBe(1);
    expect(delta('provider_call_duration_seconds_count', { provider: 'sandbox', operation: 'authorize' })).toBe(1);
    expectNoIds(text);
  });

  it('counts a declined payment: FAILED once, one declined call per charge', async () => {
    const before = (await workerScrape()).samples;
    const res = await pay(stack, f.merchant, CARDS.declined);
    expect(res.body.data.status).toBe('FAILED');
    const charges = (await stack.db('live.charges').where({ payment_id: res.body.data.id })).length;
    expect(charges).toBeGreaterThanOrEqual(1);
    const after = (await workerScrape()).samples;
    const delta = (name: string, labels: Record<string, string>) => total(after, name, labels) - total(before, name, labels);
    expect(delta('payment_transitions_total', { status: 'FAILED' })).toBe(1);
    expect(delta('provider_calls_total', { operation: 'authorize', outcome: 'hard' })
      + delta('provider_calls_total', { operation: 'authorize', outcome: 'soft' })).toBe(charges);
    expect(delta('provider_calls_total', { operation: 'authorize', outcome: 'approved' })).toBe(0);
  });

  it('counts a refund and its provider call', async () => {
    const paid = await pay(stack, f.merchant, CARDS.visa);
    const before = (await workerScrape()).samples;
    const res = await stack.http.post('/v1/refunds').set(bearer(f.merchant.secretKey)).send({ payment_id: paid.body.data.id, amount: 300 });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const after = await eventually(async () => {
      const s = (await workerScrape()).samples;
      return total(s, 'refunds_total') > total(before, 'refunds_total') ? s : undefined;
    });
    const delta = (name: string, labels: Record<string, string>) => total(after, name, labels) - total(before, name, labels);
    expect(delta('refunds_total', { outcome: 'succeeded' })).toBe(1);
    expect(delta('provider_calls_total', { provider: 'sandbox', operation: 'refund', outcome: 'approved' })).toBe(1);
  });

  it('counts a webhook delivery attempt and reads the delivery gauges from the database', async () => {
    const m = await createMerchant(stack);
    await enabledEndpoint(stack, m, receiver);
    const before = (await workerScrape()).samples;
    const { deliveryIds } = await emit(stack, m, [{ event: 'payment_intent.succeeded', data: { amount: 1000, currency: 'USD' } }]);
    await waitForDelivery(stack, m, deliveryIds[0], 'succeeded');
    const { samples: after, text } = await workerScrape();
    expect(total(after, 'webhook_delivery_attempts_total', { outcome: 'succeeded' })
      - total(before, 'webhook_delivery_attempts_total', { outcome: 'succeeded' })).toBe(1);

    const counted = async (status: string[]) => {
      let n = 0;
      for (const schema of ['live', 'sandbox']) n += Number((await stack.db(`${schema}.webhook_deliveries`).whereIn('status', status).count('* as n'))[0].n);
      return n;
    };
    expect(after.get('webhook_deliveries_dead_lettered')).toBe(await counted(['dead_lettered']));
    expect(after.has('webhook_deliveries_pending')).toBe(true);
    expect(await counted(['pending', 'failed'])).toBeGreaterThanOrEqual(0);
    expectNoIds(text);
  });
});
