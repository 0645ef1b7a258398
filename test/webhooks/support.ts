import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { appendEvents, eventsByIds, markFannedOut, type EventRecord } from '../../db/events';
import { webhookActivities, webhookContext } from '../../activities/webhooks';
import { eventFanOut } from '../../activities/webhooks/fan-out';
import type { Environment } from '../../db/environments';
import { envTable } from '../../db/environments';
import { bearer, Merchant, TestStack } from '../support/stack';

export interface ReceivedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
  type: string | undefined;
  eventId: string | undefined;
}

export interface Reply { status: number; body?: string; headers?: Record<string, string>; delayMs?: number }

/**
 * A merchant's webhook receiver: a real HTTP server on 127.0.0.1 recording every request. By default it
 * passes the handshake (echoes the challenge as JSON) and answers 200 to events; `respond` overrides.
 */
export class Receiver {
  readonly requests: ReceivedRequest[] = [];
  respond: (req: ReceivedRequest, nth: number) => Reply | undefined = () => undefined;
  private server!: Server;

  static async start(): Promise<Receiver> {
    const receiver = new Receiver();
    receiver.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let parsed: any;
        try { parsed = JSON.parse(body); } catch { parsed = undefined; }
        const received: ReceivedRequest = { path: req.url ?? '/', headers: req.headers, body, at: Date.now(), type: parsed?.type, eventId: parsed?.id };
        receiver.requests.push(received);
        const nth = receiver.requests.filter((r) => r.eventId === received.eventId).length;
        const reply = receiver.respond(received, nth)
          ?? (received.type === 'webhook_endpoint.verification'
            ? { status: 200, body: JSON.stringify({ challenge: parsed.data.challenge }), headers: { 'content-type': 'application/json' } }
            : { status: 200, body: 'ok' });
        const send = () => { res.writeHead(reply.status, reply.headers ?? {}); res.end(reply.body ?? ''); };
        if (reply.delayMs) setTimeout(send, reply.delayMs); else send();
      });
    });
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  /** Event deliveries (not handshakes), optionally of one event. */
  events(eventId?: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.type !== 'webhook_endpoint.verification' && (!eventId || r.eventId === eventId));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Every request must verify with the standardwebhooks package under `secret`. */
export function expectVerified(req: ReceivedRequest, secret: string): any {
  const headers = {
    'webhook-id': String(req.headers['webhook-id']),
    'webhook-timestamp': String(req.headers['webhook-timestamp']),
    'webhook-signature': String(req.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(req.body, headers);
}

export async function waitFor<T>(probe: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function createEndpoint(stack: TestStack, merchant: Merchant, body: Record<string, unknown>) {
  const res = await stack.http.post('/v1/webhook-endpoints').set(bearer(merchant.secretKey)).send(body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data as { id: string; secret: string; status: string; [k: string]: unknown };
}

export async function getEndpoint(stack: TestStack, merchant: Merchant, id: string) {
  const res = await stack.http.get(`/v1/webhook-endpoints/${id}`).set(bearer(merchant.secretKey));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

/** Creates an endpoint on the receiver and waits until the handshake has enabled it. */
export async function enabledEndpoint(stack: TestStack, merchant: Merchant, receiver: Receiver, body: Record<string, unknown> = {}) {
  const created = await createEndpoint(stack, merchant, { url: receiver.url(), ...body });
  await waitFor(async () => (await getEndpoint(stack, merchant, created.id)).status === 'enabled', 'the handshake to enable the endpoint');
  return created;
}

export async function getDelivery(stack: TestStack, merchant: Merchant, id: string) {
  const res = await stack.http.get(`/v1/webhook-deliveries/${id}`).set(bearer(merchant.secretKey));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

export async function waitForDelivery(stack: TestStack, merchant: Merchant, id: string, status: string | string[], timeoutMs = 20_000) {
  const wanted = Array.isArray(status) ? status : [status];
  return waitFor(async () => {
    const d = await getDelivery(stack, merchant, id);
    return wanted.includes(d.status) ? d : undefined;
  }, `delivery ${id} to be ${wanted.join('/')}`, timeoutMs);
}

export function environmentOf(merchant: Merchant): Environment {
  return merchant.account.environment as Environment;
}

/** Activities wired to the stack (real Postgres, real Temporal), as a workflow's worker would run them. */
export function activitiesFor(stack: TestStack, config: Partial<TestStack['config']> = {}) {
  return webhookActivities({ db: stack.db, config: { ...stack.config, ...config } });
}

/** The fan-out as a worker's dispatcher runs it, wired to the stack, `config` over the stack's; `temporal` starts delivery workflows. */
export function fanOutFor(stack: TestStack, config: Partial<TestStack['config']> = {}, temporal = stack.deps.temporal) {
  const fanOut = eventFanOut(webhookContext({ db: stack.db, config: { ...stack.config, ...config } }), temporal);
  return async (env: Environment, eventIds: string[]) => fanOut(env, await eventsByIds(stack.db, env, eventIds));
}

/**
 * Appends events for the merchant's account and fans them out here, with `config`; returns event ids and
 * what the fan-out did. They are written as fanned out already, so no worker's dispatcher takes them.
 */
export async function emit(stack: TestStack, merchant: Merchant, events: { event: string; data?: Record<string, unknown>; paymentId?: string }[],
  config: Partial<TestStack['config']> = {}) {
  const environment = environmentOf(merchant);
  const eventIds = await appendHeld(stack, environment, events.map((e) => ({ ...e, accountId: merchant.account.id, workspaceId: merchant.workspaceId })));
  return { eventIds, ...await fanOutFor(stack, config)(environment, eventIds) };
}

/** Appends events marked fanned out in the same transaction: no worker's dispatcher takes them, for a test to fan them out itself. */
export async function appendHeld(stack: TestStack, environment: Environment, records: EventRecord[]): Promise<string[]> {
  return stack.db.transaction(async (trx) => {
    const ids = await appendEvents(trx, environment, records);
    await markFannedOut(trx, environment, ids);
    return ids;
  });
}

export async function deliveryOf(stack: TestStack, merchant: Merchant, eventId: string, endpointId: string) {
  return stack.db(envTable(environmentOf(merchant), 'webhook_deliveries')).where({ event_id: eventId, endpoint_id: endpointId }).first();
}
