import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createSandboxAdapter, parseSandboxWebhook, SandboxAdapter, SandboxCredentials, simulatorSignature,
} from '../../activities/providers/sandbox';
import {
  AuthorizeOutput, CompleteAuthenticationOutput, ExternalAuthentication, OperationOutput, ProviderExchange, ThreeDSecureRequest, WebhookVerdict,
} from '../../activities/providers/types';
import { authorizationStep, judgeCard } from '../../simulator/cards';
import { displayAmount, escapeHtml } from '../../simulator/challenge-page';
import { retryDelayMs, signatureHeader } from '../../simulator/notifications';
import { createSimulator, RunningSimulator, Simulator } from '../../simulator/server';

// 3-D Secure in the sandbox processor, exercised as the engine uses it: the sandbox adapter over HTTP, a
// browser's answer on the challenge page (plain fetch), and the simulator's signed notifications caught by
// a small receiver and read with the adapter's parseWebhook.

const API_KEY = 'sk_sim_3ds_Hq2Lm8Vx';
const OTHER_KEY = 'sk_sim_3ds_other_Pw4N';
const credentials: SandboxCredentials = { api_key: API_KEY };
const CARDS = {
  required: '4000002760003184',
  declinedAfter: '4000008400001629',
  optional: '4000000000003055',
  stepUp: '4000002500003155',
  plain: '4242424242424242',
} as const;
const RETURN_URL = 'https://shop.example/return?order=42';

let sim: Simulator;
let simulator: RunningSimulator;
let adapter: SandboxAdapter;
let receiver: Receiver;
const exchanges: ProviderExchange[] = [];
const cavvsSeen = new Set<string>();
let sequence = 0;
const nextKey = (): string => `ch_3ds_${Date.now()}_${++sequence}`;

/** A webhook endpoint that records what it is sent and answers from a script (then 200). */
interface Receiver {
  url: string;
  received: { headers: IncomingHttpHeaders; body: string }[];
  answers: number[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const received: Receiver['received'] = [];
  const answers: number[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => { body += chunk; });
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      const status = answers.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'application/json' }).end(status < 300 ? '{"received":true}' : '{"error":"not now"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/provider-webhooks/ppc_test`,
    received,
    answers,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

function keep<T extends OperationOutput>(output: T): T {
  exchanges.push(output.exchange);
  const authentication = (output as CompleteAuthenticationOutput).authentication;
  if (authentication) cavvsSeen.add(authentication.cavv);
  return output;
}

async function authorize(number: string, options: {
  key?: string; threeDSecure?: ThreeDSecureRequest; returnUrl?: string | null; notify?: boolean; creds?: SandboxCredentials; amount?: number;
} = {}): Promise<AuthorizeOutput> {
  return keep(await adapter.authorize({
    credentials: options.creds ?? credentials,
    idempotencyKey: options.key ?? nextKey(),
    amount: options.amount ?? 10_000,
    currency: 'USD',
    installments: 1,
    card: { number, exp_month: 12, exp_year: 2099, cvc: '123' },
    ...(options.returnUrl === null ? {} : { returnUrl: options.returnUrl ?? RETURN_URL }),
    ...(options.notify === false ? {} : { notificationUrl: receiver.url }),
    ...(options.threeDSecure ? { threeDSecure: options.threeDSecure } : {}),
  }));
}

async function complete(providerReference: string, creds: SandboxCredentials = credentials): Promise<CompleteAuthenticationOutput> {
  return keep(await adapter.completeAuthentication({ credentials: creds, idempotencyKey: 'ch_x:authenticate', reference: 'ch_x', providerReference, returnParams: { sim_charge: providerReference } }));
}

function challenged(output: AuthorizeOutput): { reference: string; url: string } {
  if (output.outcome.kind !== 'requires_action') throw new Error(`expected requires_action, got ${JSON.stringify(output.outcome)}`);
  return { reference: output.outcome.providerReference, url: output.outcome.redirectUrl };
}

/** The cardholder's answer on the challenge page, as the browser sends it. */
async function answer(url: string, action: string): Promise<Response> {
  return fetch(url, { method: 'POST', body: new URLSearchParams({ action }), redirect: 'manual' });
}

async function inspect(path: string, body?: Record<string, unknown>): Promise<any> {
  const response = await fetch(`${simulator.url}/_inspect/${path}`, body ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {});
  return response.json();
}

/** A card authenticated once: its authentication data, as completeAuthentication gives it. */
async function authenticatedOnce(number: string): Promise<ExternalAuthentication> {
  const { reference, url } = challenged(await authorize(number, { threeDSecure: { requested: true } }));
  await answer(url, 'approve');
  const done = await complete(reference);
  if (!done.authentication) throw new Error('no authentication data');
  return done.authentication;
}

function verdictOf(delivery: { headers: IncomingHttpHeaders; body: string }, creds: SandboxCredentials = credentials): WebhookVerdict {
  const headers = Object.fromEntries(Object.entries(delivery.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v]));
  return parseSandboxWebhook({ rawBody: delivery.body, headers, credentials: creds });
}

beforeAll(async () => {
  sim = createSimulator();
  simulator = await sim.listen(0);
  adapter = createSandboxAdapter({ baseUrl: simulator.url, timeoutMs: 5_000 });
  receiver = await startReceiver();
});

afterAll(async () => {
  await adapter.close();
  await simulator.close();
  await receiver.close();
});

beforeEach(async () => {
  await inspect('reset', {});
  receiver.received.length = 0;
  receiver.answers.length = 0;
});

describe('3-D Secure test cards', () => {
  it.each([
    [CARDS.required, false, 'requires_action', undefined],
    [CARDS.required, true, 'requires_action', undefined],
    [CARDS.declinedAfter, false, 'requires_action', undefined],
    [CARDS.declinedAfter, true, 'requires_action', undefined],
    [CARDS.optional, false, 'approved', undefined],
    [CARDS.optional, true, 'requires_action', undefined],
    [CARDS.stepUp, false, 'soft_decline', 'authentication_required'],
    [CARDS.stepUp, true, 'requires_action', undefined],
    [CARDS.plain, true, 'approved', undefined],
  ])('%s with requested=%s answers %s %s', async (number, requested, kind, declineCode) => {
    const output = await authorize(number, { threeDSecure: { requested } });

    expect(output.outcome.kind).toBe(kind);
    if (declineCode) expect(output.outcome).toMatchObject({ declineCode });
    if (kind === 'requires_action') {
      const { reference, url } = challenged(output);
      expect(reference).toMatch(/^sch_/);
      expect(url).toBe(`${simulator.url}/challenge/${reference}`);
      expect(output.exchange.response?.body).toMatchObject({
        status: 'requires_action', authorized_amount: 0,
        next_action: { type: 'redirect_to_url', redirect_to_url: { url, return_url: RETURN_URL } },
      });
    }
  });

  it.each([
    [CARDS.required, 'approve', { kind: 'approved', authorizedAmount: 10_000, capturedAmount: 0 }, true],
    [CARDS.declinedAfter, 'approve', { kind: 'hard_decline', declineCode: 'card_declined' }, true],
    [CARDS.optional, 'approve', { kind: 'approved', authorizedAmount: 10_000 }, true],
    [CARDS.stepUp, 'approve', { kind: 'approved', authorizedAmount: 10_000 }, true],
    [CARDS.required, 'fail', { kind: 'hard_decline', declineCode: 'authentication_failed' }, false],
    [CARDS.stepUp, 'fail', { kind: 'hard_decline', declineCode: 'authentication_failed' }, false],
  ])('%s, the cardholder answering %s, ends %o', async (number, action, outcome, authenticated) => {
    const { reference, url } = challenged(await authorize(number, { threeDSecure: { requested: true } }));

    const waiting = await complete(reference);
    expect(waiting.outcome).toEqual({ kind: 'requires_action', providerReference: reference, redirectUrl: url });
    expect(waiting.exchange).toMatchObject({ operation: 'authenticate', outcome: 'requires_action', request: { method: 'GET', path: `/v1/charges/${reference}` } });

    expect((await answer(url, action)).status).toBe(303);
    const done = await complete(reference);

    expect(done.outcome).toMatchObject({ ...outcome, ...(outcome.kind === 'approved' ? { providerReference: reference } : {}) });
    if (authenticated) {
      expect(done.authentication).toEqual({ version: '2.2.0', eci: '05', cavv: expect.any(String), dsTransactionId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
      expect(Buffer.from(done.authentication!.cavv, 'base64')).toHaveLength(20);
    } else {
      expect(done.authentication).toBeUndefined();
    }
  });

  it('replays the requires_action answer for the same key, with one charge', async () => {
    const key = nextKey();
    const first = challenged(await authorize(CARDS.required, { key }));
    const again = challenged(await authorize(CARDS.required, { key }));

    expect(again).toEqual(first);
    expect(await inspect('stats')).toMatchObject({ charges: { total: 1, requires_action: 1 }, challenges: { total: 1, pending: 1 } });
  });

  it('tells the challenge end through the status look-up as well', async () => {
    const key = nextKey();
    const { reference, url } = challenged(await authorize(CARDS.required, { key }));
    expect(await adapter.getStatus({ credentials, idempotencyKey: key })).toMatchObject({ lookup: 'found', outcome: { kind: 'requires_action', providerReference: reference } });

    await answer(url, 'fail');
    const status = await adapter.getStatus({ credentials, idempotencyKey: key });
    exchanges.push(status.exchange);
    expect(status).toMatchObject({ lookup: 'found', operation: 'authorize', outcome: { kind: 'hard_decline', declineCode: 'authentication_failed' } });
  });

  it('captures at the end of the challenge when the authorize asked for capture', async () => {
    const response = await fetch(`${simulator.url}/v1/charges`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'idempotency-key': nextKey() },
      body: JSON.stringify({ amount: 2_500, currency: 'EUR', card: { number: CARDS.required, exp_month: 1, exp_year: 2099 }, capture: true }),
    });
    const charge: any = await response.json();
    expect(charge).toMatchObject({ status: 'requires_action' });

    await answer(charge.next_action.redirect_to_url.url, 'approve');

    expect((await complete(charge.id)).outcome).toMatchObject({ kind: 'approved', authorizedAmount: 2_500, capturedAmount: 2_500 });
  });

  it('cancels a charge still waiting for its challenge on void', async () => {
    const { reference, url } = challenged(await authorize(CARDS.required));

    const voided = keep(await adapter.void({ credentials, idempotencyKey: nextKey(), providerReference: reference }));
    expect(voided.outcome).toMatchObject({ kind: 'approved', authorizedAmount: 0, capturedAmount: 0 });
    expect(await inspect(`challenges/${reference}`)).toMatchObject({ state: 'canceled' });

    const late = await answer(url, 'approve');
    expect(late.status).toBe(303);
    expect(await (await fetch(url)).text()).toContain('id="over"');
    expect(receiver.received).toHaveLength(0);
  });

  it('refuses malformed 3-D Secure fields', async () => {
    const post = (extra: Record<string, unknown>) => fetch(`${simulator.url}/v1/charges`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'idempotency-key': nextKey() },
      body: JSON.stringify({ amount: 100, currency: 'USD', card: { number: CARDS.required, exp_month: 1, exp_year: 2099 }, ...extra }),
    });
    for (const extra of [
      { return_url: 'javascript:alert(1)' },
      { notification_url: 'not a url' },
      { three_d_secure: { requested: 'yes' } },
      { three_d_secure: { external: { version: '2.2.0', eci: '05', ds_transaction_id: 'x' } } },
      { capture: 'true' },
    ]) {
      const response = await post(extra);
      expect(response.status, JSON.stringify(extra)).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: 'invalid_request' } });
    }
  });
});

describe('the challenge page', () => {
  it('shows the amount, the card and one form with both answers', async () => {
    const { reference, url } = challenged(await authorize(CARDS.required, { amount: 12_345 }));

    const page = await fetch(url);
    const html = await page.text();

    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html).toContain('123.45 USD');
    expect(html).toContain('3184');
    expect(html).not.toContain(CARDS.required);
    expect(html.match(/<form/g)).toHaveLength(1);
    expect(html).toMatch(new RegExp(`<form id="challenge" method="post" action="${reference}">`));
    expect(html).toContain('<button type="submit" id="complete" name="action" value="approve">Complete</button>');
    expect(html).toContain('<button type="submit" id="fail" name="action" value="fail">Fail</button>');
    expect(html).not.toMatch(/<script|<link|src=/);
  });

  it('answers 404 for a challenge it does not know', async () => {
    expect((await fetch(`${simulator.url}/challenge/sch_nope`)).status).toBe(404);
    expect((await answer(`${simulator.url}/challenge/sch_nope`, 'approve')).status).toBe(404);
  });

  it('refuses an answer that is neither approve nor fail, and keeps waiting', async () => {
    const { reference, url } = challenged(await authorize(CARDS.required));
    expect((await answer(url, 'maybe')).status).toBe(400);
    expect(await inspect(`challenges/${reference}`)).toMatchObject({ state: 'pending', completed_at: null });
  });

  it.each([
    ['https://shop.example/return', 'https://shop.example/return?sim_charge='],
    ['https://shop.example/return?order=42', 'https://shop.example/return?order=42&sim_charge='],
    ['https://shop.example/return?order=42#top', 'https://shop.example/return?order=42&sim_charge='],
  ])('sends the browser back to %s', async (returnUrl, expected) => {
    const { reference, url } = challenged(await authorize(CARDS.required, { returnUrl }));
    const response = await answer(url, 'approve');

    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toContain(`${expected}${reference}`);
  });

  it('without a return_url, says the authentication is complete', async () => {
    const { url } = challenged(await authorize(CARDS.required, { returnUrl: null }));
    const response = await answer(url, 'approve');

    expect(response.status).toBe(200);
    expect(await response.text()).toContain('Authentication complete — you can close this window');
  });

  it('records the answer once: a second POST changes nothing and redirects again', async () => {
    const { reference, url } = challenged(await authorize(CARDS.required));

    const first = await answer(url, 'approve');
    const second = await answer(url, 'fail');

    expect(second.status).toBe(303);
    expect(second.headers.get('location')).toBe(first.headers.get('location'));
    expect((await complete(reference)).outcome).toMatchObject({ kind: 'approved' });
    expect(await inspect(`challenges/${reference}`)).toMatchObject({ state: 'approved', completed_at: expect.any(String) });
    await sim.notifier.idle();
    expect(receiver.received).toHaveLength(1);
  });

  it('lists the challenges and their state', async () => {
    const a = challenged(await authorize(CARDS.required));
    const b = challenged(await authorize(CARDS.declinedAfter, { returnUrl: null, notify: false }));
    await answer(a.url, 'fail');

    const { challenges } = await inspect('challenges');
    expect(challenges).toEqual([
      expect.objectContaining({ id: a.reference, charge_id: a.reference, state: 'failed', amount: 10_000, currency: 'USD', last4: '3184', return_url: RETURN_URL, notification_url: receiver.url }),
      expect.objectContaining({ id: b.reference, state: 'pending', last4: '1629', return_url: null, notification_url: null, completed_at: null }),
    ]);
  });

  it('escapes what it echoes and shows amounts in major units', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
    expect(displayAmount(12_345, 'USD')).toBe('123.45 USD');
    expect(displayAmount(500, 'JPY')).toBe('500 JPY');
    expect(displayAmount(1_234, 'KWD')).toBe('1.234 KWD');
  });
});

describe('notifications', () => {
  it('sends a signed charge.authentication_completed that parseWebhook accepts', async () => {
    const key = nextKey();
    const { reference, url } = challenged(await authorize(CARDS.required, { key, amount: 4_200 }));
    await answer(url, 'approve');

    expect(receiver.received).toHaveLength(1);
    const [delivery] = receiver.received;
    expect(delivery.headers['content-type']).toBe('application/json');
    expect(delivery.headers['simulator-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const event = JSON.parse(delivery.body);
    expect(event).toMatchObject({
      id: expect.stringMatching(/^evt_sim_/), type: 'charge.authentication_completed', created: expect.any(Number),
      data: { charge: { id: reference, idempotency_key: key, status: 'authorized', decline_code: null, authorized_amount: 4_200, three_d_secure: { version: '2.2.0', eci: '05' } } },
    });
    cavvsSeen.add(event.data.charge.three_d_secure.cavv);

    const verdict = verdictOf(delivery);
    expect(verdict).toMatchObject({ verified: true, rejected: 0, reply: { status: 200, body: '{"received":true}', contentType: 'application/json' } });
    if (!verdict.verified) throw new Error(verdict.error);
    const [normalized] = verdict.events;
    expect(normalized).toMatchObject({
      eventId: event.id, type: 'charge.authentication_completed', operation: 'authorize', chargeId: key, providerReference: reference,
      outcome: { kind: 'approved', providerReference: reference, authorizedAmount: 4_200, capturedAmount: 0, refundedAmount: 0 },
      authentication: { version: '2.2.0', eci: '05', cavv: event.data.charge.three_d_secure.cavv, dsTransactionId: event.data.charge.three_d_secure.ds_transaction_id },
    });
    const payload = JSON.stringify(normalized.payload);
    expect(payload).not.toContain(event.data.charge.three_d_secure.cavv);
    expect(payload).not.toContain('last4');
    expect(normalized.payload).toMatchObject({ id: event.id, data: { charge: { id: reference, three_d_secure: { cavv: '[redacted]', eci: '05' } } } });

    const sent = await inspect('notifications');
    expect(sent).toMatchObject({ holding: false, notifications: [{ event_id: event.id, charge_id: reference, url: receiver.url, state: 'delivered', body: delivery.body, attempts: [{ status: 200 }] }] });
  });

  it.each([
    [CARDS.declinedAfter, 'approve', 'hard_decline', 'card_declined', true],
    [CARDS.required, 'fail', 'hard_decline', 'authentication_failed', false],
  ])('reports %s answered %s as %s %s', async (number, action, kind, declineCode, authenticated) => {
    const { url } = challenged(await authorize(number));
    await answer(url, action);

    const verdict = verdictOf(receiver.received[0]);
    if (!verdict.verified) throw new Error(verdict.error);
    expect(verdict.events[0]).toMatchObject({ operation: 'authorize', outcome: { kind, declineCode }, providerCode: declineCode });
    expect(verdict.events[0].authentication !== undefined).toBe(authenticated);
  });

  it('sends nothing without a notification_url', async () => {
    const { url } = challenged(await authorize(CARDS.required, { notify: false }));
    await answer(url, 'approve');
    expect((await inspect('notifications')).notifications).toEqual([]);
  });

  it('retries with backoff while the receiver answers non-2xx', async () => {
    receiver.answers.push(500, 503);
    const { url } = challenged(await authorize(CARDS.required));
    await answer(url, 'approve');
    await sim.notifier.idle();

    expect(receiver.received).toHaveLength(3);
    const [notification] = (await inspect('notifications')).notifications;
    expect(notification).toMatchObject({ state: 'delivered', attempts: [{ status: 500 }, { status: 503 }, { status: 200 }] });
    expect(new Set(receiver.received.map((d) => JSON.parse(d.body).id)).size).toBe(1);
    for (const delivery of receiver.received) expect(verdictOf(delivery).verified).toBe(true);
  });

  it('holds notifications, then releases them duplicated', async () => {
    expect(await inspect('notifications/hold', {})).toEqual({ holding: true });
    const { reference, url } = challenged(await authorize(CARDS.required));
    await answer(url, 'approve');

    expect(receiver.received).toHaveLength(0);
    expect((await inspect('notifications')).notifications).toMatchObject([{ charge_id: reference, state: 'held', attempts: [] }]);

    const { released } = await inspect('notifications/release', { duplicate: true });

    expect(released).toMatchObject([{ charge_id: reference, state: 'delivered', attempts: [{ status: 200 }, { status: 200 }] }]);
    expect(receiver.received).toHaveLength(2);
    expect(receiver.received[0].body).toBe(receiver.received[1].body);
    const ids = receiver.received.map((delivery) => {
      const verdict = verdictOf(delivery);
      if (!verdict.verified) throw new Error(verdict.error);
      return verdict.events[0].eventId;
    });
    expect(ids[0]).toBe(ids[1]);
  });

  it('releases held notifications latest first, and unholding sends what queued', async () => {
    await inspect('notifications/hold', { hold: true });
    const first = challenged(await authorize(CARDS.required));
    const second = challenged(await authorize(CARDS.required));
    const third = challenged(await authorize(CARDS.required));
    for (const challenge of [first, second]) await answer(challenge.url, 'approve');

    await inspect('notifications/release', { reverse: true });
    expect(receiver.received.map((d) => JSON.parse(d.body).data.charge.id)).toEqual([second.reference, first.reference]);

    await answer(third.url, 'fail');
    expect(receiver.received).toHaveLength(2);
    expect(await inspect('notifications/hold', { hold: false })).toEqual({ holding: false });
    await sim.notifier.idle();
    expect(receiver.received.map((d) => JSON.parse(d.body).data.charge.id)).toEqual([second.reference, first.reference, third.reference]);
  });
});

describe('external authentication data', () => {
  it.each([
    [CARDS.required, {}, { kind: 'approved', authorizedAmount: 10_000 }],
    [CARDS.declinedAfter, {}, { kind: 'hard_decline', declineCode: 'card_declined' }],
    [CARDS.stepUp, {}, { kind: 'approved' }],
    [CARDS.stepUp, { requested: true }, { kind: 'approved' }],
  ])('from an earlier challenge of %s skips the challenge', async (number, request, outcome) => {
    const external = await authenticatedOnce(number);

    const output = await authorize(number, { threeDSecure: { ...request, external } });

    expect(output.outcome).toMatchObject(outcome);
    expect((await inspect('stats')).challenges.total).toBe(1);
    expect(output.exchange.request.body).toMatchObject({ three_d_secure: { external: true } });
    expect(JSON.stringify(output.exchange)).not.toContain(external.cavv);
  });

  it.each([
    ['a forged cavv', (data: ExternalAuthentication) => ({ ...data, cavv: Buffer.alloc(20, 7).toString('base64') })],
    ['another eci', (data: ExternalAuthentication) => ({ ...data, eci: '07' })],
    ['another directory-server id', (data: ExternalAuthentication) => ({ ...data, dsTransactionId: '00000000-0000-4000-8000-000000000000' })],
  ])('with %s counts as absent: the card is challenged', async (_, alter) => {
    const external = alter(await authenticatedOnce(CARDS.required));
    expect((await authorize(CARDS.required, { threeDSecure: { external } })).outcome.kind).toBe('requires_action');
  });

  it('issued for another card counts as absent', async () => {
    const external = await authenticatedOnce(CARDS.required);
    expect((await authorize(CARDS.stepUp, { threeDSecure: { external } })).outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'authentication_required' });
  });
});

describe('the charge look-up', () => {
  it('serves a charge and its authentication data only to the api key that made it', async () => {
    const key = nextKey();
    const { reference, url } = challenged(await authorize(CARDS.required, { key }));
    await answer(url, 'approve');

    const mine = await fetch(`${simulator.url}/v1/charges/${reference}`, { headers: { authorization: `Bearer ${API_KEY}` } });
    expect(mine.status).toBe(200);
    expect(await mine.json()).toMatchObject({ id: reference, status: 'authorized', idempotency_key: key, next_action: null, three_d_secure: { eci: '05' } });

    const theirs = await fetch(`${simulator.url}/v1/charges/${reference}`, { headers: { authorization: `Bearer ${OTHER_KEY}` } });
    expect(theirs.status).toBe(404);
    expect((await complete(reference, { api_key: OTHER_KEY })).outcome.kind).toBe('unknown');

    const lookup = (apiKey: string): Promise<any> => fetch(`${simulator.url}/v1/operations/${key}`, { headers: { authorization: `Bearer ${apiKey}` } }).then((r) => r.json());
    expect((await lookup(API_KEY)).charge.three_d_secure).toMatchObject({ eci: '05' });
    expect((await lookup(OTHER_KEY)).charge.three_d_secure).toBeNull();
  });

  it('gives an unknown outcome, never a decline, when the charge cannot be read', async () => {
    expect((await complete('sch_nope')).outcome).toMatchObject({ kind: 'unknown', error: expect.stringContaining('404') });
    const gone = createSandboxAdapter({ baseUrl: 'http://127.0.0.1:9', timeoutMs: 1_000 });
    try {
      const output = await gone.completeAuthentication({ credentials, idempotencyKey: 'ch_x:authenticate', reference: 'ch_x', providerReference: 'sch_x', returnParams: {} });
      expect(output.outcome).toMatchObject({ kind: 'unknown', error: expect.stringContaining('ECONNREFUSED') });
    } finally {
      await gone.close();
    }
  });
});

describe('parseWebhook', () => {
  const now = () => Math.floor(Date.now() / 1000);
  const event = {
    id: 'evt_sim_01TEST', type: 'charge.authentication_completed', created: now(),
    data: { charge: { id: 'sch_01TEST', object: 'charge', status: 'declined', decline_code: 'authentication_failed', idempotency_key: 'ch_01TEST',
      amount: 100, currency: 'USD', authorized_amount: 0, captured_amount: 0, refunded_amount: 0, last4: '3184', three_d_secure: null } },
  };
  const rawBody = JSON.stringify(event);
  const parse = (signature: string | undefined, body = rawBody, creds: SandboxCredentials = credentials) =>
    parseSandboxWebhook({ rawBody: body, headers: signature === undefined ? {} : { 'simulator-signature': signature }, credentials: creds });

  it('accepts the simulator\'s signature and normalizes the event', () => {
    const verdict = parse(simulatorSignature(rawBody, API_KEY, now()));
    expect(verdict).toMatchObject({
      verified: true,
      events: [{ eventId: 'evt_sim_01TEST', chargeId: 'ch_01TEST', providerReference: 'sch_01TEST', operation: 'authorize',
        outcome: { kind: 'hard_decline', declineCode: 'authentication_failed' }, providerCode: 'authentication_failed' }],
    });
    if (verdict.verified) expect(verdict.events[0].authentication).toBeUndefined();
  });

  // Signatures are made when each case runs, so that the clock means what the case says.
  it.each([
    ['no header', () => undefined, rawBody, credentials, /no Simulator-Signature/],
    ['a malformed header', () => 'v1=abc', rawBody, credentials, /malformed/],
    ['a bad signature', () => `t=${now()},v1=${'0'.repeat(64)}`, rawBody, credentials, /no signature matches/],
    ['a stale timestamp', () => simulatorSignature(rawBody, API_KEY, now() - 310), rawBody, credentials, /tolerance/],
    ['a timestamp far ahead', () => simulatorSignature(rawBody, API_KEY, now() + 310), rawBody, credentials, /tolerance/],
    ['another api key', () => simulatorSignature(rawBody, OTHER_KEY, now()), rawBody, credentials, /no signature matches/],
    ['an altered body', () => simulatorSignature(rawBody, API_KEY, now()), rawBody.replace('declined', 'authorized'), credentials, /no signature matches/],
    ['a config without an api key', () => simulatorSignature(rawBody, API_KEY, now()), rawBody, {} as SandboxCredentials, /no api_key/],
    ['a body that is not an event', () => simulatorSignature('[]', API_KEY, now()), '[]', credentials, /not a simulator event/],
  ])('refuses %s', (_, signature, body, creds, error) => {
    const verdict = parse(signature(), body, creds);
    expect(verdict.verified).toBe(false);
    if (!verdict.verified) expect(verdict.error).toMatch(error);
  });

  it('reports no operation for another event type', () => {
    const other = JSON.stringify({ ...event, type: 'charge.updated' });
    const verdict = parse(simulatorSignature(other, API_KEY, now()), other);
    if (!verdict.verified) throw new Error(verdict.error);
    expect(verdict.events[0]).toMatchObject({ type: 'charge.updated', providerReference: 'sch_01TEST' });
    expect(verdict.events[0].operation).toBeUndefined();
    expect(verdict.events[0].outcome).toBeUndefined();
  });
});

describe('pure rules', () => {
  it('signs the way the adapter verifies', () => {
    for (const [body, key, t] of [['{}', 'k', 1], [JSON.stringify({ a: 'ü' }), API_KEY, 1_767_225_600]] as const) {
      expect(signatureHeader(body, key, t)).toBe(simulatorSignature(body, key, t));
    }
  });

  it.each([[1, 50], [2, 100], [3, 200], [4, 400], [5, 800], [6, 1_600], [7, 2_000], [8, 2_000]])('waits %i → %i ms before a retry', (retry, ms) => {
    expect(retryDelayMs(retry)).toBe(ms);
  });

  it.each([
    [CARDS.required, false, false, { kind: 'challenge' }],
    [CARDS.declinedAfter, false, false, { kind: 'challenge', declineAfterAuthentication: 'card_declined' }],
    [CARDS.declinedAfter, false, true, { kind: 'decline', declineCode: 'card_declined' }],
    [CARDS.optional, false, false, { kind: 'approve' }],
    [CARDS.optional, true, false, { kind: 'challenge' }],
    [CARDS.stepUp, false, false, { kind: 'decline', declineCode: 'authentication_required' }],
    [CARDS.stepUp, true, false, { kind: 'challenge' }],
    [CARDS.stepUp, false, true, { kind: 'approve' }],
    [CARDS.plain, true, false, { kind: 'approve' }],
    ['4000000000000002', true, false, { kind: 'decline', declineCode: 'card_declined' }],
  ])('authorizationStep(%s, requested %s, authenticated %s) is %o', (number, requested, authenticated, step) => {
    const verdict = judgeCard({ number, exp_month: 12, exp_year: 2099 }, new Date());
    expect(authorizationStep(verdict, { requested, authenticated })).toEqual(step);
  });
});

it('never puts an authentication value, card number or api key in an exchange record', () => {
  expect(exchanges.length).toBeGreaterThan(30);
  expect(cavvsSeen.size).toBeGreaterThan(3);
  const recorded = JSON.stringify(exchanges);
  for (const cavv of cavvsSeen) expect(recorded).not.toContain(cavv);
  for (const number of Object.values(CARDS)) expect(recorded).not.toContain(number);
  expect(recorded).not.toContain(API_KEY);
  expect(recorded).toContain('"cavv":"[redacted]"');
});
