// The `sandbox` payment processor (docs/sandbox-processor.md#the-sandbox-processor-simulator): a small processor HTTP API with
// its own idempotency, scripted test cards and per-request failure knobs, plus an inspection API for tests.
//
//   POST /v1/charges                    authorize    { amount, currency, installments?, card }
//   POST /v1/charges/:id/capture        capture      { amount? }
//   POST /v1/charges/:id/void           void         {}
//   POST /v1/charges/:id/refunds        refund       { amount }
//   GET  /v1/operations/:key            the first answer given for an idempotency key, and the charge now
//   GET  /_inspect/keys/:key, GET /_inspect/stats, POST /_inspect/reset, GET /healthz
//
// /v1 calls need `Authorization: Bearer <api key>` (any non-empty key); POSTs need `Idempotency-Key`.
// `X-Simulate: {"outage":true,"latency_ms":N,"blackhole":true,"decline_rate":0.5}` sets the knobs.

import { createServer, RequestListener } from 'node:http';
import { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import Koa, { Context, Next } from 'koa';
import { Router } from '@koa/router';
import parseBody from 'co-body';
import { Answer, AuthorizeRequest, errorBody, Ledger, Operation, SimulatorError } from './ledger';

export interface SimulateKnobs {
  outage?: boolean;
  latency_ms?: number;
  blackhole?: boolean;
  decline_rate?: number;
}

export interface SimulatorLogEntry {
  method: string;
  path: string;
  status: number;
  duration_ms: number;
}

export interface SimulatorOptions {
  /** Source of randomness for decline_rate; inject for deterministic tests. */
  random?: () => number;
  now?: () => Date;
  /** One entry per answered request. Bodies are never logged (an authorize body holds a PAN). */
  log?: (entry: SimulatorLogEntry) => void;
}

export interface RunningSimulator {
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface Simulator {
  ledger: Ledger;
  callback(): RequestListener;
  listen(port?: number, host?: string): Promise<RunningSimulator>;
}

const MAX_LATENCY_MS = 60_000;
const OUTAGE: Answer = { status: 503, body: errorBody('provider_unavailable', 'the processor is unavailable') };

interface State {
  knobs: SimulateKnobs;
}

export function createSimulator(options: SimulatorOptions = {}): Simulator {
  const random = options.random ?? Math.random;
  const ledger = new Ledger(options.now);
  // Aborted on close, so pending latency timers do not keep a stopped simulator alive.
  const shutdown = new AbortController();

  const inspect = new Router({ prefix: '/_inspect' });
  inspect.get('/keys/:key', (ctx) => { ctx.body = ledger.keyStats(ctx.params.key); });
  inspect.get('/stats', (ctx) => { ctx.body = ledger.stats(); });
  inspect.post('/reset', (ctx) => { ledger.reset(); ctx.body = { reset: true }; });

  const api = new Router<State>({ prefix: '/v1' });
  api.use(authenticate, readKnobs);

  api.post('/charges', async (ctx) => {
    const request = authorizeRequest(await readJson(ctx));
    await perform(ctx, 'authorize', 'charges', request, () => {
      const rate = ctx.state.knobs.decline_rate ?? 0;
      const { charge, answer } = ledger.authorize(request, random() < rate ? 'card_declined' : undefined);
      return { answer, chargeId: charge.id };
    });
  });

  api.post('/charges/:id/capture', async (ctx) => {
    const body = await readJson(ctx);
    const amount = optionalAmount(body.amount, 'amount');
    await perform(ctx, 'capture', ctx.params.id, { amount }, () => ({ answer: ledger.capture(ctx.params.id, amount), chargeId: ctx.params.id }));
  });

  api.post('/charges/:id/void', async (ctx) => {
    await readJson(ctx);
    await perform(ctx, 'void', ctx.params.id, {}, () => ({ answer: ledger.void(ctx.params.id), chargeId: ctx.params.id }));
  });

  api.post('/charges/:id/refunds', async (ctx) => {
    const amount = requiredAmount((await readJson(ctx)).amount, 'amount');
    await perform(ctx, 'refund', ctx.params.id, { amount }, () => ({ answer: ledger.refund(ctx.params.id, amount), chargeId: ctx.params.id }));
  });

  // The status query always answers (even for blackholed calls): it is how callers reconcile.
  api.get('/operations/:key', async (ctx) => {
    const key = ctx.params.key;
    ledger.countLookup(key);
    const found = ledger.lookup(key);
    const answer: Answer = found
      ? { status: 200, body: { idempotency_key: key, operation: found.operation, status_code: found.answer.status, response: found.answer.body, charge: found.charge ?? null } }
      : { status: 404, body: errorBody('not_found', `no operation with idempotency key ${key}`) };
    await answerAfterLatency(ctx, answer);
  });

  async function perform(
    ctx: Context & { state: State },
    operation: Operation,
    target: string,
    request: unknown,
    execute: () => { answer: Answer; chargeId?: string },
  ): Promise<void> {
    const key = ctx.get('Idempotency-Key');
    if (!key) throw new SimulatorError(400, 'invalid_request', 'the Idempotency-Key header is required');
    const knobs = ctx.state.knobs;
    if (knobs.outage) return answerAfterLatency(ctx, OUTAGE);

    const fingerprint = ledger.fingerprint(operation, target, request);
    const replayed = ledger.replay(key, fingerprint);
    let answer = replayed;
    if (!answer) {
      const executed = execute();
      answer = ledger.record(key, operation, fingerprint, executed.answer, executed.chargeId);
    }
    if (knobs.blackhole) {
      // The work is done and recorded, but the caller never hears about it: hold the socket until the
      // client gives up (or the simulator stops).
      ctx.respond = false;
      return;
    }
    if (replayed) ctx.set('Idempotent-Replayed', 'true');
    await answerAfterLatency(ctx, answer);
  }

  async function answerAfterLatency(ctx: Context & { state: State }, answer: Answer): Promise<void> {
    const latency = ctx.state.knobs.latency_ms ?? 0;
    if (latency > 0) {
      try {
        await sleep(latency, undefined, { signal: shutdown.signal });
      } catch {
        ctx.respond = false;
        ctx.req.socket.destroy();
        return;
      }
    }
    ctx.status = answer.status;
    ctx.body = answer.body;
  }

  async function authenticate(ctx: Context, next: Next): Promise<void> {
    ledger.countCall(ctx.method === 'POST' ? ctx.get('Idempotency-Key') || undefined : undefined);
    const token = /^Bearer\s+(\S.*)$/i.exec(ctx.get('Authorization'))?.[1];
    if (!token) throw new SimulatorError(401, 'authentication_failed', 'an api key is required in the Authorization header');
    await next();
  }

  async function readKnobs(ctx: Context & { state: State }, next: Next): Promise<void> {
    ctx.state.knobs = parseKnobs(ctx.get('X-Simulate'));
    await next();
  }

  const app = new Koa();
  app.use(async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } catch (err) {
      const known = err instanceof SimulatorError ? err : undefined;
      ctx.status = known?.status ?? 500;
      ctx.body = errorBody(known?.code ?? 'internal_error', known?.message ?? 'internal simulator error');
    }
    if (ctx.respond !== false) {
      options.log?.({ method: ctx.method, path: ctx.path, status: ctx.status, duration_ms: Math.round(performance.now() - started) });
    }
  });
  app.use(async (ctx, next) => {
    if (ctx.path === '/healthz') ctx.body = { ok: true };
    else await next();
  });
  app.use(inspect.routes());
  app.use(api.routes());
  app.use(api.allowedMethods());

  return {
    ledger,
    callback: () => app.callback(),
    listen(port = 0, host = '127.0.0.1') {
      const server = createServer(app.callback());
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          const { port: bound } = server.address() as AddressInfo;
          resolve({
            url: `http://${host}:${bound}`,
            port: bound,
            close: () => new Promise<void>((done) => {
              shutdown.abort();
              server.close(() => done());
              // Blackholed and keep-alive sockets would otherwise hold close() open forever.
              server.closeAllConnections();
            }),
          });
        });
      });
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Request parsing (400 invalid_request; nothing is recorded for a request that fails validation)

function invalid(message: string): SimulatorError {
  return new SimulatorError(400, 'invalid_request', message);
}

async function readJson(ctx: Context): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await parseBody.json(ctx.req, { limit: '64kb', strict: true });
  } catch {
    throw invalid('the body must be JSON');
  }
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw invalid('the body must be a JSON object');
  return body as Record<string, unknown>;
}

export function parseKnobs(header: string): SimulateKnobs {
  if (!header) return {};
  let value: unknown;
  try {
    value = JSON.parse(header);
  } catch {
    throw invalid('X-Simulate must be a JSON object');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('X-Simulate must be a JSON object');
  const knobs = value as Record<string, unknown>;
  const { outage, latency_ms, blackhole, decline_rate } = knobs;
  const unknown = Object.keys(knobs).filter((key) => !['outage', 'latency_ms', 'blackhole', 'decline_rate'].includes(key));
  if (unknown.length > 0) throw invalid(`unknown X-Simulate knob ${unknown.join(', ')}`);
  if (outage !== undefined && typeof outage !== 'boolean') throw invalid('outage must be a boolean');
  if (blackhole !== undefined && typeof blackhole !== 'boolean') throw invalid('blackhole must be a boolean');
  if (latency_ms !== undefined && !(Number.isInteger(latency_ms) && (latency_ms as number) >= 0 && (latency_ms as number) <= MAX_LATENCY_MS)) {
    throw invalid(`latency_ms must be an integer from 0 to ${MAX_LATENCY_MS}`);
  }
  if (decline_rate !== undefined && !(typeof decline_rate === 'number' && decline_rate >= 0 && decline_rate <= 1)) {
    throw invalid('decline_rate must be a number from 0 to 1');
  }
  return knobs as SimulateKnobs;
}

function requiredAmount(value: unknown, name: string): number {
  if (!Number.isInteger(value) || (value as number) < 1) throw invalid(`${name} must be a positive integer`);
  return value as number;
}

function optionalAmount(value: unknown, name: string): number | undefined {
  return value === undefined ? undefined : requiredAmount(value, name);
}

const isInteger = (value: unknown): value is number => Number.isInteger(value);

function authorizeRequest(body: Record<string, unknown>): AuthorizeRequest {
  const amount = requiredAmount(body.amount, 'amount');
  if (typeof body.currency !== 'string' || !/^[A-Z]{3}$/.test(body.currency)) throw invalid('currency must be an upper-case ISO-4217 code');
  const installments = body.installments === undefined ? 1 : requiredAmount(body.installments, 'installments');
  const card = body.card;
  if (typeof card !== 'object' || card === null) throw invalid('card is required');
  const { number, exp_month, exp_year, cvc } = card as Record<string, unknown>;
  if (typeof number !== 'string') throw invalid('card.number must be a string');
  if (!isInteger(exp_month) || exp_month < 1 || exp_month > 12) throw invalid('card.exp_month must be 1-12');
  if (!isInteger(exp_year)) throw invalid('card.exp_year must be an integer');
  if (cvc !== undefined && typeof cvc !== 'string') throw invalid('card.cvc must be a string');
  return { amount, currency: body.currency, installments, card: { number, exp_month, exp_year, cvc } };
}
