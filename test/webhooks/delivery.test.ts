import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendEvents, fanOutLater } from '../../db/events';
import { envTable } from '../../db/environments';
import { webhookClient } from '../../workflows/webhooks/client';
import { WEBHOOK_WORKFLOW_IDS } from '../../contracts/webhooks';
import { bearer, createMerchant, Merchant, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import {
  appendHeld, emit, enabledEndpoint, fanOutFor, expectVerified, getEndpoint, Receiver, waitFor, waitForDelivery,
} from './support';

let stack: TestStack;
let worker: RunningWorker;
const receivers: Receiver[] = [];
const receiver = async () => { const r = await Receiver.start(); receivers.push(r); return r; };

beforeAll(async () => {
  stack = await startStack({ WEBHOOK_RETRY_SCHEDULE: '200ms,400ms,800ms' });
  worker = await startWorker(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function notifications(merchant: Merchant, type: string) {
  return stack.db('core.notifications').where({ account_id: merchant.account.id, type }).orderBy('created_at');
}

describe('webhook delivery', () => {
  it('delivers an event as a signed Standard Webhooks request that the standardwebhooks package verifies', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    const { eventIds: [eventId], deliveryIds } = await emit(stack, m, [{ event: 'payment_intent.succeeded', data: { amount: 1000, currency: 'USD' } }]);
    expect(deliveryIds).toHaveLength(1);
    const delivery = await waitForDelivery(stack, m, deliveryIds[0], 'succeeded');

    const [req] = r.events(eventId);
    const payload = expectVerified(req, endpoint.secret);
    expect(payload).toEqual({
      id: eventId, object: 'event', type: 'payment_intent.succeeded', api_version: 'v1', created_at: expect.stringMatching(/Z$/),
      account_id: m.account.id, livemode: true, data: { object: { amount: 1000, currency: 'USD' } },
    });
    expect(req.headers['webhook-id']).toBe(eventId);
    expect(Number(req.headers['webhook-timestamp'])).toBeCloseTo(Date.now() / 1000, -2);
    expect(req.headers['x-switchboard-id']).toBe(req.headers['webhook-id']);
    expect(req.headers['x-switchboard-timestamp']).toBe(req.headers['webhook-timestamp']);
    expect(req.headers['x-switchboard-signature']).toBe(req.headers['webhook-signature']);
    expect(req.headers['x-switchboard-event-type']).toBe('payment_intent.succeeded');
    expect(req.headers['content-type']).toBe('application/json');

    expect(delivery).toMatchObject({
      object: 'webhook_delivery', endpoint_id: endpoint.id, event_id: eventId, event_type: 'payment_intent.succeeded',
      status: 'succeeded', attempt_count: 1, next_attempt_at: null, last_status_code: 200,
    });
    expect(delivery.attempts).toEqual([expect.objectContaining({
      object: 'webhook_attempt', attempt_no: 1, trigger: 'automatic', status_code: 200, outcome: 'succeeded', response_body: 'ok', error: null,
    })]);
    expect(delivery.attempts[0].duration_ms).toBeGreaterThanOrEqual(0);
  });

  it('records a success at a healthy endpoint in one statement, the attempt numbered by the delivery\'s update, outside any transaction', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    await enabledEndpoint(stack, m, r);
    const eventIds = await appendHeld(stack, 'production', [{ event: 'payment_intent.succeeded', accountId: m.account.id, workspaceId: m.workspaceId }]);
    const seen: { sql: string; tx: boolean }[] = [];
    const onQuery = (q: { sql: string; __knexTxId?: string }) => seen.push({ sql: q.sql, tx: !!q.__knexTxId });
    stack.db.on('query', onQuery);
    try {
      const { deliveryIds: [id] } = await fanOutFor(stack)('production', eventIds);
      const delivery = await waitForDelivery(stack, m, id, 'succeeded');
      expect(delivery.attempts.map((a: any) => [a.attempt_no, a.outcome])).toEqual([[1, 'succeeded']]);
    } finally {
      stack.db.off('query', onQuery);
    }
    const recorded = seen.filter((q) => q.sql.includes('insert into "live"."webhook_attempts"'));
    expect(recorded).toHaveLength(1);
    expect(recorded[0].tx).toBe(false);
    expect(recorded[0].sql).toMatch(/^with "recorded" as \(update "live"."webhook_deliveries" set .* returning "attempt_count"\) insert into "live"."webhook_attempts" \(.*"attempt_no"\) select .*"attempt_count" from "recorded" returning "attempt_no"$/s);
    expect(seen.filter((q) => q.tx)).toEqual([]);
  });

  it('fans an event out to a healthy endpoint in three statements: its endpoints, its deliveries written and read as one, the attempt', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    await enabledEndpoint(stack, m, r);
    const eventIds = await appendHeld(stack, 'production', [{ event: 'charge.failed', accountId: m.account.id, workspaceId: m.workspaceId }]);
    const seen: string[] = [];
    const prepared: string[] = [];
    const onQuery = (q: { sql: string; options?: { name?: string } }) => { seen.push(q.sql); if (q.options?.name) prepared.push(q.sql); };
    stack.db.on('query', onQuery);
    const fannedOut = await fanOutFor(stack)('production', eventIds).finally(() => stack.db.off('query', onQuery));
    expect(fannedOut.settled).toBe(1);
    await waitForDelivery(stack, m, fannedOut.deliveryIds[0], 'succeeded');
    // The dispatcher hands the fan-out its claimed events whole. Left out: the events table, which this
    // test's harness reads first and the test worker's own dispatcher polls meanwhile.
    const fanOut = seen.filter((sql) => sql.includes('"live".') && !/^(select \* from|update) "live"."events"/.test(sql));
    expect(fanOut).toHaveLength(3);
    expect(fanOut[0]).toMatch(/^select "id", "account_id", .* from "live"."webhook_endpoints" where "account_id" = /);
    expect(fanOut[1]).toMatch(/^with "inserted" as \(insert into "live"."webhook_deliveries" .* returning \*\) select \* from "inserted" union all select \* from "live"."webhook_deliveries" where "event_id" in/s);
    expect(fanOut[2]).toMatch(/^with "recorded" as \(update "live"."webhook_deliveries"/);
    // The endpoints' read and the attempt are prepared statements (db/knex.ts PREPARED); the deliveries'
    // insert is not: its text grows with its rows.
    expect(fanOut.filter((sql) => prepared.includes(sql))).toEqual([fanOut[0], fanOut[2]]);
  });

  it('embeds the payment when the event has one, and only matching, enabled endpoints receive the event', async () => {
    const m = await createMerchant(stack);
    const all = await receiver();
    const chargesOnly = await receiver();
    const pending = await receiver();
    pending.respond = () => ({ status: 200, body: 'no challenge here' });
    await enabledEndpoint(stack, m, all);
    await enabledEndpoint(stack, m, chargesOnly, { events: ['charge.*'] });
    const pendingEndpoint = (await stack.http.post('/v1/webhook-endpoints').set(bearer(m.secretKey)).send({ url: pending.url() })).body.data;

    const paymentId = `pay_${Date.now()}`;
    await stack.db(envTable('production', 'payments')).insert({ id: paymentId, account_id: m.account.id, amount: 2500, currency: 'EUR', status: 'SUCCEEDED' });
    const { eventIds, deliveryIds } = await emit(stack, m, [{ event: 'payment_intent.succeeded', paymentId, data: { note: 'x' } }, { event: 'charge.succeeded' }]);
    expect(deliveryIds).toHaveLength(3);
    for (const id of deliveryIds) await waitForDelivery(stack, m, id, 'succeeded');
    expect(all.events().map((r) => r.eventId).sort()).toEqual([...eventIds].sort());
    expect(chargesOnly.events().map((r) => r.eventId)).toEqual([eventIds[1]]);
    expect(pending.events()).toHaveLength(0);
    expect((await getEndpoint(stack, m, pendingEndpoint.id)).status).toBe('pending_verification');
    const body = JSON.parse(all.events(eventIds[0])[0].body);
    expect(body.data.object).toMatchObject({ object: 'payment', id: paymentId, amount: 2500, currency: 'EUR', status: 'SUCCEEDED' });
    // As GET shows it, but for what only that one payment's read answers.
    const { client_secret: secret, temporal, ...read } = (await stack.http.get(`/v1/payments/${paymentId}`).set(bearer(m.secretKey))).body.data;
    expect([secret, temporal]).toEqual([expect.any(String), expect.anything()]);
    expect(body.data.object).toEqual(read);
    expect(body.data.event_data).toEqual({ note: 'x' });
  });

  it('is idempotent: fanning out the same events again creates no second delivery and sends nothing twice', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    await enabledEndpoint(stack, m, r);
    const first = await emit(stack, m, [{ event: 'refund.created' }]);
    // Delivered by the fan-out's own first attempt: no workflow.
    expect(first).toMatchObject({ settled: 1, started: 0 });
    expect((await stack.db(envTable('production', 'webhook_deliveries')).where({ id: first.deliveryIds[0] }).first()).workflow_id).toBeNull();
    const again = await fanOutFor(stack)('production', first.eventIds);
    expect(again).toEqual({ deliveryIds: first.deliveryIds, settled: 0, started: 0 });
    // Nor does a delivery workflow started late for the settled delivery send it again.
    const startLate = { workflowId: WEBHOOK_WORKFLOW_IDS.delivery(first.deliveryIds[0]), environment: 'production' as const, deliveryId: first.deliveryIds[0], trigger: 'automatic' as const };
    const client = await stack.deps.temporal();
    expect(await webhookClient(client).startDelivery(startLate)).toBe(true);
    expect(await client.workflow.getHandle(startLate.workflowId).result()).toEqual({ deliveryId: first.deliveryIds[0], status: 'succeeded', attempts: 0 });
    expect(await webhookClient(client).startDelivery(startLate)).toBe(false);
    expect(r.events(first.eventIds[0])).toHaveLength(1);
  });

  it('hands a delivery whose first attempt failed to its workflow, which resumes the schedule after it', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    await enabledEndpoint(stack, m, r);
    r.respond = (req, nth) => (req.type === 'webhook_endpoint.verification' ? undefined : nth === 1 ? { status: 503 } : undefined);
    const first = await emit(stack, m, [{ event: 'refund.created' }], { webhookRetrySchedule: '1s' });
    expect(first).toMatchObject({ settled: 0, started: 1 });
    const row = await stack.db(envTable('production', 'webhook_deliveries')).where({ id: first.deliveryIds[0] }).first();
    expect(row).toMatchObject({ status: 'failed', attempt_count: 1, workflow_id: WEBHOOK_WORKFLOW_IDS.delivery(first.deliveryIds[0]) });
    const client = await stack.deps.temporal();
    expect(await client.workflow.getHandle(row.workflow_id).result()).toEqual({ deliveryId: first.deliveryIds[0], status: 'succeeded', attempts: 2 });
    const delivery = await waitForDelivery(stack, m, first.deliveryIds[0], 'succeeded');
    expect(delivery.attempts.map((a: any) => [a.attempt_no, a.status_code])).toEqual([[1, 503], [2, 200]]);
    // The second came after the schedule's wait (1 s, ±20 %), not at once.
    const [one, two] = r.events(first.eventIds[0]).map((q) => q.at);
    expect(two - one).toBeGreaterThanOrEqual(750);
  });

  it('a fan-out cut short after a failed first attempt: its retry hands the delivery over, nothing lost or sent twice', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    await enabledEndpoint(stack, m, r);
    r.respond = (req, nth) => (req.type === 'webhook_endpoint.verification' ? undefined : nth === 1 ? { status: 502 } : undefined);
    const eventIds = await appendHeld(stack, 'production', [{ event: 'charge.refunded', accountId: m.account.id, workspaceId: m.workspaceId }]);
    const config = { webhookRetrySchedule: '1s' };
    // The first run records its attempt, then loses Temporal before it can hand the delivery over (a worker dying there).
    const lost = fanOutFor(stack, config, () => Promise.reject(new Error('Temporal went away')));
    await expect(lost('production', eventIds)).rejects.toThrow('Temporal went away');
    const [row] = await stack.db(envTable('production', 'webhook_deliveries')).where({ event_id: eventIds[0] });
    expect(row).toMatchObject({ status: 'failed', attempt_count: 1, workflow_id: null });
    // The fan-out again (another dispatcher, once the lease ended): the delivery is handed to its workflow, which waits out the schedule and delivers.
    const retried = await fanOutFor(stack, config)('production', eventIds);
    expect(retried).toEqual({ deliveryIds: [row.id], settled: 0, started: 1 });
    const result = await (await stack.deps.temporal()).workflow.getHandle(WEBHOOK_WORKFLOW_IDS.delivery(row.id)).result();
    expect(result).toEqual({ deliveryId: row.id, status: 'succeeded', attempts: 2 });
    expect(r.events(eventIds[0]).map((q) => q.eventId)).toEqual([eventIds[0], eventIds[0]]);
  });

  it('sends an event once it is written: the worker\'s dispatcher fans it out and clears it from the outbox', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    await enabledEndpoint(stack, m, r);
    const [eventId] = await appendEvents(stack.db, 'production', [{ event: 'charge.failed', accountId: m.account.id }]);
    await waitFor(async () => r.events(eventId).length === 1, `event ${eventId} to arrive`);
    const delivery = await stack.db(envTable('production', 'webhook_deliveries')).where({ event_id: eventId }).first();
    await waitForDelivery(stack, m, delivery.id, 'succeeded');
    expect(delivery.workflow_id).toBeNull();
    await waitFor(async () => (await stack.db(envTable('production', 'events')).where({ id: eventId }).first()).fan_out_due === null, 'the outbox cleared');
    expect(r.events(eventId)).toHaveLength(1);
  });

  it('never writes an event nobody listens to into the outbox', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    await enabledEndpoint(stack, m, r, { events: ['refund.*'] });
    const [charge, refund] = await appendEvents(stack.db, 'production', ['charge.failed', 'refund.created'].map((event) => ({ event, accountId: m.account.id })));
    const due = async (id: string) => (await stack.db(envTable('production', 'events')).where({ id }).first()).fan_out_due;
    expect(await due(charge)).toBeNull();
    await waitFor(async () => r.events(refund).length === 1, 'the refund event to arrive');
    expect(r.events(charge)).toHaveLength(0);
  });

  it('an event held by a dispatcher that died goes out when its lease ends, not before', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    await enabledEndpoint(stack, m, r);
    // Claimed by a dispatcher that then died: due again 1.5 s from now, when its lease would end.
    const written = Date.now();
    const [eventId] = await stack.db.transaction(async (trx) => {
      const ids = await appendEvents(trx, 'production', [{ event: 'charge.failed', accountId: m.account.id }]);
      await fanOutLater(trx, 'production', ids, 1_500);
      return ids;
    });
    await waitFor(async () => r.events(eventId).length === 1, `event ${eventId} to arrive`);
    expect(r.events(eventId)[0].at - written).toBeGreaterThanOrEqual(1_400);
    expect(r.events(eventId)).toHaveLength(1);
  });

  it('retries a 5xx on the schedule and succeeds, keeping the webhook-id and recording every attempt', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    r.respond = (req, nth) => (req.type === 'webhook_endpoint.verification' ? undefined
      : nth <= 2 ? { status: 503, body: 'try later' } : undefined);
    const { eventIds: [eventId], deliveryIds: [id] } = await emit(stack, m, [{ event: 'payment_intent.created' }]);
    const failed = await waitForDelivery(stack, m, id, ['failed', 'succeeded']);
    if (failed.status === 'failed') {
      expect(failed.next_attempt_at).not.toBeNull();
      expect(failed.last_status_code).toBe(503);
    }
    const delivery = await waitForDelivery(stack, m, id, 'succeeded');
    expect(delivery.attempt_count).toBe(3);
    expect(delivery.attempts.map((a: any) => [a.attempt_no, a.status_code, a.outcome])).toEqual([[1, 503, 'transient'], [2, 503, 'transient'], [3, 200, 'succeeded']]);
    expect(delivery.attempts[0]).toMatchObject({ response_body: 'try later', error: null });
    const reqs = r.events(eventId);
    expect(reqs).toHaveLength(3);
    expect(new Set(reqs.map((q) => q.headers['webhook-id']))).toEqual(new Set([eventId]));
    for (const q of reqs) expectVerified(q, endpoint.secret);
    // The schedule's jittered waits: 200 ms then 400 ms, ±20 %.
    expect(reqs[1].at - reqs[0].at).toBeGreaterThanOrEqual(150);
    expect(reqs[2].at - reqs[1].at).toBeGreaterThanOrEqual(310);
    expect((await getEndpoint(stack, m, endpoint.id)).failing_since).toBeNull();
  });

  it('dead-letters a 400 after one attempt, with a notification', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    await enabledEndpoint(stack, m, r);
    r.respond = (req) => (req.type === 'webhook_endpoint.verification' ? undefined : { status: 400, body: '{"error":"bad"}' });
    const { eventIds: [eventId], deliveryIds: [id] } = await emit(stack, m, [{ event: 'charge.succeeded' }]);
    const delivery = await waitForDelivery(stack, m, id, 'dead_lettered');
    expect(delivery).toMatchObject({ attempt_count: 1, last_status_code: 400, next_attempt_at: null });
    expect(delivery.dead_lettered_at).not.toBeNull();
    expect(delivery.attempts).toHaveLength(1);
    expect(delivery.attempts[0]).toMatchObject({ status_code: 400, outcome: 'permanent', response_body: '{"error":"bad"}' });
    await new Promise((res) => setTimeout(res, 500));
    expect(r.events(eventId)).toHaveLength(1);
    const [n] = await notifications(m, 'webhook.dead_lettered');
    expect(n.details).toMatchObject({ delivery_id: id, event_id: eventId, reason: 'rejected', attempts: 1, last_status_code: 400 });
  });

  it('does not follow redirects: a 3xx is dead-lettered', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    await enabledEndpoint(stack, m, r);
    r.respond = (req) => (req.type === 'webhook_endpoint.verification' ? undefined : { status: 307, headers: { location: r.url('/elsewhere') } });
    const { deliveryIds: [id] } = await emit(stack, m, [{ event: 'charge.succeeded' }]);
    const delivery = await waitForDelivery(stack, m, id, 'dead_lettered');
    expect(delivery.attempts.map((a: any) => a.status_code)).toEqual([307]);
    expect(r.requests.some((q) => q.path === '/elsewhere')).toBe(false);
  });

  it('disables the endpoint on a 410 Gone', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    r.respond = (req) => (req.type === 'webhook_endpoint.verification' ? undefined : { status: 410 });
    const { deliveryIds: [id] } = await emit(stack, m, [{ event: 'refund.succeeded' }]);
    const delivery = await waitForDelivery(stack, m, id, 'dead_lettered');
    expect(delivery.attempt_count).toBe(1);
    const after = await getEndpoint(stack, m, endpoint.id);
    expect(after).toMatchObject({ status: 'disabled', disabled_reason: 'gone' });
    expect((await notifications(m, 'webhook_endpoint.disabled'))[0].details).toMatchObject({ endpoint_id: endpoint.id, reason: 'gone' });
    // A disabled endpoint receives nothing more.
    const next = await emit(stack, m, [{ event: 'refund.succeeded' }]);
    expect(next.deliveryIds).toHaveLength(0);
  });

  it('honours Retry-After within [scheduled, 2 × scheduled]', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    await enabledEndpoint(stack, m, r);
    // 1 s scheduled (800–1200 ms with jitter): Retry-After 2 s stretches the wait to 1.6–2 s; Retry-After
    // one hour is clamped to twice the scheduled wait (at most 2.4 s).
    r.respond = (req, nth) => (req.type === 'webhook_endpoint.verification' ? undefined
      : nth === 1 ? { status: 429, headers: { 'retry-after': '2' } }
        : nth === 2 ? { status: 503, headers: { 'retry-after': '3600' } } : undefined);
    const { eventIds: [eventId], deliveryIds: [id] } = await emit(stack, m, [{ event: 'payment_intent.canceled' }], { webhookRetrySchedule: '1s,1s' });
    const delivery = await waitForDelivery(stack, m, id, 'succeeded');
    expect(delivery.attempts.map((a: any) => a.status_code)).toEqual([429, 503, 200]);
    const [a, b, c] = r.events(eventId);
    expect(b.at - a.at).toBeGreaterThanOrEqual(1_550);
    expect(b.at - a.at).toBeLessThan(2_600);
    expect(c.at - b.at).toBeGreaterThanOrEqual(750);
    expect(c.at - b.at).toBeLessThan(2_900);
  });

  it('dead-letters after the schedule is exhausted (network errors and 5xx), with a notification', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    r.respond = (req, nth) => (req.type === 'webhook_endpoint.verification' ? undefined
      : nth === 1 ? { status: 200, delayMs: 16_000 } : { status: 500, body: 'x'.repeat(20_000) });
    const { eventIds: [eventId], deliveryIds: [id] } = await emit(stack, m, [{ event: 'payment_intent.payment_failed' }]);
    const delivery = await waitForDelivery(stack, m, id, 'dead_lettered', 45_000);
    expect(delivery.attempt_count).toBe(4);
    expect(delivery.attempts.map((a: any) => a.status_code)).toEqual([0, 500, 500, 500]);
    expect(delivery.attempts[0].error).toMatch(/timeout/i);
    expect(delivery.attempts[0].duration_ms).toBeGreaterThanOrEqual(14_900);
    expect(delivery.attempts[0].duration_ms).toBeLessThan(16_000);
    expect(delivery.attempts[1].response_body).toHaveLength(16 * 1024);
    expect(delivery.attempts[1].response_body_truncated).toBe(true);
    const [n] = await notifications(m, 'webhook.dead_lettered');
    expect(n.details).toMatchObject({ delivery_id: id, event_id: eventId, endpoint_id: endpoint.id, reason: 'retries_exhausted', attempts: 4, last_status_code: 500 });
    expect((await getEndpoint(stack, m, endpoint.id)).failing_since).not.toBeNull();
  }, 60_000);

  it('records a refused connection as status 0 and retries it', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    await r.close();
    receivers.splice(receivers.indexOf(r), 1);
    const { deliveryIds: [id] } = await emit(stack, m, [{ event: 'charge.refunded' }]);
    const delivery = await waitForDelivery(stack, m, id, 'dead_lettered');
    expect(delivery.attempts.map((a: any) => [a.status_code, a.outcome])).toEqual(Array(4).fill([0, 'transient']));
    expect(delivery.attempts[0].error).toMatch(/ECONNREFUSED/);
    expect((await getEndpoint(stack, m, endpoint.id)).failing_since).not.toBeNull();
  });

  it('disables an endpoint that has been failing for 5 days', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    await stack.db(envTable('production', 'webhook_endpoints')).where({ id: endpoint.id }).update({ failing_since: new Date(Date.now() - 5 * 86_400_000 - 60_000) });
    r.respond = (req) => (req.type === 'webhook_endpoint.verification' ? undefined : { status: 502 });
    const { deliveryIds: [id] } = await emit(stack, m, [{ event: 'charge.succeeded' }]);
    const delivery = await waitForDelivery(stack, m, id, 'dead_lettered');
    // The first failure disabled the endpoint; the next scheduled attempt found it disabled and stopped.
    expect(delivery.attempt_count).toBe(1);
    expect(delivery.last_error).toMatch(/disabled/);
    expect(await getEndpoint(stack, m, endpoint.id)).toMatchObject({ status: 'disabled', disabled_reason: 'failing' });
    expect((await notifications(m, 'webhook_endpoint.disabled'))[0].details).toMatchObject({ reason: 'failing', endpoint_id: endpoint.id });
  });

  it('never delivers sandbox events to live endpoints (nor the reverse)', async () => {
    const prod = await createMerchant(stack);
    const sandbox = await createMerchant(stack, { sandboxOf: prod });
    const liveReceiver = await receiver();
    const sandboxReceiver = await receiver();
    await enabledEndpoint(stack, prod, liveReceiver);
    const sandboxEndpoint = await enabledEndpoint(stack, sandbox, sandboxReceiver);

    const s = await emit(stack, sandbox, [{ event: 'payment_intent.succeeded' }]);
    const p = await emit(stack, prod, [{ event: 'payment_intent.succeeded' }]);
    await waitForDelivery(stack, sandbox, s.deliveryIds[0], 'succeeded');
    await waitForDelivery(stack, prod, p.deliveryIds[0], 'succeeded');
    // A sandbox event id fanned out in the live environment finds nothing there.
    expect(await fanOutFor(stack)('production', s.eventIds)).toEqual({ deliveryIds: [], settled: 0, started: 0 });

    expect(sandboxReceiver.events().map((q) => q.eventId)).toEqual(s.eventIds);
    expect(liveReceiver.events().map((q) => q.eventId)).toEqual(p.eventIds);
    expect(JSON.parse(sandboxReceiver.events()[0].body).livemode).toBe(false);
    expect(JSON.parse(liveReceiver.events()[0].body).livemode).toBe(true);
    expect(await stack.db(envTable('production', 'webhook_deliveries')).where({ event_id: s.eventIds[0] })).toHaveLength(0);
    // A live key cannot see the sandbox endpoint or its deliveries.
    expect((await stack.http.get(`/v1/webhook-endpoints/${sandboxEndpoint.id}`).set(bearer(prod.secretKey))).status).toBe(404);
    expect((await stack.http.get(`/v1/webhook-deliveries/${s.deliveryIds[0]}`).set(bearer(prod.secretKey))).status).toBe(404);
  });

  it('keeps secrets, signatures and payloads out of the delivery workflow\'s history', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    const marker = `marker-${Date.now()}`;
    r.respond = (req, nth) => (req.type === 'webhook_endpoint.verification' ? undefined : nth === 1 ? { status: 500, body: `${marker}-response` } : undefined);
    const { deliveryIds: [id] } = await emit(stack, m, [{ event: 'payment_intent.succeeded', data: { marker } }]);
    await waitForDelivery(stack, m, id, 'succeeded');
    const client = await stack.deps.temporal();
    const history = await client.workflow.getHandle(`webhook-delivery/${id}`).fetchHistory();
    // Payloads as text, whether the history holds their bytes or their base64 (a local activity's marker does).
    const text = JSON.stringify(history, (k, v) => (v instanceof Uint8Array ? Buffer.from(v).toString('utf8')
      : k === 'data' && typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : v));
    expect(text).toContain(id);
    expect(text).toContain('attemptWebhookDelivery');
    const key = endpoint.secret.slice('whsec_'.length);
    for (const needle of [endpoint.secret, key, 'whsec_', marker, String(r.events()[0].headers['webhook-signature']).slice(3, 40)]) {
      expect(text).not.toContain(needle);
    }
  });

  it('never lets a slow endpoint delay another one', async () => {
    const m = await createMerchant(stack);
    const slow = await receiver();
    const fast = await receiver();
    await enabledEndpoint(stack, m, slow);
    await enabledEndpoint(stack, m, fast);
    slow.respond = (req) => (req.type === 'webhook_endpoint.verification' ? undefined : { status: 200, delayMs: 5_000 });
    const started = Date.now();
    // The fan-out makes the first attempts side by side, so it ends with the slow endpoint's answers.
    const emitted = emit(stack, m, Array.from({ length: 5 }, () => ({ event: 'charge.succeeded' })));
    await waitFor(async () => fast.events().length === 5 && fast.events(), 'the fast endpoint to get all five events', 4_000);
    const fastMs = Math.max(...fast.events().map((q) => q.at)) - started;
    expect(fastMs).toBeLessThan(2_000);
    // The slow endpoint gets all five as well, side by side rather than one per 5-s answer (its last one
    // may land a moment after the fast endpoint's: it was only ever checked at that very instant).
    await waitFor(async () => slow.events().length === 5, 'the slow endpoint to get all five events', 3_000);
    expect(Date.now() - started).toBeLessThan(5_000);
    const { eventIds } = await emitted;
    expect(new Set(fast.events().map((q) => q.eventId))).toEqual(new Set(eventIds));
    console.info(`5 events: fast endpoint had all within ${fastMs} ms while the slow one took 5 s per answer`);
  });

  it('keeps payloads within 256 KB: an oversized resource is cut down to its reference', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    const { eventIds: [eventId], deliveryIds: [id] } = await emit(stack, m, [{ event: 'refund.created', data: { blob: 'x'.repeat(300 * 1024) } }]);
    await waitForDelivery(stack, m, id, 'succeeded');
    const [req] = r.events(eventId);
    expect(Buffer.byteLength(req.body)).toBeLessThanOrEqual(256 * 1024);
    expect(expectVerified(req, endpoint.secret)).toMatchObject({ id: eventId, type: 'refund.created', data: { object: { object: 'event', id: eventId }, truncated: true } });
  });

  it('lists deliveries newest first with filters', async () => {
    const m = await createMerchant(stack);
    const r = await receiver();
    const endpoint = await enabledEndpoint(stack, m, r);
    const { eventIds, deliveryIds } = await emit(stack, m, [{ event: 'charge.succeeded' }, { event: 'charge.failed' }]);
    for (const id of deliveryIds) await waitForDelivery(stack, m, id, 'succeeded');
    const list = await stack.http.get(`/v1/webhook-deliveries?endpoint_id=${endpoint.id}&limit=1`).set(bearer(m.secretKey));
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 2, page: 1, limit: 1, pages: 2 });
    expect(list.body.data[0]).toMatchObject({ object: 'webhook_delivery', endpoint_id: endpoint.id });
    expect(list.body.data[0].attempts).toBeUndefined();
    const byEvent = await stack.http.get(`/v1/webhook-deliveries?event_id=${eventIds[1]}`).set(bearer(m.secretKey));
    expect(byEvent.body.data.map((d: any) => d.event_type)).toEqual(['charge.failed']);
    const none = await stack.http.get('/v1/webhook-deliveries?status=dead_lettered').set(bearer(m.secretKey));
    expect(none.body.total).toBe(0);
    const bad = await stack.http.get('/v1/webhook-deliveries?status=nope').set(bearer(m.secretKey));
    expect(bad.status).toBe(400);
  });
});
