import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { paymentQueries, paymentWorkflowId } from '../../contracts/payments';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NativeConnection, Worker } from '@temporalio/worker';
import { startTracing, tracingConfigured, type Tracing } from '../../telemetry/tracing';
import { createWorkers, type WorkerProcess } from '../../worker/worker';
import { bearer, startStack, TestStack } from '../support/stack';
import { card, CARDS, confirm, createPayment, getPayment, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually } from '../support/worker-process';
import { enabledEndpoint, Receiver } from '../webhooks/support';

/**
 * Traces (docs/observability.md#traces): this process is the API and the worker at once, tracing into
 * an in-memory exporter. Untraced histories (recorded before tracing existed, started without a trace
 * context) replaying unchanged through the same bundle is test/payments/replay.test.ts's job.
 */
const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let sim: TestSimulator;
let stack: TestStack;
let connection: NativeConnection;
let worker: WorkerProcess | undefined;
let running: Promise<void> | undefined;
let f: PaymentsFixture;
let receiver: Receiver;
let tracedHistory: { workflowId: string; history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>> } | undefined;

beforeAll(async () => {
  tracing = startTracing('switchboard-test', { exporter })!;
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '1000' });
  connection = await NativeConnection.connect({ address: stack.config.temporal.address! });
  await startWorkers();
  f = await paymentsFixture(stack);
  receiver = await Receiver.start();
}, 180_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await connection?.close();
  await stack?.close();
  await sim?.close();
  await receiver?.close();
  await tracing?.shutdown();
});

async function startWorkers() {
  worker = await createWorkers({ db: stack.db, config: stack.config, connection, namespace: stack.config.temporal.namespace, workflowBundlePath: inject('workflowBundlePath') });
  running = worker.run();
}

const spansOf = (traceId: string) => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);

/** The span's ancestors in `spans`, nearest first. */
function ancestors(span: ReadableSpan, spans: ReadableSpan[]): ReadableSpan[] {
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  const chain: ReadableSpan[] = [];
  for (let parent = span.parentSpanId && byId.get(span.parentSpanId); parent; parent = parent.parentSpanId && byId.get(parent.parentSpanId)) chain.push(parent);
  return chain;
}

/** Pays with create-and-confirm in one request under `requestId`; returns the request's root span once the payment's spans are in. */
async function tracedPayment(requestId: string, extra: Record<string, unknown> = {}) {
  const res = await stack.http.post('/v1/payments').set(bearer(f.merchant.secretKey)).set('X-Request-Id', requestId)
    .send({ amount: 1250, currency: 'USD', confirm: true, payment_method: card(CARDS.visa), ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.headers['x-request-id']).toBe(requestId);
  const root = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.SERVER && s.attributes['switchboard.request_id'] === requestId);
  expect(root, 'the request span').toBeDefined();
  return { payment: res.body.data, root: root!, traceId: root!.spanContext().traceId };
}

describe('traces', () => {
  it('follows one payment from the API request through the workflow and its activity to the processor call, in one trace', async () => {
    const { payment, root, traceId } = await tracedPayment('req_trace_one_payment');
    expect(payment.status).toBe('SUCCEEDED');
    expect(root.name).toBe('POST /v1/payments');
    expect(root.parentSpanId).toBeUndefined();
    expect(root.attributes).toMatchObject({ 'http.route': '/v1/payments', 'http.request.method': 'POST', 'http.response.status_code': 201 });

    // Workflow spans leave the sandbox through a sink after their activation: wait for the processor call's chain.
    const simPort = Number(new URL(sim.url).port);
    const processorCall = await eventually(async () => {
      const call = spansOf(traceId).find((s) => s.kind === SpanKind.CLIENT && s.attributes['server.port'] === simPort);
      return call && ancestors(call, spansOf(traceId)).at(-1)?.name === 'POST /v1/payments' && call;
    });
    const spans = spansOf(traceId);
    const names = spans.map((s) => s.name);
    expect(names).toEqual(expect.arrayContaining([
      'UpdateWithStartWorkflow:create', 'RunWorkflow:paymentWorkflow', 'HandleUpdate:create', 'StartActivity:createPaymentPlanAndAuthorize', 'RunActivity:createPaymentPlanAndAuthorize', 'provider authorize',
    ]));
    // The processor's HTTP call hangs from the request span through the provider call, the activity and the workflow.
    const chain = ancestors(processorCall, spans).map((s) => s.name);
    expect(chain[0]).toBe('provider authorize');
    expect(chain).toEqual(expect.arrayContaining(['RunActivity:createPaymentPlanAndAuthorize', 'StartActivity:createPaymentPlanAndAuthorize', 'POST /v1/payments']));
    expect(chain.at(-1)).toBe('POST /v1/payments');
    expect(spans.find((s) => s.name === 'provider authorize')!.attributes).toMatchObject({ 'switchboard.provider': 'sandbox', 'switchboard.provider.outcome': 'approved' });
    // Every span of the payment is in this one trace: none started a trace of its own.
    const paymentSpans = exporter.getFinishedSpans().filter((s) => s.name.endsWith(':paymentWorkflow') || s.name.startsWith('provider '));
    // (One provider call: the sandbox captures with the authorization.)
    expect([...new Set(paymentSpans.filter((s) => s.spanContext().traceId === traceId).map((s) => s.name))].sort()).toEqual(['RunWorkflow:paymentWorkflow', 'provider authorize']);

    // The payment's events carry the trace's id, so an event leads to its trace.
    const events = (await getPayment(stack, f.merchant, payment.id, 'include_events=true')).events as { trace_id: string | null }[];
    expect(events.length).toBeGreaterThan(0);
    for (const event of events) expect(event.trace_id).toBe(traceId);
    tracedHistory = { workflowId: paymentWorkflowId(payment.id), history: await (await stack.deps.temporal()).workflow.getHandle(paymentWorkflowId(payment.id)).fetchHistory() };
  });

  it('carries the trace into the webhook delivery the payment caused (the dispatcher\'s fan-out, from the request)', async () => {
    await enabledEndpoint(stack, f.merchant, receiver, { url: receiver.url('/hooks/s3cr3t-path-token?token=s3cr3t-query-token'), events: ['payment_intent.succeeded'] });
    const { traceId } = await tracedPayment('req_trace_webhook');
    const receiverPort = Number(new URL(receiver.url()).port);
    // Workflow spans arrive after their activation: wait until the delivery's chain reaches the request.
    const { delivery, chain } = await eventually(async () => {
      const call = spansOf(traceId).find((s) => s.kind === SpanKind.CLIENT && s.attributes['server.port'] === receiverPort);
      const names = call ? ancestors(call, spansOf(traceId)).map((s) => s.name) : [];
      return names.at(-1) === 'POST /v1/payments' && { delivery: call!, chain: names };
    }, 30_000);
    // The dispatcher's fan-out makes the first attempt: the POST hangs from its span, which continues the request's trace.
    expect(chain).toEqual(['fanOutEvents', 'POST /v1/payments']);
    expect(chain).not.toContain('RunWorkflow:webhookDeliveryWorkflow');
    expect(chain.at(-1)).toBe('POST /v1/payments');
    // The merchant's URL is recorded as its origin only: a token in its path or query stays out.
    expect(delivery.attributes['url.full']).toBe(new URL(receiver.url()).origin);
    expect(receiver.events().some((r) => String(r.headers.traceparent ?? '').includes(traceId))).toBe(true);
  });

  it('records no secret and no card data in any span', async () => {
    await tracedPayment('req_trace_secrets', { metadata: { order: 'o-1' } });
    const everything = JSON.stringify(exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, resource: s.resource.attributes })));
    for (const secret of [f.merchant.secretKey, f.merchant.token, CARDS.visa, 'sim_primary_key_0001', 's3cr3t-path-token', 's3cr3t-query-token', ...stack.config.vaultKeys.split(',').map((e) => e.slice(e.indexOf(':') + 1))]) {
      expect(everything).not.toContain(secret);
    }
    expect(everything).not.toMatch(/Bearer /);
  });

  it('records no card data and no client_secret in any span of the hosted page or the card fields', async () => {
    const cvc = '987';
    const form = { number: '4242 4242 4242 4242', expiry: '12 / 34', cvc, name: 'Ada Lovelace' };
    const opened = await stack.http.post('/v1/checkout-sessions').set(bearer(f.merchant.secretKey))
      .send({ amount: 2000, currency: 'USD', success_url: 'https://shop.example.test/ok', cancel_url: 'https://shop.example.test/back' });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    const session = opened.body.data;
    // The hosted page's form, as a browser without JavaScript posts it.
    const posted = await stack.http.post(`/checkout/${session.id}`).type('form').send(form);
    expect(posted.status, posted.text).toBe(303);
    // The card fields' confirm: a publishable key and the payment's client_secret.
    const created = await createPayment(stack, f.merchant, { amount: 1500 });
    const secret = created.body.data.client_secret as string;
    const confirmed = await stack.http.post(`/v1/payments/${created.body.data.id}/confirm`).set(bearer(f.merchant.publishableKey))
      .send({ client_secret: secret, payment_method: { type: 'CARD', card: { number: CARDS.visa, exp_month: 12, exp_year: 2034, cvc } } });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    // The page's request is traced like any other (so this scan reads what it recorded).
    await eventually(async () => expect(exporter.getFinishedSpans().map((s) => s.name)).toContain('POST /checkout/:id'));
    const everything = JSON.stringify(exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, events: s.events })));
    for (const value of [CARDS.visa, form.number, `cvc=${cvc}`, `"${cvc}"`, secret, session.client_secret, f.merchant.publishableKey]) {
      expect(everything).not.toContain(value);
    }
  });

  it('mints the same charge and plan ids when a new worker replays a traced payment: it captures the charge it authorized', async () => {
    // Created, then confirmed: the confirm update's first validation is traced, its replay is not.
    const created = await createPayment(stack, f.merchant, { amount: 1250, auto_capture: false });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const confirmed = await confirm(stack, f.merchant, created.body.data.id, { payment_method: card(CARDS.visa) });
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
    const payment = confirmed.body.data;
    expect(payment.status).toBe('AUTHORIZED');
    const handle = (await stack.deps.temporal()).workflow.getHandle(paymentWorkflowId(payment.id));
    const first = await handle.query(paymentQueries.state);

    // A new worker has no cached workflow: the query replays the history, tracing interceptors and all,
    // without the update's first validation (whose span drew from Math.random) or anything else live.
    worker!.shutdown();
    await running;
    await startWorkers();
    const replayed = await handle.query(paymentQueries.state);
    const row = await getPayment(stack, f.merchant, payment.id);
    expect(replayed.attempts.map((a) => a.chargeId)).toEqual(row.charges.map((c: { id: string }) => c.id));
    expect(replayed.attempts.map((a) => a.chargeId)).toEqual(first.attempts.map((a) => a.chargeId));
    expect(replayed.routingPlanId).toBe(row.routing_plans[0].id);

    const captured = await stack.http.post(`/v1/payments/${payment.id}/capture`).set(bearer(f.merchant.secretKey)).send({});
    expect(captured.status, JSON.stringify(captured.body)).toBe(200);
    expect(captured.body.data.status).toBe('SUCCEEDED');
    expect(captured.body.data.charges).toEqual([expect.objectContaining({ id: row.charges[0].id, status: 'CAPTURED', captured_amount: 1250 })]);
  });

  it('replays a traced payment like any other (the workflow bundle always holds the tracing interceptors)', async () => {
    expect(tracedHistory, 'the first test recorded a traced payment').toBeDefined();
    const started = tracedHistory!.history.events![0].workflowExecutionStartedEventAttributes!;
    expect(Object.keys(started.header?.fields ?? {})).toContain('_tracer-data');
    const result = await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, tracedHistory!.history, tracedHistory!.workflowId)
      .then(() => 'ok', (err: Error) => err.message);
    expect(result).toBe('ok');
  });
});

describe('tracing switch', () => {
  it('is on only with an OTLP endpoint, and off when the SDK is disabled', () => {
    expect(tracingConfigured({})).toBe(false);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
  });
});
