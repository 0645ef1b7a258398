import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import supertest from 'supertest';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { ensureTemporalCli } from '../../scripts/temporal-cli';
import { createActivities } from '../../activities';
import { createApp } from '../../api/app';
import { SEARCH_ATTRIBUTES, TASK_QUEUES } from '../../contracts/temporal';
import { subscriptionWorkflowId } from '../../contracts/billing';
import { bearer, Merchant, startStack, TestStack } from '../support/stack';
import { newCustomer, paymentsFixture, savedCard, startSimulator, TestSimulator } from '../support/payments';

/**
 * A live subscription's durable timers, on Temporal's time-skipping test server: the API (its Temporal
 * client swapped for the test server's), the production workflow bundle and the real activities against
 * the suite's Postgres. No test clock: the workflow sleeps on real timers, which the server skips, three
 * months in seconds; each renewal continues the workflow as new.
 */
let env: TestWorkflowEnvironment;
let stack: TestStack;
let merchant: Merchant;
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

describe('a live subscription on durable timers (time-skipping)', () => {
  it('renews each month on its timer, continues as new each period, and ends at the period end once asked to', async () => {
    const executable = await ensureTemporalCli('temporal-test-server');
    env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable } });
    try {
      await env.connection.operatorService.addSearchAttributes({
        namespace: env.namespace ?? 'default',
        searchAttributes: Object.fromEntries(Object.values(SEARCH_ATTRIBUTES).map((key) => [key.name, encodeSearchAttributeIndexedValueType(key.type)!])),
      });
      const client = env.client;
      const api = supertest(createApp({ ...stack.deps, temporal: async () => client }).callback());
      const worker = await Worker.create({
        connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue: TASK_QUEUES.payments,
        workflowBundle: { codePath: inject('workflowBundlePath') }, activities: createActivities({ db: stack.db, config: stack.config }),
      });
      await worker.runUntil(async () => {
        const product = await api.post('/v1/products').set(bearer(merchant.secretKey)).send({ name: 'Timer plan' });
        const price = await api.post('/v1/prices').set(bearer(merchant.secretKey)).send({ product_id: product.body.data.id, unit_amount: 700, currency: 'USD', recurring: { interval: 'month' } });
        expect(price.status, JSON.stringify(price.body)).toBe(201);
        const customerId = await newCustomer(stack, merchant);
        const paymentMethodId = await savedCard(stack, merchant, customerId);
        const created = await api.post('/v1/subscriptions').set(bearer(merchant.secretKey))
          .send({ customer_id: customerId, default_payment_method_id: paymentMethodId, items: [{ price_id: price.body.data.id }] });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        const sub = created.body.data;
        expect(sub.status).toBe('ACTIVE');

        await env.sleep('95 days');
        const invoices = await stack.db('live.invoices').where({ subscription_id: sub.id }).orderBy('period_start');
        expect(invoices.map((i) => i.status)).toEqual(['PAID', 'PAID', 'PAID', 'PAID']);
        // The run now going was continued from the one before (a run per period): its history starts afresh.
        const history = await client.workflow.getHandle(subscriptionWorkflowId(sub.id)).fetchHistory();
        const started = history.events![0].workflowExecutionStartedEventAttributes!;
        expect(started.continuedExecutionRunId).toBeTruthy();
        expect(history.events!.length).toBeLessThan(200);

        const ask = await api.patch(`/v1/subscriptions/${sub.id}`).set(bearer(merchant.secretKey)).send({ cancel_at_period_end: true });
        expect(ask.status, JSON.stringify(ask.body)).toBe(200);
        await client.workflow.getHandle(subscriptionWorkflowId(sub.id)).result();
        const ended = await stack.db('live.subscriptions').where({ id: sub.id }).first();
        expect(ended.status).toBe('CANCELED');
        expect(await stack.db('live.invoices').where({ subscription_id: sub.id })).toHaveLength(4);
      });
    } finally {
      await env.teardown();
    }
  }, 180_000);
});
