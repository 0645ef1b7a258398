import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSandboxAdapter, parseSandboxWebhook, SandboxAdapter, SandboxCredentials } from '../activities/providers/sandbox';
import {
  CardData, DisputeActionOutput, GetStatusOutput, OperationOutput, ProcessorEvent, ProviderExchange, RecurringAuthorization,
} from '../activities/providers/types';
import { createSimulator, RunningSimulator } from '../simulator/server';

// The sandbox processor, exercised the way the worker uses it: through the sandbox adapter, over HTTP.

const API_KEY = 'sk_sim_Zq8Kd0rT4wYp';
const credentials: SandboxCredentials = { api_key: API_KEY };
const CVC = '7318';
const card = (number: string, extra: Partial<CardData> = {}): CardData => ({ number, exp_month: 12, exp_year: 2099, cvc: CVC, ...extra });

let simulator: RunningSimulator;
let adapter: SandboxAdapter;
let impatient: SandboxAdapter;
const panSeen = new Set<string>();
const exchanges: ProviderExchange[] = [];
let sequence = 0;
const nextKey = (): string => `ch_test_${Date.now()}_${++sequence}`;

function keep<T extends OperationOutput | GetStatusOutput | DisputeActionOutput>(output: T): T {
  exchanges.push(output.exchange);
  return output;
}

async function authorize(number: string, options: {
  key?: string; amount?: number; installments?: number; creds?: SandboxCredentials; via?: SandboxAdapter; card?: Partial<CardData>; recurring?: RecurringAuthorization;
  capture?: boolean; notificationUrl?: string;
} = {}) {
  panSeen.add(number);
  const via = options.via ?? adapter;
  return keep(await via.authorize({
    credentials: options.creds ?? credentials,
    idempotencyKey: options.key ?? nextKey(),
    amount: options.amount ?? 10_000,
    currency: 'USD',
    installments: options.installments ?? 1,
    card: card(number, options.card),
    ...(options.recurring ? { recurring: options.recurring } : {}),
    ...(options.capture ? { capture: true } : {}),
    ...(options.notificationUrl ? { notificationUrl: options.notificationUrl } : {}),
  }));
}

async function inspect(path: string): Promise<any> {
  const response = await fetch(`${simulator.url}/_inspect/${path}`);
  return response.json();
}

function approvedReference(output: OperationOutput): string {
  if (output.outcome.kind !== 'approved') throw new Error(`expected approval, got ${JSON.stringify(output.outcome)}`);
  return output.outcome.providerReference;
}

beforeAll(async () => {
  simulator = await createSimulator().listen(0);
  adapter = createSandboxAdapter({ baseUrl: simulator.url, timeoutMs: 5_000 });
  impatient = createSandboxAdapter({ baseUrl: simulator.url, timeoutMs: 300 });
});

afterAll(async () => {
  await adapter.close();
  await impatient.close();
  await simulator.close();
});

beforeEach(async () => {
  await fetch(`${simulator.url}/_inspect/reset`, { method: 'POST' });
});

describe('sandbox simulator through the sandbox adapter', () => {
  describe('test cards', () => {
    it.each([
      ['4242424242424242', 'VISA'],
      ['5555555555554444', 'MASTERCARD'],
      ['378282246310005', 'AMEX'],
      ['6011111111111117', 'DISCOVER'],
      ['4111 1111 1111 1111', 'VISA'],
    ])('approves %s (%s)', async (number, network) => {
      const output = await authorize(number, { amount: 12_345 });

      expect(output.outcome).toMatchObject({ kind: 'approved', authorizedAmount: 12_345, capturedAmount: 0, refundedAmount: 0 });
      expect(output.exchange.response?.body).toMatchObject({ status: 'authorized', network, last4: number.slice(-4) });
    });

    it.each([
      ['4000000000000002', 'hard_decline', 'card_declined'],
      ['4000000000009995', 'hard_decline', 'insufficient_funds'],
      ['4000000000000069', 'hard_decline', 'expired_card'],
      ['4000000000000119', 'soft_decline', 'processing_error'],
      ['4242424242424241', 'hard_decline', 'invalid_number'],
    ])('declines %s as %s %s', async (number, kind, declineCode) => {
      const output = await authorize(number);

      expect(output.outcome).toMatchObject({ kind, declineCode });
      expect(output.exchange).toMatchObject({ outcome: kind, decline_code: declineCode });
    });

    it('declines a card past its expiry month', async () => {
      const output = await authorize('4242424242424242', { card: { exp_month: 1, exp_year: 2020 } });
      expect(output.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'expired_card' });
    });

    it('authorizes installments', async () => {
      const output = await authorize('5555555555554444', { installments: 6 });
      expect(output.exchange.response?.body).toMatchObject({ installments: 6 });
    });
  });

  describe('idempotency', () => {
    it('never charges twice for the same key', async () => {
      const key = nextKey();
      const first = await authorize('4242424242424242', { key });
      const second = await authorize('4242424242424242', { key });

      expect(approvedReference(second)).toBe(approvedReference(first));
      expect(await inspect(`keys/${key}`)).toMatchObject({ calls: 2, operation: 'authorize', status_code: 200, charge_id: approvedReference(first) });
      expect((await inspect('stats')).charges).toMatchObject({ total: 1, authorized: 1 });
    });

    it('replays a decline for the same key', async () => {
      const key = nextKey();
      await authorize('4000000000009995', { key });
      const again = await authorize('4000000000009995', { key });

      expect(again.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'insufficient_funds' });
      expect((await inspect('stats')).charges).toMatchObject({ total: 1, declined: 1 });
    });

    it('refuses the same key for a different request: to the adapter an authorization under that key may exist (unknown), which the look-up finds', async () => {
      const key = nextKey();
      const first = await authorize('4242424242424242', { key, amount: 1_000 });
      const other = await authorize('4242424242424242', { key, amount: 2_000 });

      expect(other.outcome).toMatchObject({ kind: 'unknown', error: expect.stringContaining(`the idempotency key ${key} already names an authorization`) });
      expect(other.exchange).toMatchObject({ outcome: 'unknown', response: { status: 422, body: { error: { code: 'idempotency_key_reused' } } } });
      expect((await inspect('stats')).charges.total).toBe(1);
      const status = keep(await adapter.getStatus({ credentials, idempotencyKey: key }));
      expect(status).toMatchObject({ lookup: 'found', outcome: { kind: 'approved', providerReference: approvedReference(first) } });
    });

    it('an authorize retried without its CVC (wiped once the first answer came, which was then lost) is unknown, not a decline', async () => {
      const key = nextKey();
      const first = await authorize('4242424242424242', { key });
      const retried = await authorize('4242424242424242', { key, card: { cvc: undefined } });
      expect(retried.outcome.kind).toBe('unknown');
      expect((await inspect('stats')).charges).toMatchObject({ total: 1, authorized: 1 });
      const status = keep(await adapter.getStatus({ credentials, idempotencyKey: key }));
      expect(status).toMatchObject({ lookup: 'found', outcome: { kind: 'approved', providerReference: approvedReference(first) } });
    });
  });

  describe('capture, void and refund', () => {
    it('captures the whole authorization by default', async () => {
      const charge = approvedReference(await authorize('4242424242424242', { amount: 5_000 }));
      const capture = keep(await adapter.capture({ currency: 'usd', credentials, idempotencyKey: nextKey(), providerReference: charge }));

      expect(capture.outcome).toMatchObject({ kind: 'approved', providerReference: charge, authorizedAmount: 5_000, capturedAmount: 5_000 });
    });

    it('captures part of an authorization, once, and not more than authorized', async () => {
      const charge = approvedReference(await authorize('4242424242424242', { amount: 5_000 }));

      const over = keep(await adapter.capture({ currency: 'usd', credentials, idempotencyKey: nextKey(), providerReference: charge, amount: 5_001 }));
      expect(over.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'amount_exceeds_authorized' });

      const key = nextKey();
      const partial = keep(await adapter.capture({ currency: 'usd', credentials, idempotencyKey: key, providerReference: charge, amount: 3_000 }));
      const repeated = keep(await adapter.capture({ currency: 'usd', credentials, idempotencyKey: key, providerReference: charge, amount: 3_000 }));
      expect(partial.outcome).toMatchObject({ kind: 'approved', capturedAmount: 3_000 });
      expect(repeated.outcome).toEqual(partial.outcome);

      const again = keep(await adapter.capture({ currency: 'usd', credentials, idempotencyKey: nextKey(), providerReference: charge }));
      expect(again.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'invalid_state' });
    });

    it('voids an authorization, which then cannot be captured', async () => {
      const charge = approvedReference(await authorize('4242424242424242'));
      const voided = keep(await adapter.void({ credentials, idempotencyKey: nextKey(), providerReference: charge }));
      const capture = keep(await adapter.capture({ currency: 'usd', credentials, idempotencyKey: nextKey(), providerReference: charge }));

      expect(voided.outcome).toMatchObject({ kind: 'approved', capturedAmount: 0 });
      expect((await inspect('stats')).charges).toMatchObject({ voided: 1 });
      expect(capture.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'invalid_state' });
    });

    it('refunds up to the captured amount and no further', async () => {
      const charge = approvedReference(await authorize('4242424242424242', { amount: 10_000 }));
      keep(await adapter.capture({ currency: 'usd', credentials, idempotencyKey: nextKey(), providerReference: charge, amount: 8_000 }));

      const first = keep(await adapter.refund({ currency: 'usd', credentials, idempotencyKey: 're_1', providerReference: charge, amount: 5_000 }));
      expect(first.outcome).toMatchObject({ kind: 'approved', capturedAmount: 8_000, refundedAmount: 5_000, refundReference: expect.stringMatching(/^sre_/) });

      const over = keep(await adapter.refund({ currency: 'usd', credentials, idempotencyKey: 're_2', providerReference: charge, amount: 3_001 }));
      expect(over.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'refund_exceeds_captured' });

      const rest = keep(await adapter.refund({ currency: 'usd', credentials, idempotencyKey: 're_3', providerReference: charge, amount: 3_000 }));
      expect(rest.outcome).toMatchObject({ kind: 'approved', refundedAmount: 8_000 });
      expect((await inspect('stats'))).toMatchObject({ refunds: 2, charges: { refunded: 1 } });
    });

    it('refunds once per idempotency key', async () => {
      const charge = approvedReference(await authorize('4242424242424242', { amount: 10_000 }));
      keep(await adapter.capture({ currency: 'usd', credentials, idempotencyKey: nextKey(), providerReference: charge }));

      const first = keep(await adapter.refund({ currency: 'usd', credentials, idempotencyKey: 're_once', providerReference: charge, amount: 4_000 }));
      const second = keep(await adapter.refund({ currency: 'usd', credentials, idempotencyKey: 're_once', providerReference: charge, amount: 4_000 }));

      expect(second.outcome).toEqual(first.outcome);
      expect(await inspect('stats')).toMatchObject({ refunds: 1, charges: { partially_refunded: 1 } });
    });

    it('cannot refund an uncaptured charge', async () => {
      const charge = approvedReference(await authorize('4242424242424242'));
      const refund = keep(await adapter.refund({ currency: 'usd', credentials, idempotencyKey: nextKey(), providerReference: charge, amount: 1 }));
      expect(refund.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'invalid_state' });
    });
  });

  describe('status lookup', () => {
    it('answers with the current state of the charge an operation created', async () => {
      const key = nextKey();
      const charge = approvedReference(await authorize('4242424242424242', { key, amount: 7_000 }));
      keep(await adapter.capture({ currency: 'usd', credentials, idempotencyKey: nextKey(), providerReference: charge }));

      const status = keep(await adapter.getStatus({ credentials, idempotencyKey: key }));

      expect(status).toMatchObject({ lookup: 'found', operation: 'authorize', outcome: { kind: 'approved', providerReference: charge, capturedAmount: 7_000 } });
      expect(await inspect(`keys/${key}`)).toMatchObject({ calls: 1, lookups: 1 });
    });

    it('reports a decline it gave', async () => {
      const key = nextKey();
      await authorize('4000000000000002', { key });
      const status = keep(await adapter.getStatus({ credentials, idempotencyKey: key }));
      expect(status).toMatchObject({ lookup: 'found', outcome: { kind: 'hard_decline', declineCode: 'card_declined' } });
    });

    it('says when it never saw a key', async () => {
      const status = keep(await adapter.getStatus({ credentials, idempotencyKey: nextKey() }));
      expect(status).toMatchObject({ lookup: 'not_found', exchange: { outcome: 'not_found' } });
    });
  });

  describe('simulated failures', () => {
    it('fails every call with a transport error during an outage, recording nothing', async () => {
      const key = nextKey();
      const output = await authorize('4242424242424242', { key, creds: { api_key: API_KEY, simulate: { outage: true } } });

      expect(output.outcome).toMatchObject({ kind: 'transport_error' });
      expect(output.exchange.response).toMatchObject({ status: 503, body: { error: { code: 'provider_unavailable' } } });
      expect(await inspect(`keys/${key}`)).toMatchObject({ calls: 1, operation: null });
      expect((await inspect('stats')).charges.total).toBe(0);
    });

    it('answers late with latency_ms', async () => {
      const output = await authorize('4242424242424242', { creds: { api_key: API_KEY, simulate: { latency_ms: 250 } } });

      expect(output.outcome.kind).toBe('approved');
      expect(output.exchange.duration_ms).toBeGreaterThanOrEqual(240);
    });

    it('gives an unknown outcome when the answer is later than the client waits, and the charge is found later', async () => {
      const key = nextKey();
      const output = await authorize('4242424242424242', { key, via: impatient, creds: { api_key: API_KEY, simulate: { latency_ms: 3_000 } } });
      expect(output.outcome.kind).toBe('unknown');

      const status = keep(await adapter.getStatus({ credentials, idempotencyKey: key }));
      expect(status).toMatchObject({ lookup: 'found', outcome: { kind: 'approved' } });
    });

    it('blackhole: authorizes but never answers; the status lookup tells the real outcome', async () => {
      const key = nextKey();
      const blackhole: SandboxCredentials = { api_key: API_KEY, simulate: { blackhole: true } };

      const output = await authorize('4242424242424242', { key, via: impatient, creds: blackhole, amount: 4_200 });
      expect(output.outcome.kind).toBe('unknown');
      expect(output.exchange.response).toBeUndefined();

      const status = keep(await impatient.getStatus({ credentials: blackhole, idempotencyKey: key }));
      expect(status).toMatchObject({ lookup: 'found', operation: 'authorize', outcome: { kind: 'approved', authorizedAmount: 4_200 } });

      // Retrying the same key once the provider answers again returns that charge, not a new one.
      const retry = await authorize('4242424242424242', { key, creds: credentials, amount: 4_200 });
      expect(status.lookup === 'found' && status.outcome.kind === 'approved' && status.outcome.providerReference).toBe(approvedReference(retry));
      expect((await inspect('stats')).charges.total).toBe(1);
    });

    it('declines everything with decline_rate 1 and nothing with decline_rate 0', async () => {
      const always = await authorize('4242424242424242', { creds: { api_key: API_KEY, simulate: { decline_rate: 1 } } });
      const never = await authorize('4242424242424242', { creds: { api_key: API_KEY, simulate: { decline_rate: 0 } } });

      expect(always.outcome).toMatchObject({ kind: 'hard_decline', declineCode: 'card_declined' });
      expect(never.outcome.kind).toBe('approved');
    });

    it('declines softly with issuer_unavailable at soft_decline_rate 1 (another provider may approve) and never at 0', async () => {
      const always = await authorize('4242424242424242', { creds: { api_key: API_KEY, simulate: { soft_decline_rate: 1 } } });
      const never = await authorize('4242424242424242', { creds: { api_key: API_KEY, simulate: { soft_decline_rate: 0 } } });

      expect(always.outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'issuer_unavailable' });
      expect(never.outcome.kind).toBe('approved');
    });

    it('draws the hard and the soft share from one draw: decline_rate first, soft_decline_rate next', async () => {
      const drawing = (draw: number) => createSimulator({ random: () => draw }).listen(0);
      const simulate = { decline_rate: 0.2, soft_decline_rate: 0.3 };
      const outcomes: string[] = [];
      for (const draw of [0.1, 0.3, 0.6]) {
        const sim = await drawing(draw);
        const via = createSandboxAdapter({ baseUrl: sim.url, timeoutMs: 5_000 });
        try {
          const { outcome } = await authorize('4242424242424242', { via, creds: { api_key: API_KEY, simulate } });
          outcomes.push(outcome.kind === 'approved' ? 'approved' : `${outcome.kind}:${'declineCode' in outcome ? outcome.declineCode : ''}`);
        } finally {
          await via.close();
          await sim.close();
        }
      }

      expect(outcomes).toEqual(['hard_decline:card_declined', 'soft_decline:issuer_unavailable', 'approved']);
    });

    it('rejects a call without an api key (soft: another config may work)', async () => {
      const output = await authorize('4242424242424242', { creds: { api_key: '' } });

      expect(output.outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'invalid_credentials' });
      expect(output.exchange.response?.status).toBe(401);
    });

    it('gives a transport error when the processor refuses the connection', async () => {
      const gone = await createSimulator().listen(0);
      await gone.close();
      const orphan = createSandboxAdapter({ baseUrl: gone.url, timeoutMs: 1_000 });
      try {
        const output = await authorize('4242424242424242', { via: orphan });
        const status = keep(await orphan.getStatus({ credentials, idempotencyKey: nextKey() }));

        expect(output.outcome).toMatchObject({ kind: 'transport_error', error: expect.stringContaining('ECONNREFUSED') });
        expect(status).toMatchObject({ lookup: 'failed' });
      } finally {
        await orphan.close();
      }
    });
  });

  describe('stored credentials', () => {
    const customer: RecurringAuthorization = { model: 'subscription', initiator: 'customer' };
    const merchant = (networkTransactionId?: string): RecurringAuthorization => ({ model: 'subscription', initiator: 'merchant', ...(networkTransactionId ? { networkTransactionId } : {}) });
    const ntid = (output: OperationOutput) => (output.outcome.kind === 'approved' ? output.outcome.networkTransactionId : undefined);

    it('answers an approval with a network transaction id of 15 digits, and records the flags each authorization carried', async () => {
      const firstKey = nextKey();
      const first = await authorize('4242424242424242', { key: firstKey, recurring: customer });
      const anchor = ntid(first);
      expect(anchor).toMatch(/^[1-9]\d{14}$/);
      const renewalKey = nextKey();
      const renewal = await authorize('4242424242424242', { key: renewalKey, recurring: merchant(anchor), card: { cvc: undefined } });

      expect(ntid(renewal)).toMatch(/^\d{15}$/);
      expect(ntid(renewal)).not.toBe(anchor);
      expect((await inspect(`keys/${firstKey}`)).stored_credential).toEqual({ model: 'subscription', initiator: 'customer' });
      expect((await inspect(`keys/${renewalKey}`)).stored_credential).toEqual({ model: 'subscription', initiator: 'merchant', network_transaction_id: anchor });
      // The exchange shows the flags and that an id went, not the id.
      expect(renewal.exchange.request.body).toMatchObject({ stored_credential: { model: 'subscription', initiator: 'merchant', network_transaction_id: true } });
    });

    it('a declined authorization has no network transaction id; a plain one records no flags', async () => {
      const key = nextKey();
      const declined = await authorize('4000000000000002', { key });
      expect(declined.outcome.kind).toBe('hard_decline');
      expect((await inspect(`keys/${key}`)).stored_credential).toBeNull();
    });

    it('4000002500003155 asks for 3-D Secure on a customer-initiated payment, not on a merchant-initiated one that references an earlier approval', async () => {
      const onSession = await authorize('4000002500003155', { recurring: customer });
      const offSessionWithout = await authorize('4000002500003155', { recurring: merchant(), card: { cvc: undefined } });
      const offSession = await authorize('4000002500003155', { recurring: merchant('123456789012345'), card: { cvc: undefined } });

      expect(onSession.outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'authentication_required' });
      expect(offSessionWithout.outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'authentication_required' });
      expect(offSession.outcome.kind).toBe('approved');
    });

    it('4000002760003184 declines a merchant-initiated authorization authentication_required (nobody to challenge)', async () => {
      const offSession = await authorize('4000002760003184', { recurring: merchant('123456789012345'), card: { cvc: undefined } });
      expect(offSession.outcome).toMatchObject({ kind: 'soft_decline', declineCode: 'authentication_required' });
    });

    it.each([
      [{ model: 'installment', initiator: 'customer' }],
      [{ model: 'subscription', initiator: 'issuer' }],
      [{ model: 'subscription', initiator: 'customer', network_transaction_id: '123456789012345' }],
      [{ model: 'subscription', initiator: 'merchant', network_transaction_id: 'not an id!' }],
    ])('refuses stored_credential %j', async (stored) => {
      const response = await fetch(`${simulator.url}/v1/charges`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'idempotency-key': nextKey() },
        body: JSON.stringify({ amount: 100, currency: 'USD', card: card('4242424242424242'), stored_credential: stored }),
      });
      expect(response.status).toBe(400);
    });
  });

  describe('the decline_code knob', () => {
    it.each([
      ['stolen_card', 'hard_decline'], ['insufficient_funds', 'hard_decline'], ['do_not_honor', 'hard_decline'], ['issuer_unavailable', 'soft_decline'],
    ])('declines every new authorization with %s (%s), whatever the card', async (code, kind) => {
      const creds = { api_key: API_KEY, simulate: { decline_code: code } } as SandboxCredentials;
      for (const number of ['4242424242424242', '4000000000000002', '4000002760003184']) {
        expect((await authorize(number, { creds })).outcome).toMatchObject({ kind, declineCode: code });
      }
    });

    it('refuses a code it does not know', async () => {
      const response = await fetch(`${simulator.url}/v1/operations/anything`, {
        headers: { authorization: `Bearer ${API_KEY}`, 'x-simulate': JSON.stringify({ decline_code: 'made_up' }) },
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: 'invalid_request', message: expect.stringContaining('decline_code must be one of') } });
    });
  });

  describe('the processor API', () => {
    it('requires an idempotency key on every operation', async () => {
      const response = await fetch(`${simulator.url}/v1/charges`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ amount: 100, currency: 'USD', card: card('4242424242424242') }),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: 'invalid_request' } });
    });

    it('rejects malformed simulate knobs', async () => {
      const response = await fetch(`${simulator.url}/v1/operations/anything`, {
        headers: { authorization: `Bearer ${API_KEY}`, 'x-simulate': '{"latency_ms":-1}' },
      });
      expect(response.status).toBe(400);
    });

    it.each([1.5, -0.1, '0.5'])('rejects soft_decline_rate %j', async (rate) => {
      const response = await fetch(`${simulator.url}/v1/operations/anything`, {
        headers: { authorization: `Bearer ${API_KEY}`, 'x-simulate': JSON.stringify({ soft_decline_rate: rate }) },
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: 'invalid_request', message: 'soft_decline_rate must be a number from 0 to 1' } });
    });
  });

  describe('disputes', () => {
    // The dispute test cards, as Stripe's: a chargeback, an inquiry, an early fraud warning.
    const CHARGEBACK = '4000000000000259';
    const INQUIRY = '4000000000001976';
    const WARNING = '4000000000005423';
    const fast = (simulate: SandboxCredentials['simulate'] = {}): SandboxCredentials => ({
      api_key: API_KEY, simulate: { dispute_after_ms: 20, dispute_decision_ms: 50, ...simulate },
    });
    let receiver: { url: string; events: ProcessorEvent[]; close(): Promise<void> };

    beforeAll(async () => {
      const events: ProcessorEvent[] = [];
      const server: Server = createServer((req, res) => {
        let body = '';
        req.setEncoding('utf8');
        req.on('data', (chunk: string) => { body += chunk; });
        req.on('end', () => {
          // Read as the engine reads them: verified with the config's api key, normalized.
          const verdict = parseSandboxWebhook({ headers: { 'simulator-signature': String(req.headers['simulator-signature']) }, rawBody: body, credentials });
          if (verdict.verified) events.push(...verdict.events);
          res.writeHead(verdict.verified ? 200 : 401).end();
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      receiver = {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
        events,
        close: () => new Promise<void>((resolve) => server.close(() => resolve())),
      };
    });
    afterAll(() => receiver.close());
    beforeEach(() => { receiver.events.length = 0; });

    async function until<T>(what: string, read: () => T | undefined | Promise<T | undefined>, timeoutMs = 5_000): Promise<T> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = await read();
        if (value !== undefined) return value;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }

    const eventsOf = (disputeId: string) => receiver.events.filter((event) => event.dispute?.processorDisputeId === disputeId);
    const typesOf = (disputeId: string) => eventsOf(disputeId).map((event) => event.type);

    /** A captured charge of a dispute test card, and the dispute that follows. */
    async function disputed(number: string, creds = fast(), amount = 10_000) {
      const key = nextKey();
      const charge = approvedReference(await authorize(number, { key, amount, creds, capture: true, notificationUrl: receiver.url }));
      const dispute = await until('the dispute', async () => (await inspect('disputes')).disputes.find((found: { charge_id: string }) => found.charge_id === charge));
      return { key, charge, dispute };
    }

    function submit(disputeId: string, uncategorizedText: string, options: { key?: string; creds?: SandboxCredentials } = {}) {
      return adapter.submitDisputeEvidence({
        credentials: options.creds ?? fast(), processorDisputeId: disputeId, idempotencyKey: options.key ?? `${disputeId}:submit`,
        evidence: { customer_name: 'Ada Lovelace', uncategorized_text: uncategorizedText }, reason: 'fraudulent',
      }).then(keep);
    }

    it('disputes a captured 4000000000000259 as fraudulent: created, then the amount withdrawn with a fee, each a signed notification', async () => {
      const { key, charge, dispute } = await disputed(CHARGEBACK, fast(), 7_500);

      expect(dispute).toMatchObject({
        id: expect.stringMatching(/^sdp_/), charge_id: charge, charge_idempotency_key: key, amount: 7_500, currency: 'USD', reason: 'fraudulent',
        status: 'needs_response', is_inquiry: false, evidence_submitted_at: null,
      });
      const due = Date.parse(dispute.evidence_due_by) - Date.parse(dispute.created_at);
      expect(due).toBe(7 * 24 * 3_600_000);
      await until('the withdrawal', () => typesOf(dispute.id).includes('dispute.funds_withdrawn') || undefined);
      const [created, withdrawn] = eventsOf(dispute.id);
      expect(created).toMatchObject({
        type: 'dispute.created', providerReference: charge, chargeId: key,
        dispute: {
          processorDisputeId: dispute.id, providerReference: charge, chargeId: key, status: 'NEEDS_RESPONSE', reason: 'fraudulent',
          processorReason: 'fraudulent', amount: 7_500, currency: 'USD', isInquiry: false, evidenceDueBy: dispute.evidence_due_by,
        },
      });
      expect(created.operation).toBeUndefined();
      expect(withdrawn.dispute).toMatchObject({ funds: { kind: 'withdrawn', amount: 7_500, fee: 1_500, currency: 'USD' } });
      expect(Date.parse(withdrawn.dispute!.occurredAt)).toBeGreaterThanOrEqual(Date.parse(created.dispute!.occurredAt));
    });

    it('decides a submission with winning_evidence as won, reinstating the funds; the key replays, a second submission is refused', async () => {
      const { dispute } = await disputed(CHARGEBACK);

      const first = await submit(dispute.id, 'see the delivery photo: winning_evidence');
      expect(first).toMatchObject({ result: 'done', exchange: { operation: 'dispute_submit', outcome: 'approved', idempotency_key: `${dispute.id}:submit` } });
      expect(first.exchange.request.body).toEqual({ evidence: ['customer_name', 'uncategorized_text'], submit: true });
      expect(JSON.stringify(first.exchange)).not.toContain('Ada Lovelace');
      expect((await submit(dispute.id, 'see the delivery photo: winning_evidence')).result).toBe('done');
      expect(await submit(dispute.id, 'more', { key: `${dispute.id}:again` })).toMatchObject({
        result: 'refused', reason: 'dispute_already_submitted', exchange: { outcome: 'hard_decline', decline_code: 'dispute_already_submitted' },
      });

      await until('the reinstatement', () => typesOf(dispute.id).includes('dispute.funds_reinstated') || undefined);
      expect(typesOf(dispute.id)).toEqual(['dispute.created', 'dispute.funds_withdrawn', 'dispute.updated', 'dispute.closed', 'dispute.funds_reinstated']);
      const statuses = eventsOf(dispute.id).map((event) => event.dispute?.status);
      expect(statuses.slice(2)).toEqual(['UNDER_REVIEW', 'WON', 'WON']);
      expect(eventsOf(dispute.id)[4].dispute?.funds).toEqual({ kind: 'reinstated', amount: 10_000, fee: 0, currency: 'USD' });
      expect(await inspect(`disputes/${dispute.id}`)).toMatchObject({
        status: 'won', evidence: { uncategorized_text: 'see the delivery photo: winning_evidence' }, evidence_submitted_at: expect.any(String),
        balance_transactions: [{ type: 'withdrawal', amount: 10_000, fee: 1_500 }, { type: 'reinstatement', amount: 10_000, fee: 0 }],
      });
      expect(await inspect(`keys/${dispute.id}:submit`)).toMatchObject({ calls: 2, operation: 'dispute_evidence', status_code: 200 });
    });

    it('decides a submission without winning_evidence as lost, the funds kept', async () => {
      const { dispute } = await disputed(CHARGEBACK);
      expect((await submit(dispute.id, 'we shipped it')).result).toBe('done');

      await until('the decision', () => typesOf(dispute.id).includes('dispute.closed') || undefined);
      expect(eventsOf(dispute.id).at(-1)?.dispute?.status).toBe('LOST');
      expect((await inspect(`disputes/${dispute.id}`)).balance_transactions).toHaveLength(1);
    });

    it('loses an accepted dispute at once; an answer after that is refused', async () => {
      const { dispute } = await disputed(CHARGEBACK);

      const accepted = keep(await adapter.acceptDispute({ credentials: fast(), processorDisputeId: dispute.id, idempotencyKey: `${dispute.id}:accept` }));
      expect(accepted).toMatchObject({ result: 'done', exchange: { operation: 'dispute_accept', outcome: 'approved' } });
      expect((await inspect(`disputes/${dispute.id}`)).status).toBe('lost');
      expect(await submit(dispute.id, 'winning_evidence')).toMatchObject({ result: 'refused', reason: 'dispute_closed' });
      await until('the closing notification', () => typesOf(dispute.id).includes('dispute.closed') || undefined);
    });

    it('4000000000001976 is an inquiry: no money moves, and a submission closes it', async () => {
      const { dispute } = await disputed(INQUIRY);
      expect(dispute).toMatchObject({ status: 'warning_needs_response', is_inquiry: true, reason: 'general', balance_transactions: [] });

      expect((await submit(dispute.id, 'anything')).result).toBe('done');
      await until('the closing', () => typesOf(dispute.id).includes('dispute.closed') || undefined);
      expect(eventsOf(dispute.id).map((event) => event.dispute?.status)).toEqual(['WARNING_NEEDS_RESPONSE', 'WARNING_UNDER_REVIEW', 'WARNING_CLOSED']);
      expect(eventsOf(dispute.id).every((event) => event.dispute?.isInquiry === true && !event.dispute.funds)).toBe(true);
    });

    it('4000000000005423 is an early fraud warning that closes by itself', async () => {
      const { dispute } = await disputed(WARNING);
      expect(dispute).toMatchObject({ status: 'warning_needs_response', is_inquiry: true, reason: 'fraudulent' });

      await until('the closing', () => typesOf(dispute.id).includes('dispute.closed') || undefined);
      expect(typesOf(dispute.id)).toEqual(['dispute.created', 'dispute.closed']);
      expect((await inspect(`disputes/${dispute.id}`))).toMatchObject({ status: 'warning_closed', balance_transactions: [] });
    });

    it('refuses an answer after evidence_due_by, and loses the dispute nobody answered', async () => {
      const creds = fast({ dispute_due_in_ms: 200 });
      const { dispute } = await disputed(CHARGEBACK, creds);
      expect(Date.parse(dispute.evidence_due_by) - Date.parse(dispute.created_at)).toBe(200);

      await new Promise((resolve) => setTimeout(resolve, 220));
      expect(await submit(dispute.id, 'winning_evidence', { creds })).toMatchObject({ result: 'refused', reason: 'dispute_deadline_passed' });
      await until('the loss', () => typesOf(dispute.id).includes('dispute.closed') || undefined);
      expect((await inspect(`disputes/${dispute.id}`)).status).toBe('lost');
    });

    it('disputes a charge only once it is captured, for the amount captured', async () => {
      const charge = approvedReference(await authorize(CHARGEBACK, { creds: fast(), notificationUrl: receiver.url }));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await inspect('disputes')).disputes).toEqual([]);

      keep(await adapter.capture({ credentials: fast(), idempotencyKey: nextKey(), providerReference: charge, amount: 4_000, currency: 'USD' }));
      const dispute = await until('the dispute', async () => (await inspect('disputes')).disputes[0]);
      expect(dispute).toMatchObject({ charge_id: charge, amount: 4_000 });
    });

    it('disputes no other card, and shows a dispute to the api key of its charge only', async () => {
      approvedReference(await authorize('4242424242424242', { creds: fast(), capture: true, notificationUrl: receiver.url }));
      const { dispute } = await disputed(CHARGEBACK);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await inspect('disputes')).disputes).toHaveLength(1);

      const get = (key: string) => fetch(`${simulator.url}/v1/disputes/${dispute.id}`, { headers: { authorization: `Bearer ${key}` } });
      expect((await get(API_KEY)).status).toBe(200);
      expect((await get('sk_sim_someone_else')).status).toBe(404);
      expect(await submit(dispute.id, 'winning_evidence', { creds: { api_key: 'sk_sim_someone_else' } })).toMatchObject({ result: 'refused', reason: 'dispute_not_found' });
    });

    it('fails (to be asked again) when the processor is out, and refuses evidence it does not know', async () => {
      const { dispute } = await disputed(CHARGEBACK);
      expect(await submit(dispute.id, 'winning_evidence', { creds: fast({ outage: true }) })).toMatchObject({ result: 'failed', exchange: { outcome: 'transport_error' } });

      const odd = keep(await adapter.submitDisputeEvidence({
        credentials: fast(), processorDisputeId: dispute.id, idempotencyKey: `${dispute.id}:odd`, reason: 'fraudulent',
        evidence: { shoe_size: '42' } as never,
      }));
      expect(odd).toMatchObject({ result: 'refused', reason: 'invalid_request' });
      expect((await inspect(`disputes/${dispute.id}`)).status).toBe('needs_response');
    });

    it.each([['dispute_after_ms', -1], ['dispute_due_in_ms', 1.5], ['dispute_decision_ms', 3_600_001]])('rejects %s %j', async (knob, value) => {
      const response = await fetch(`${simulator.url}/v1/operations/anything`, {
        headers: { authorization: `Bearer ${API_KEY}`, 'x-simulate': JSON.stringify({ [knob]: value }) },
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: 'invalid_request', message: expect.stringContaining(`${knob} must be an integer`) } });
    });
  });

  it('never puts a card number, CVC or api key in an exchange record', () => {
    expect(exchanges.length).toBeGreaterThan(20);
    const recorded = JSON.stringify(exchanges);
    for (const pan of panSeen) {
      expect(recorded).not.toContain(pan);
      expect(recorded).not.toContain(pan.replace(/\s/g, ''));
    }
    expect(recorded).not.toContain(API_KEY);
    expect(recorded).not.toMatch(/"cvc"|"number"|bearer/i);
    expect(recorded).not.toContain(`"${CVC}"`);
  });
});
