import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendEvents, eventsByIds, type EventRecord } from '../../db/events';
import { envTable, type Environment } from '../../db/environments';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, pay, paymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { enabledEndpoint, environmentOf, expectVerified, Receiver, waitFor } from './support';


/** Appends events and answers the types of those written due for a fan-out, read before the commit (a dispatcher clears them after it). */
async function dueWhenWritten(env: Environment, records: EventRecord[]): Promise<string[]> {
  return stack.db.transaction(async (trx) => {
    const ids = await appendEvents(trx, env, records);
    return (await eventsByIds(trx, env, ids)).filter((e) => e.fan_out_due !== null).map((e) => e.event);
  });
}
let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;
let receiver: Receiver;

beforeAll(async () => {
  sim = await startSimulator();
  receiver = await Receiver.start();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '1000' });
  worker = await startWorker(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await receiver?.close();
  await sim?.close();
});

describe('payment events as webhooks', () => {
  it('delivers a verified payment_intent.succeeded for a real payment, and only the events subscribed to', async () => {
    const f = await paymentsFixture(stack);
    const endpoint = await enabledEndpoint(stack, f.merchant, receiver, { events: ['payment_intent.succeeded', 'charge.succeeded'] });
    const res = await pay(stack, f.merchant, CARDS.visa, { amount: 4321 });
    expect(res.body.data.status).toBe('SUCCEEDED');

    const delivered = await waitFor(async () => {
      const got = receiver.events().filter((r) => JSON.parse(r.body).data?.object?.id === res.body.data.id || JSON.parse(r.body).data?.object?.payment_id === res.body.data.id);
      return got.length >= 2 ? got : undefined;
    }, 'both subscribed events');
    for (const req of delivered) expectVerified(req, endpoint.secret);
    const succeeded = delivered.find((r) => r.type === 'payment_intent.succeeded')!;
    const payload = JSON.parse(succeeded.body);
    expect(payload).toMatchObject({
      object: 'event', type: 'payment_intent.succeeded', api_version: 'v1', account_id: f.merchant.account.id, livemode: true,
      data: { object: { object: 'payment', id: res.body.data.id, status: 'SUCCEEDED', amount: 4321 } },
    });
    expect(succeeded.headers['x-switchboard-event-type']).toBe('payment_intent.succeeded');
    expect(succeeded.headers['webhook-id']).toBe(payload.id);
    expect(delivered.map((r) => r.type).sort()).toEqual(['charge.succeeded', 'payment_intent.succeeded']);
    expect(succeeded.body).not.toContain(CARDS.visa);
  });

  it('writes a transaction\'s events due for the fan-out only while the account has an enabled endpoint, and writes them either way', async () => {
    const f = await paymentsFixture(stack);
    const env = environmentOf(f.merchant);
    const records = (m = f.merchant) => ['payment_intent.created', 'payment_intent.processing'].map((event) => ({ event, accountId: m.account.id, workspaceId: m.workspaceId }));
    const count = async () => Number((await stack.db(envTable(env, 'events')).where({ account_id: f.merchant.account.id }).count({ n: '*' }))[0].n);

    // No endpoint yet: nothing due, but the timeline has the events.
    const eventsBefore = await count();
    expect(await dueWhenWritten(env, records())).toEqual([]);
    expect(await count()).toBe(eventsBefore + 2);

    const endpoint = await enabledEndpoint(stack, f.merchant, receiver);
    expect(await dueWhenWritten(env, records())).toEqual(['payment_intent.created', 'payment_intent.processing']);

    // Another account's endpoint does not count; a disabled one does not either.
    const other = await paymentsFixture(stack);
    expect(await dueWhenWritten(environmentOf(other.merchant), records(other.merchant))).toEqual([]);
    const off = await stack.http.patch(`/v1/webhook-endpoints/${endpoint.id}`).set(bearer(f.merchant.secretKey)).send({ disabled: true });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    expect(await dueWhenWritten(env, records())).toEqual([]);
  });

  it('writes due only the events an enabled endpoint listens to, by the same filter the fan-out matches with', async () => {
    const f = await paymentsFixture(stack);
    const env = environmentOf(f.merchant);
    const types = ['payment_intent.created', 'payment_intent.succeeded', 'charge.succeeded', 'refund.created'];
    const offered = async () => (await dueWhenWritten(env, types.map((event) => ({ event, accountId: f.merchant.account.id, workspaceId: f.merchant.workspaceId })))).sort();
    const endpoint = await enabledEndpoint(stack, f.merchant, receiver, { events: ['payment_intent.succeeded'] });
    expect(await offered()).toEqual(['payment_intent.succeeded']);
    const set = async (events: string[]) => {
      const res = await stack.http.patch(`/v1/webhook-endpoints/${endpoint.id}`).set(bearer(f.merchant.secretKey)).send({ events });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    };
    // A wildcard of a prefix takes that prefix's types only ('charge.*' is not 'payment_intent.*').
    await set(['charge.*', 'refund.created']);
    expect(await offered()).toEqual(['charge.succeeded', 'refund.created']);
    await set(['*']);
    expect(await offered()).toEqual([...types].sort());
  });
});
