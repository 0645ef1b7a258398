import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect } from 'vitest';
import { runOps } from '../../scripts/ops';
import { bearer, Merchant, RunningWorker, startStack, startWorker, suiteEnv, TestStack } from '../support/stack';
import { startSimulator, TestSimulator } from '../support/payments';
import { join } from 'node:path';

/** Polls until `check` answers something other than undefined. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 20_000, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface Receiver {
  url: string;
  /** What non-handshake deliveries get back. */
  answer: { status: number; body: string };
  received: { type: string; id: string }[];
  close(): Promise<void>;
}

/** A merchant's webhook receiver on loopback: passes the handshake, answers deliveries as told. */
export async function startReceiver(answer = { status: 400, body: '{"error":"unknown_event","message":"This receiver does not handle this event type yet"}' }): Promise<Receiver> {
  const receiver = { answer, received: [] as { type: string; id: string }[] } as Receiver;
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => { raw += c; });
    req.on('end', () => {
      const event = JSON.parse(raw || '{}');
      if (event.type === 'webhook_endpoint.verification') {
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ challenge: event.data?.challenge }));
        return;
      }
      receiver.received.push({ type: event.type, id: event.id });
      res.writeHead(receiver.answer.status, { 'Content-Type': 'application/json' }).end(receiver.answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  receiver.close = () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); });
  return receiver;
}

/** A webhook endpoint for `payment_intent.created`, enabled (the handshake passed). */
export async function enabledEndpoint(stack: TestStack, m: Merchant, url: string) {
  const res = await stack.http.post('/v1/webhook-endpoints').set(bearer(m.secretKey)).send({ url, events: ['payment_intent.created'], description: 'Order service' });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  await eventually(async () => {
    const got = await stack.http.get(`/v1/webhook-endpoints/${res.body.data.id}`).set(bearer(m.secretKey));
    return got.body.data.status === 'enabled' ? true : undefined;
  });
  return res.body.data as { id: string; url: string };
}

/** Creates a payment (its `payment_intent.created` event goes to the endpoint) and waits for the delivery to settle. */
export async function deliveryFor(stack: TestStack, m: Merchant, endpointId: string, status: 'dead_lettered' | 'succeeded') {
  const created = await stack.http.post('/v1/payments').set(bearer(m.secretKey)).send({ amount: 4200, currency: 'USD' });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const event = await eventually(async () => {
    const ev = await stack.http.get(`/v1/events?payment_id=${created.body.data.id}&type=payment_intent.created`).set(bearer(m.secretKey));
    return ev.body.data?.[0];
  });
  return eventually(async () => {
    const list = await stack.http.get(`/v1/webhook-deliveries?endpoint_id=${endpointId}&event_id=${event.id}`).set(bearer(m.secretKey));
    const d = list.body.data?.[0];
    return d?.status === status ? d : undefined;
  });
}

export async function getDelivery(stack: TestStack, m: Merchant, id: string) {
  const res = await stack.http.get(`/v1/webhook-deliveries/${id}`).set(bearer(m.secretKey));
  expect(res.status).toBe(200);
  return res.body.data;
}

/** The environment the ops CLI sees: the suite's Postgres database and Temporal server. */
export function opsEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...suiteEnv(), ...extra };
}

/** Runs the ops CLI in-process; answers its exit code and what it printed. */
export async function ops(...argv: string[]): Promise<{ code: number; out: string; err: string; json: () => any }> {
  let out = '';
  let err = '';
  const code = await runOps(argv, { env: opsEnv(), io: { out: (t) => { out += `${t}\n`; }, err: (t) => { err += `${t}\n`; } } });
  return { code, out, err, json: () => JSON.parse(out) };
}

export interface OperatorStack { sim: TestSimulator; stack: TestStack; worker: RunningWorker }

/**
 * One simulator, API and worker for every operator case (one stack starts quicker than three). The
 * provider timeout is short so that a blackholed call soon becomes an unknown outcome.
 */
export function useOperatorStack(): OperatorStack {
  const s = {} as OperatorStack;
  beforeAll(async () => {
    s.sim = await startSimulator();
    s.stack = await startStack({ SIMULATOR_URL: s.sim.url, PROVIDER_TIMEOUT_MS: '500' });
    s.worker = await startWorker(s.stack);
  });
  afterAll(async () => {
    await s.worker?.stop();
    await s.stack?.close();
    await s.sim?.close();
  });
  return s;
}

/** Builds the dashboard as `npm run build` does (vite build dashboard) into dashboard/dist. */
export async function buildDashboard(): Promise<void> {
  const { build } = await import('vite');
  await build({ root: join(__dirname, '..', '..', 'dashboard'), logLevel: 'error' });
}
