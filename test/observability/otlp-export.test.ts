import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, startStack, TestStack } from '../support/stack';
import { card, CARDS, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventually, spawnWorker, WorkerProcess } from '../support/worker-process';
import { ChildProcessHandle, spawnApi } from '../production/support';

/**
 * Tracing as deployed: the API and the worker as their own processes with OTEL_EXPORTER_OTLP_ENDPOINT
 * set, exporting over OTLP/HTTP (JSON) to a collector standing in for the OpenTelemetry Collector.
 */
interface ExportedSpan { service: string; traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes: Record<string, unknown> }

let sim: TestSimulator;
let stack: TestStack;
let api: ChildProcessHandle;
let worker: WorkerProcess;
let f: PaymentsFixture;
let collector: Server;
const exported: ExportedSpan[] = [];
const paths = new Set<string>();

/** OTLP/JSON attribute values are typed wrappers ({ stringValue }, { intValue }, …). */
const attributesOf = (list: { key: string; value: Record<string, unknown> }[] = []) => Object.fromEntries(list.map(({ key, value }) => [key, Object.values(value)[0]]));

beforeAll(async () => {
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      paths.add(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      for (const rs of body.resourceSpans ?? []) {
        const service = String(attributesOf(rs.resource?.attributes)['service.name']);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) exported.push({ service, traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId || undefined, name: s.name, kind: s.kind, attributes: attributesOf(s.attributes) });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`, OTEL_BSP_SCHEDULE_DELAY: '100' };
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '1000' });
  [api, worker] = await Promise.all([spawnApi(stack, otel), spawnWorker(stack, otel)]);
  f = await paymentsFixture(stack);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  api?.proc.kill('SIGTERM');
  await api?.exited;
  await stack?.close();
  await sim?.close();
  collector?.closeAllConnections();
  collector?.close();
});

describe('OTLP export from the API and worker processes', () => {
  it("joins the caller's trace and exports the request, the workflow and the processor call from both processes as one trace", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const res = await fetch(`${api.url}/v1/payments`, {
      method: 'POST',
      headers: { ...bearer(f.merchant.secretKey), 'content-type': 'application/json', 'X-Request-Id': 'req_otlp_export', traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
      body: JSON.stringify({ amount: 990, currency: 'USD', confirm: true, payment_method: card(CARDS.visa) }),
    });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { data: { status: string } }).data.status).toBe('SUCCEEDED');

    const simPort = Number(new URL(sim.url).port);
    // The two processes export in their own batches: wait until the processor call's chain reaches the request.
    const chainOf = (spans: ExportedSpan[], span: ExportedSpan) => {
      const byId = new Map(spans.map((s) => [s.spanId, s]));
      const chain: string[] = [];
      for (let p = span.parentSpanId && byId.get(span.parentSpanId); p; p = p.parentSpanId && byId.get(p.parentSpanId)) chain.push(`${p.service} ${p.name}`);
      return chain;
    };
    const { spans, chain } = await eventually(async () => {
      const inTrace = exported.filter((s) => s.traceId === traceId);
      const call = inTrace.find((s) => s.service === 'switchboard-worker' && s.attributes['server.port'] === simPort);
      const names = call ? chainOf(inTrace, call) : [];
      return names.at(-1) === 'switchboard-api POST /v1/payments' && { spans: inTrace, chain: names };
    }, 30_000);
    expect([...paths]).toEqual([expect.stringMatching(/^POST \/v1\/traces application\/json/)]);
    const root = spans.find((s) => s.service === 'switchboard-api' && s.name === 'POST /v1/payments')!;
    expect(root.parentSpanId).toBe('00f067aa0ba902b7');
    expect(root.attributes['switchboard.request_id']).toBe('req_otlp_export');
    expect(chain[0]).toBe('switchboard-worker provider authorize');
    expect(chain).toEqual(expect.arrayContaining(['switchboard-worker RunActivity:createPaymentPlanAndAuthorize', 'switchboard-worker HandleUpdate:create', 'switchboard-api UpdateWithStartWorkflow:create']));
    expect(chain.at(-1)).toBe('switchboard-api POST /v1/payments');
    expect(JSON.stringify(exported)).not.toContain(f.merchant.secretKey);
    expect(JSON.stringify(exported)).not.toContain(CARDS.visa);
  });
});
