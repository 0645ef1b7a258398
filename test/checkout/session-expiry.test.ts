import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import supertest from 'supertest';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { ensureTemporalCli } from '../../scripts/temporal-cli';
import { createActivities } from '../../activities';
import { createApp } from '../../api/app';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { SEARCH_ATTRIBUTES, TASK_QUEUES } from '../../contracts/temporal';
import { checkoutWorkflowId, type CheckoutState } from '../../contracts/checkout';
import { bearer, Merchant, startStack, TestStack } from '../support/stack';
import { card, CARDS, paymentsFixture, startSimulator, TestSimulator } from '../support/payments';
import { eventsOfPayment, paymentRow, SESSION, sessionRow } from './session-support';

/**
 * A session's expiry by its own durable timer, on Temporal's time-skipping test server: the API (its
 * Temporal client swapped for the test server's), the production workflow bundle and the real activities
 * against the suite's Postgres. The session's workflow and its payment's both run there; waiting for the
 * session's result skips the time its timer sleeps. One test server per case: once a case has waited
 * for a result, the next one's server would skip time before it asks to.
 */
let env: TestWorkflowEnvironment;
let stack: TestStack;
let merchant: Merchant;
let api: ReturnType<typeof supertest>;
let sim: TestSimulator;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url });
  merchant = (await paymentsFixture(stack)).merchant;
}, 180_000);
afterAll(async () => {
  await stack?.close();
  await sim?.close();
});

/**
 * Runs `fn` on a fresh time-skipping test server, with a worker polling its payments queue and the API
 * (`api`) talking to it.
 */
async function withTestServer(fn: () => Promise<void>): Promise<void> {
  const executable = await ensureTemporalCli('temporal-test-server');
  env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable } });
  try {
    // Registered as `npm start` registers them on its dev server: the workflows set them.
    await env.connection.operatorService.addSearchAttributes({
      namespace: env.namespace ?? 'default',
      searchAttributes: Object.fromEntries(Object.values(SEARCH_ATTRIBUTES).map((key) => [key.name, encodeSearchAttributeIndexedValueType(key.type)!])),
    });
    const client = env.client;
    api = supertest(createApp({ ...stack.deps, temporal: async () => client }).callback());
    const worker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue: TASK_QUEUES.payments,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      activities: createActivities({ db: stack.db, config: stack.config }),
    });
    await worker.runUntil(fn);
  } finally {
    await env.teardown();
  }
}

/** The durations (ms) of the timers a workflow started, from its history. */
async function timersOf(workflowId: string): Promise<number[]> {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter((e) => e.timerStartedEventAttributes).map((e) => {
    const d = e.timerStartedEventAttributes!.startToFireTimeout!;
    return Number(d.seconds ?? 0) * 1000 + Math.round((d.nanos ?? 0) / 1e6);
  });
}

describe('a session\'s expiry timer (time-skipping)', () => {
  it('expires by its timer after expires_in: EXPIRED, its payment canceled as abandoned, checkout.session.expired', async () => {
    await withTestServer(async () => {
      const res = await api.post('/v1/checkout-sessions').set(bearer(merchant.secretKey)).send({ ...SESSION, expires_in: 1800 });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const session = res.body.data;
      const startedAt = await env.currentTimeMs();

      const state: CheckoutState = await env.client.workflow.getHandle(checkoutWorkflowId(session.id)).result();
      expect(state).toMatchObject({ sessionId: session.id, status: 'EXPIRED' });
      const slept = (await env.currentTimeMs()) - startedAt;
      expect(slept).toBeGreaterThanOrEqual(1790_000);
      const [timer] = await timersOf(checkoutWorkflowId(session.id));
      expect(timer).toBeGreaterThan(1790_000);
      expect(timer).toBeLessThanOrEqual(1800_000);

      expect(await sessionRow(stack, session.id)).toMatchObject({ status: 'EXPIRED', payment_status: 'UNPAID' });
      expect(await paymentRow(stack, session.payment_id)).toMatchObject({ status: 'CANCELED', cancellation_reason: 'abandoned' });
      const events = await eventsOfPayment(stack, merchant, session.payment_id);
      expect(events.map((e) => e.event)).toEqual(['payment_intent.created', 'payment_intent.canceled', 'checkout.session.expired']);
      // A late expire finds it ended.
      const late = await api.post(`/v1/checkout-sessions/${session.id}/expire`).set(bearer(merchant.secretKey)).send({});
      expect(late.status).toBe(409);
      expect(late.body.error.details).toMatchObject({ reason: 'invalid_state', status: 'EXPIRED' });
    });
  }, 120_000);

  it('completes at its expiry, not expires, when its payment was paid and no word of it came', async () => {
    await withTestServer(async () => {
      const res = await api.post('/v1/checkout-sessions').set(bearer(merchant.secretKey)).send({ ...SESSION, expires_in: 3600 });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const session = res.body.data;
      const paid = await api.post(`/v1/payments/${session.payment_id}/confirm`).set(bearer(merchant.secretKey)).send({ payment_method: card(CARDS.visa) });
      expect(paid.body.data?.status, JSON.stringify(paid.body)).toBe('SUCCEEDED');

      const state: CheckoutState = await env.client.workflow.getHandle(checkoutWorkflowId(session.id)).result();
      expect(state).toMatchObject({ status: 'COMPLETE' });
      expect(await sessionRow(stack, session.id)).toMatchObject({ status: 'COMPLETE', payment_status: 'PAID' });
      expect(await paymentRow(stack, session.payment_id)).toMatchObject({ status: 'SUCCEEDED', cancellation_reason: null });
      const events = (await eventsOfPayment(stack, merchant, session.payment_id)).filter((e) => e.event.startsWith('checkout.'));
      expect(events.map((e) => e.event)).toEqual(['checkout.session.completed']);
    });
  }, 120_000);
});
