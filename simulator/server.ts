// The `sandbox` payment processor (docs/sandbox-processor.md#the-sandbox-processor-simulator): a small processor HTTP API with
// its own idempotency, scripted test cards and per-request failure knobs, plus an inspection API for tests.
//
//   POST /v1/charges                    authorize    { amount, currency, installments?, card, capture?,
//                                                      return_url?, notification_url?, three_d_secure?, stored_credential? }
//   POST /v1/charges/:id/capture        capture      { amount? }
//   POST /v1/charges/:id/void           void         {} (also cancels a charge waiting for its challenge)
//   POST /v1/charges/:id/refunds        refund       { amount }
//   GET  /v1/charges/:id                the charge now, for the api key that made it
//   GET  /v1/operations/:key            the first answer given for an idempotency key, and the charge now
//   POST /v1/disputes/:id/evidence, POST /v1/disputes/:id/accept, GET /v1/disputes/:id   (dispute-routes.ts)
//   GET  /challenge/:id, POST /challenge/:id   the 3-D Secure challenge page and the cardholder's answer
//   GET  /_inspect/keys/:key, GET /_inspect/stats, POST /_inspect/reset, GET /_inspect/challenges,
//   GET  /_inspect/notifications, POST /_inspect/notifications/hold, POST /_inspect/notifications/release,
//   GET  /_inspect/ledger, GET /_inspect/faults, POST /_inspect/faults, GET /_inspect/disputes,
//   GET  /healthz
//
// /v1 calls need `Authorization: Bearer <api key>` (any non-empty key); POSTs need `Idempotency-Key`.
// `X-Simulate: {"outage":true,"latency_ms":N,"blackhole":true,"error_after_work":true,"decline_rate":0.5,"soft_decline_rate":0.5}`
// sets the knobs for one request; POST /_inspect/faults sets them for every request until cleared (the chaos suite's faults).

import { createServer, RequestListener } from 'node:http';
import { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import Koa, { Context, Next } from 'koa';
import { Router } from '@koa/router';
import { challengePage, completedPage, errorPage } from './challenge-page';
import { errorBody, SimulatorError } from './errors';
import { disputeRoutes } from './dispute-routes';
import { Disputes } from './disputes';
import { drawnDecline, parseKnobs, type SimulateKnobs, type SimulatorState as State } from './knobs';
import { Ledger } from './ledger';
import type { Answer, Operation } from './operations';
import { authorizeRequest, invalid, optionalAmount, readForm, readJson, requiredAmount } from './requests';
import { authenticationCompletedEvent, Notifier } from './notifications';

export interface SimulatorLogEntry {
  method: string;
  path: string;
  status: number;
  duration_ms: number;
}

export interface SimulatorOptions {
  /** Source of randomness for decline_rate and soft_decline_rate; inject for deterministic tests. */
  random?: () => number;
  now?: () => Date;
  /** One entry per answered request. Bodies are never logged (an authorize body holds a PAN). */
  log?: (entry: SimulatorLogEntry) => void;
  /**
   * The address browsers reach the simulator at, for challenge URLs (main.ts: SIMULATOR_PUBLIC_URL).
   * Absent: the address the authorize reached it at (its Host header).
   */
  publicUrl?: string;
  /** How long one try of a notification waits for the receiver's answer (default 5 s). */
  notificationTimeoutMs?: number;
}

export interface RunningSimulator {
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface Simulator {
  ledger: Ledger;
  notifier: Notifier;
  disputes: Disputes;
  callback(): RequestListener;
  listen(port?: number, host?: string): Promise<RunningSimulator>;
}

const NO_CHALLENGE = 'No such authentication';
const OUTAGE: Answer = { status: 503, body: errorBody('provider_unavailable', 'the processor is unavailable') };

const SERVER_ERROR: Answer = { status: 500, body: errorBody('internal_error', 'the processor failed while answering') };

export function createSimulator(options: SimulatorOptions = {}): Simulator {
  const random = options.random ?? Math.random;
  const now = options.now ?? (() => new Date());
  // A dispute test card's charge, once captured, is disputed later (disputes.ts).
  const ledger = new Ledger(now, (charge, disputable) => disputes.schedule(charge, disputable));
  // Aborted on close, so pending latency timers and notification retries do not keep a stopped simulator alive.
  const shutdown = new AbortController();
  const notifier = new Notifier({ now, signal: shutdown.signal, timeoutMs: options.notificationTimeoutMs });
  const disputes = new Disputes({ now, notify: (url, apiKey, event) => notifier.notify(url, apiKey, event), chargeNow: (id) => ledger.chargeNow(id), signal: shutdown.signal });
  const publicUrl = options.publicUrl?.replace(/\/+$/, '');
  // Knobs for every /v1 request until cleared (a request's own X-Simulate wins over them).
  let faults: SimulateKnobs = {};

  const inspect = new Router({ prefix: '/_inspect' });
  inspect.get('/keys/:key', (ctx) => { ctx.body = ledger.operations.keyStats(ctx.params.key); });
  inspect.get('/stats', (ctx) => { ctx.body = ledger.stats(); });
  inspect.post('/reset', (ctx) => {
    ledger.reset();
    notifier.reset();
    disputes.reset();
    faults = {};
    ctx.body = { reset: true };
  });
  inspect.get('/ledger', (ctx) => { ctx.body = ledger.books(); });
  inspect.get('/faults', (ctx) => { ctx.body = { faults }; });
  inspect.post('/faults', async (ctx) => {
    faults = parseKnobs(JSON.stringify(await readJson(ctx)));
    ctx.body = { faults };
  });
  inspect.get('/challenges', (ctx) => { ctx.body = { challenges: ledger.challenges.list() }; });
  inspect.get('/challenges/:id', (ctx) => {
    const challenge = ledger.challenges.find(ctx.params.id);
    if (!challenge) throw new SimulatorError(404, 'not_found', `no challenge ${ctx.params.id}`);
    ctx.body = challenge;
  });
  inspect.get('/notifications', (ctx) => { ctx.body = { holding: notifier.isHolding(), notifications: notifier.list() }; });
  inspect.post('/notifications/hold', async (ctx) => {
    const { hold } = await readJson(ctx);
    if (hold !== undefined && typeof hold !== 'boolean') throw invalid('hold must be a boolean');
    notifier.hold(hold ?? true);
    ctx.body = { holding: notifier.isHolding() };
  });
  inspect.post('/notifications/release', async (ctx) => {
    const { duplicate, reverse } = await readJson(ctx);
    if (duplicate !== undefined && typeof duplicate !== 'boolean') throw invalid('duplicate must be a boolean');
    if (reverse !== undefined && typeof reverse !== 'boolean') throw invalid('reverse must be a boolean');
    ctx.body = { released: await notifier.release({ duplicate, reverse }) };
  });

  // The cardholder's side of 3-D Secure: a browser, no api key.
  const challenges = new Router({ prefix: '/challenge' });
  challenges.get('/:id', (ctx) => {
    const challenge = ledger.challenges.find(ctx.params.id);
    html(ctx, challenge ? 200 : 404, challenge ? challengePage(challenge) : errorPage(NO_CHALLENGE));
  });
  challenges.post('/:id', async (ctx) => {
    const id = ctx.params.id;
    if (!ledger.challenges.find(id)) return html(ctx, 404, errorPage(NO_CHALLENGE));
    const action = (await readForm(ctx)).action;
    if (action !== 'approve' && action !== 'fail') return html(ctx, 400, errorPage('The answer must be approve or fail'));
    // Recorded once: a second answer changes nothing and sends the browser back again.
    const completion = ledger.completeChallenge(id, action);
    if (completion?.notification) {
      const event = authenticationCompletedEvent(completion.charge, now());
      await notifier.notify(completion.notification.url, completion.notification.apiKey, event);
    }
    const challenge = completion?.challenge ?? ledger.challenges.find(id);
    if (!challenge) return html(ctx, 404, errorPage(NO_CHALLENGE));
    if (challenge.return_url) {
      const back = new URL(challenge.return_url);
      back.searchParams.append('sim_charge', challenge.charge_id);
      ctx.status = 303;
      ctx.redirect(back.toString());
      return;
    }
    html(ctx, 200, completedPage(challenge));
  });

  const api = new Router<State>({ prefix: '/v1' });
  api.use(authenticate, readKnobs);

  api.post('/charges', async (ctx) => {
    const request = authorizeRequest(await readJson(ctx));
    await perform(ctx, 'authorize', 'charges', request, () => {
      const base = publicUrl ?? `${ctx.protocol}://${ctx.host}`;
      const { charge, answer } = ledger.authorize(request, {
        idempotencyKey: ctx.get('Idempotency-Key'),
        apiKey: ctx.state.apiKey,
        challengeUrl: (id) => `${base}/challenge/${encodeURIComponent(id)}`,
        forcedDecline: drawnDecline(ctx.state.knobs, random()),
        declineCode: ctx.state.knobs.decline_code,
        declineAfterAuthentication: ctx.state.knobs.decline_after_authentication,
        disputeKnobs: disputeKnobsOf(ctx.state.knobs),
      });
      return { answer, chargeId: charge.id, storedCredential: request.stored_credential };
    });
  });

  // Like the operation look-up, it always answers (latency aside): it is how callers learn a challenge's end.
  api.get('/charges/:id', async (ctx) => {
    const charge = ledger.chargeFor(ctx.params.id, ctx.state.apiKey);
    const answer: Answer = charge ? { status: 200, body: charge } : { status: 404, body: errorBody('charge_not_found', `no charge ${ctx.params.id}`) };
    await answerAfterLatency(ctx, answer);
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
    ledger.operations.countLookup(key);
    const found = ledger.lookup(key, ctx.state.apiKey);
    const answer: Answer = found
      ? { status: 200, body: { idempotency_key: key, operation: found.operation, status_code: found.answer.status, response: found.answer.body, charge: found.charge ?? null } }
      : { status: 404, body: errorBody('not_found', `no operation with idempotency key ${key}`) };
    await answerAfterLatency(ctx, answer);
  });

  disputeRoutes(api, inspect, { disputes, perform, answerAfterLatency });

  async function perform(
    ctx: Context & { state: State },
    operation: Operation,
    target: string,
    request: unknown,
    execute: () => { answer: Answer; chargeId?: string; storedCredential?: unknown },
  ): Promise<void> {
    const key = ctx.get('Idempotency-Key');
    if (!key) throw new SimulatorError(400, 'invalid_request', 'the Idempotency-Key header is required');
    const knobs = ctx.state.knobs;
    if (knobs.outage) return answerAfterLatency(ctx, OUTAGE);

    const fingerprint = ledger.operations.fingerprint(operation, target, request);
    const replayed = ledger.operations.replay(key, fingerprint);
    let answer = replayed;
    if (!answer) {
      const executed = execute();
      answer = ledger.operations.record(key, operation, fingerprint, executed.answer, executed.chargeId, executed.storedCredential);
    }
    if (knobs.error_after_work) return answerAfterLatency(ctx, SERVER_ERROR);
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

  async function authenticate(ctx: Context & { state: State }, next: Next): Promise<void> {
    ledger.operations.countCall(ctx.method === 'POST' ? ctx.get('Idempotency-Key') || undefined : undefined);
    const token = /^Bearer\s+(\S.*)$/i.exec(ctx.get('Authorization'))?.[1];
    if (!token) throw new SimulatorError(401, 'authentication_failed', 'an api key is required in the Authorization header');
    ctx.state.apiKey = token;
    await next();
  }

  async function readKnobs(ctx: Context & { state: State }, next: Next): Promise<void> {
    ctx.state.knobs = { ...faults, ...parseKnobs(ctx.get('X-Simulate')) };
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
  app.use(challenges.routes());
  app.use(api.routes());
  app.use(api.allowedMethods());

  return {
    ledger,
    notifier,
    disputes,
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

function disputeKnobsOf({ dispute_after_ms, dispute_due_in_ms, dispute_decision_ms }: SimulateKnobs) {
  return { dispute_after_ms, dispute_due_in_ms, dispute_decision_ms };
}

function html(ctx: Context, status: number, body: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = body;
}
