import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { startTracing, type Tracing } from '../../telemetry/tracing';
import { bearer, createMerchant, Merchant, startStack, TestStack } from '../support/stack';

/**
 * Inbound W3C trace context (docs/observability.md#traces): a caller's `traceparent` (and its
 * `baggage`) is honoured only once the request's credential has been verified. On the routes anyone
 * may call, an outsider could otherwise attach spans to our traces or carry baggage into them.
 */
const exporter = new InMemorySpanExporter();
let tracing: Tracing;
let stack: TestStack;
let merchant: Merchant;

beforeAll(async () => {
  tracing = startTracing('switchboard-test', { exporter })!;
  stack = await startStack();
  merchant = await createMerchant(stack);
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await tracing?.shutdown();
});

let sequence = 0;
/** A caller's trace context: a fresh trace id and parent span id each time. */
function callerContext() {
  sequence += 1;
  const traceId = `${'c'.repeat(24)}${sequence.toString(16).padStart(8, '0')}`;
  const spanId = `${'d'.repeat(8)}${sequence.toString(16).padStart(8, '0')}`;
  return { traceId, spanId, headers: { traceparent: `00-${traceId}-${spanId}-01`, baggage: 'tenant=evil,user_id=usr_admin' } };
}

/** The server span of the request answered with `requestId`. */
function serverSpan(requestId: string): ReadableSpan {
  const span = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.SERVER && s.attributes['switchboard.request_id'] === requestId);
  expect(span, `the server span of ${requestId}`).toBeDefined();
  return span!;
}

describe('inbound trace context', () => {
  const unauthenticated: [string, (ctx: ReturnType<typeof callerContext>, id: string) => Promise<{ status: number }>][] = [
    ['GET /healthz', (c, id) => stack.http.get('/healthz').set(c.headers).set('X-Request-Id', id)],
    ['GET /metrics', (c, id) => stack.http.get('/metrics').set(c.headers).set('X-Request-Id', id)],
    ['GET /v1/openapi.json', (c, id) => stack.http.get('/v1/openapi.json').set(c.headers).set('X-Request-Id', id)],
    ['a provider webhook', (c, id) => stack.http.post('/v1/provider-webhooks/pcfg_01J00000000000000000000000')
      .set(c.headers).set('X-Request-Id', id).set('Content-Type', 'application/json').send('{"type":"payment_intent.succeeded"}')],
    ['the 3-D Secure return', (c, id) => stack.http.get('/v1/payments/pay_01J00000000000000000000000/authentication-return?charge=ch_01J00000000000000000000000')
      .set(c.headers).set('X-Request-Id', id)],
    ['/v1 with an invalid API key', (c, id) => stack.http.get('/v1/payments').set(c.headers).set('X-Request-Id', id).set(bearer('sk_test_not_a_real_key_0000000000000000'))],
    ['/v1 without credentials', (c, id) => stack.http.get('/v1/payments').set(c.headers).set('X-Request-Id', id)],
  ];

  it.each(unauthenticated)('is ignored on %s: the server span is a root of its own trace', async (name, send) => {
    const caller = callerContext();
    const requestId = `req_tc_${sequence}`;
    const res = await send(caller, requestId);
    expect(res.status, name).toBeLessThan(500);
    const span = serverSpan(requestId);
    expect(span.parentSpanId).toBeUndefined();
    expect(span.spanContext().traceId).not.toBe(caller.traceId);
    expect(exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === caller.traceId)).toEqual([]);
  });

  it.each([
    ['an API key', () => merchant.secretKey],
    ['a user token', () => merchant.token],
  ])('is honoured on /v1 with %s: the server span is the caller\'s child, in the caller\'s trace', async (_name, credential) => {
    const caller = callerContext();
    const requestId = `req_tc_${sequence}`;
    const res = await stack.http.get('/v1/payments').set(caller.headers).set('X-Request-Id', requestId)
      .set(bearer(credential())).query({ account_id: merchant.account.id });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const span = serverSpan(requestId);
    expect(span.name).toBe('GET /v1/payments');
    expect(span.spanContext().traceId).toBe(caller.traceId);
    expect(span.parentSpanId).toBe(caller.spanId);
    // The span covers the whole answer, authentication included: it starts before the response ends.
    expect(span.duration[0] * 1e9 + span.duration[1]).toBeGreaterThan(0);
  });

  it('starts a trace of its own on /v1 when the authenticated caller sends none', async () => {
    const requestId = 'req_tc_no_context';
    const res = await stack.http.get('/v1/payments').set('X-Request-Id', requestId).set(bearer(merchant.secretKey));
    expect(res.status).toBe(200);
    expect(serverSpan(requestId).parentSpanId).toBeUndefined();
  });
});
