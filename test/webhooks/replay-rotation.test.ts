import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { envTable } from '../../db/environments';
import { bearer, createMerchant, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { webhookClient } from '../../workflows/webhooks/client';
import { appendHeld, emit, fanOutFor, enabledEndpoint, expectVerified, getDelivery, Receiver, waitFor, waitForDelivery } from './support';

let stack: TestStack;
let worker: RunningWorker;
const receivers: Receiver[] = [];
const receiver = async () => { const r = await Receiver.start(); receivers.push(r); return r; };
const isHandshake = (req: { type?: string }) => req.type === 'webhook_endpoint.verification';

beforeAll(async () => {
  stack = await startStack({ WEBHOOK_RETRY_SCHEDULE: '200ms,400ms,800ms' });
  worker = await startWorker(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

describe('webhook replay and recover', () => {
  it('replays a succeeded delivery with the same webhook-id as a new attempt sequence', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    const { eventIds: [eventId], deliveryIds: [id] } = await emit(stack, m, [{ event: 'payment_intent.succeeded' }]);
    await waitForDelivery(stack, m, id, 'succeeded');

    const replay = await stack.http.post(`/v1/webhook-deliveries/${id}/replay`).set(bearer(m.secretKey)).send({});
    expect(replay.status).toBe(200);
    expect(replay.body.data).toMatchObject({ object: 'webhook_delivery', id, status: 'pending', replay_count: 1 });
    const done = await waitFor(async () => {
      const d = await getDelivery(stack, m, id);
      return d.status === 'succeeded' && d.attempt_count === 2 ? d : undefined;
    }, 'the replay to land');
    expect(done.attempts.map((a: any) => [a.attempt_no, a.trigger, a.status_code])).toEqual([[1, 'automatic', 200], [2, 'replay', 200]]);
    const reqs = r.events(eventId);
    expect(reqs).toHaveLength(2);
    expect(reqs[1].headers['webhook-id']).toBe(reqs[0].headers['webhook-id']);
    expect(reqs[1].body).toBe(reqs[0].body);
    for (const q of reqs) expectVerified(q, endpoint.secret);
    // The attempt is recorded before the workflow returns: wait for the run to end, then check how it ended.
    const handle = (await stack.deps.temporal()).workflow.getHandle(`webhook-delivery/${id}/replay-1`);
    await handle.result();
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  });

  it('replays a dead-lettered delivery once the receiver is fixed; a retrying one is woken up at once', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    await enabledEndpoint(stack, m, r);
    let broken = true;
    r.respond = (req) => (isHandshake(req) || !broken ? undefined : { status: 422 });
    const { deliveryIds: [id] } = await emit(stack, m, [{ event: 'charge.failed' }]);
    await waitForDelivery(stack, m, id, 'dead_lettered');
    broken = false;
    await stack.http.post(`/v1/webhook-deliveries/${id}/replay`).set(bearer(m.secretKey)).send({}).expect(200);
    const fixed = await waitForDelivery(stack, m, id, 'succeeded');
    expect(fixed.attempts.map((a: any) => [a.trigger, a.status_code])).toEqual([['automatic', 422], ['replay', 200]]);

    // A delivery waiting an hour for its next retry: replay cuts the wait short.
    r.respond = (req, nth) => (isHandshake(req) || nth > 1 ? undefined : { status: 503 });
    const slow = await emit(stack, m, [{ event: 'charge.failed' }], { webhookRetrySchedule: '1h' });
    const waiting = await waitForDelivery(stack, m, slow.deliveryIds[0], 'failed');
    expect(new Date(waiting.next_attempt_at).getTime() - Date.now()).toBeGreaterThan(40 * 60_000);
    const woken = await stack.http.post(`/v1/webhook-deliveries/${slow.deliveryIds[0]}/replay`).set(bearer(m.secretKey)).send({});
    expect(woken.status).toBe(200);
    expect(woken.body.data.replay_count).toBe(0);
    const after = await waitForDelivery(stack, m, slow.deliveryIds[0], 'succeeded');
    expect(after.attempts.map((a: any) => [a.trigger, a.status_code])).toEqual([['automatic', 503], ['automatic', 200]]);
  });

  it('refuses to replay to a disabled endpoint', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    const { deliveryIds: [id] } = await emit(stack, m, [{ event: 'charge.succeeded' }]);
    await waitForDelivery(stack, m, id, 'succeeded');
    await stack.http.patch(`/v1/webhook-endpoints/${endpoint.id}`).set(bearer(m.secretKey)).send({ disabled: true }).expect(200);
    const res = await stack.http.post(`/v1/webhook-deliveries/${id}/replay`).set(bearer(m.secretKey)).send({});
    expect(res.status).toBe(409);
    expect(res.body.error.details).toMatchObject({ reason: 'invalid_state', status: 'disabled' });
    const other = await createMerchant(stack);
    expect((await stack.http.post(`/v1/webhook-deliveries/${id}/replay`).set(bearer(other.secretKey)).send({})).status).toBe(404);
  });

  it('recovers every failed or dead-lettered delivery in the window and skips succeeded ones', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    let failing = new Set<string>();
    r.respond = (req) => (isHandshake(req) || !failing.has(req.eventId!) ? undefined : { status: 400 });
    const before = new Date(Date.now() - 1000).toISOString();
    const eventIds = await appendHeld(stack, 'production', ['charge.succeeded', 'charge.failed', 'refund.created'].map((event) => ({ event, accountId: m.account.id })));
    failing = new Set(eventIds.slice(0, 2));
    const { deliveryIds } = await fanOutFor(stack)('production', eventIds);
    const byEvent = new Map<string, string>();
    for (const id of deliveryIds) {
      const d = await waitForDelivery(stack, m, id, ['dead_lettered', 'succeeded']);
      byEvent.set(d.event_id, id);
    }
    expect((await stack.http.get(`/v1/webhook-deliveries?endpoint_id=${endpoint.id}&status=dead_lettered`).set(bearer(m.secretKey))).body.total).toBe(2);

    // A window that ends before the deliveries: nothing to do.
    const early = await stack.http.post(`/v1/webhook-endpoints/${endpoint.id}/recover`).set(bearer(m.secretKey))
      .send({ since: new Date(Date.now() - 3_600_000).toISOString(), until: before });
    expect(early.body.data).toMatchObject({ object: 'webhook_recovery', recovered: 0 });

    failing = new Set();
    const res = await stack.http.post(`/v1/webhook-endpoints/${endpoint.id}/recover`).set(bearer(m.secretKey)).send({ since: before });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ object: 'webhook_recovery', endpoint_id: endpoint.id, recovered: 2 });
    for (const eventId of eventIds.slice(0, 2)) await waitForDelivery(stack, m, byEvent.get(eventId)!, 'succeeded');
    expect(r.events(eventIds[0])).toHaveLength(2);
    expect(r.events(eventIds[1])).toHaveLength(2);
    expect(r.events(eventIds[2])).toHaveLength(1);

    const bad = await stack.http.post(`/v1/webhook-endpoints/${endpoint.id}/recover`).set(bearer(m.secretKey)).send({ since: before, until: before });
    expect(bad.status).toBe(400);
    const missing = await stack.http.post(`/v1/webhook-endpoints/${endpoint.id}/recover`).set(bearer(m.secretKey)).send({});
    expect(missing.status).toBe(400);
  });
});

describe('webhook secret rotation', () => {
  it('signs with both secrets until the previous one expires, then with the new one only', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    const oldSecret = endpoint.secret;

    const rotated = await stack.http.post(`/v1/webhook-endpoints/${endpoint.id}/rotate-secret`).set(bearer(m.secretKey)).send({ expire_previous_in_seconds: 2 });
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.data.secret as string;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    expect(rotated.body.data).toMatchObject({ secret_rotation: 1 });
    expect(new Date(rotated.body.data.previous_secret_expires_at).getTime() - Date.now()).toBeLessThanOrEqual(2_000);
    expect((await stack.http.get(`/v1/webhook-endpoints/${endpoint.id}`).set(bearer(m.secretKey))).body.data.secret).toBeNull();

    const during = await emit(stack, m, [{ event: 'payment_intent.succeeded' }]);
    await waitForDelivery(stack, m, during.deliveryIds[0], 'succeeded');
    const [req] = r.events(during.eventIds[0]);
    const signatures = String(req.headers['webhook-signature']).split(' ');
    expect(signatures).toHaveLength(2);
    // Each signature verifies with its own secret alone.
    const ts = String(req.headers['webhook-timestamp']);
    const id = String(req.headers['webhook-id']);
    expect(() => new Webhook(newSecret).verify(req.body, { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': signatures[0] })).not.toThrow();
    expect(() => new Webhook(oldSecret).verify(req.body, { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': signatures[1] })).not.toThrow();
    expect(() => new Webhook(oldSecret).verify(req.body, { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': signatures[0] })).toThrow();
    expectVerified(req, newSecret);
    expectVerified(req, oldSecret);

    // The rotation workflow's durable timer drops the previous secret.
    await waitFor(async () => {
      const row = await stack.db(envTable('production', 'webhook_endpoints')).where({ id: endpoint.id }).first();
      return row.previous_secret_encrypted === null;
    }, 'the previous secret to be dropped', 10_000);
    const client = await stack.deps.temporal();
    expect(await client.workflow.getHandle(`webhook-secret-rotation/${endpoint.id}/1`).result()).toEqual({ dropped: true });

    const after = await emit(stack, m, [{ event: 'payment_intent.succeeded' }]);
    await waitForDelivery(stack, m, after.deliveryIds[0], 'succeeded');
    const [later] = r.events(after.eventIds[0]);
    expect(String(later.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expectVerified(later, newSecret);
    expect(() => expectVerified(later, oldSecret)).toThrow();
    expect((await stack.http.get(`/v1/webhook-endpoints/${endpoint.id}`).set(bearer(m.secretKey))).body.data.previous_secret_expires_at).toBeNull();

    // Secrets never enter the rotation workflow's history.
    const history = await client.workflow.getHandle(`webhook-secret-rotation/${endpoint.id}/1`).fetchHistory();
    const text = JSON.stringify(history, (_k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('utf8') : v));
    for (const s of [oldSecret, newSecret, oldSecret.slice(6), newSecret.slice(6)]) expect(text).not.toContain(s);
  });

  it('is not held up by the finished timer of a rotation whose swap never happened', async () => {
    const m = await createMerchant(stack);
    const endpoint = await enabledEndpoint(stack, m, await receiver());
    // What a request leaves when Postgres fails between starting the timer and swapping the secrets.
    const client = await stack.deps.temporal();
    await webhookClient(client).startSecretRotation({ environment: 'production', endpointId: endpoint.id, rotation: 1, expirePreviousInSeconds: 1 });
    await client.workflow.getHandle(`webhook-secret-rotation/${endpoint.id}/1`).result();

    const rotate = () => stack.http.post(`/v1/webhook-endpoints/${endpoint.id}/rotate-secret`).set(bearer(m.secretKey)).send({ expire_previous_in_seconds: 60 });
    const rotated = await rotate();
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    expect(rotated.body.data.secret_rotation).toBe(1);
    // A timer still running is another request's rotation: refused, as before.
    await webhookClient(client).startSecretRotation({ environment: 'production', endpointId: endpoint.id, rotation: 2, expirePreviousInSeconds: 60 });
    const raced = await rotate();
    expect([raced.status, raced.body.error?.details.reason]).toEqual([409, 'conflict']);
    await client.workflow.getHandle(`webhook-secret-rotation/${endpoint.id}/2`).terminate('test over');
  });
});
