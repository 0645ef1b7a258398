import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { findTemporalCli } from '../../scripts/temporal-cli';
import { subscriptionWorkflowId } from '../../contracts/billing';
import { bearer, Merchant, sandboxMerchant, TestStack } from '../support/stack';
import { addFees, createConfig, createProvider } from '../support/routing';
import { newCustomer, savedCard } from '../support/payments';
import { eventually } from '../support/worker-process';

/** A sandbox merchant with one sandbox-processor config (knobs in its `simulate`), as billing tests need: test clocks live in sandboxes. */
export async function billingFixture(stack: TestStack, simulate: Record<string, unknown> = {}) {
  const merchant = await sandboxMerchant(stack);
  const provider = await createProvider(stack, { sandbox: true });
  const config = await createConfig(stack, merchant, provider.id, { name: 'Sandbox', credentials: { api_key: 'sim_billing_key_0001', simulate } });
  await addFees(stack, merchant, config, provider, 2.9);
  return { merchant, provider, config };
}

export type BillingFixture = Awaited<ReturnType<typeof billingFixture>>;

export const api = (stack: TestStack, m: Merchant) => ({
  post: async (path: string, body: Record<string, unknown> = {}, expected = 200) => {
    const res = await stack.http.post(path).set(bearer(m.secretKey)).send(body);
    expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(expected);
    return res.body.data;
  },
  patch: async (path: string, body: Record<string, unknown>, expected = 200) => {
    const res = await stack.http.patch(path).set(bearer(m.secretKey)).send(body);
    expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(expected);
    return res.body.data;
  },
  get: async (path: string) => {
    const res = await stack.http.get(path).set(bearer(m.secretKey));
    expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
    return res.body.data;
  },
});

/** A monthly price of `unitAmount` USD cents on a new product; answers the price. */
export async function monthlyPrice(stack: TestStack, m: Merchant, unitAmount: number, name = 'Pro plan', interval = 'month') {
  const product = await api(stack, m).post('/v1/products', { name }, 201);
  return api(stack, m).post('/v1/prices', { product_id: product.id, unit_amount: unitAmount, currency: 'USD', recurring: { interval } }, 201);
}

/** A customer with a saved card: answers both ids. */
export async function customerWithCard(stack: TestStack, m: Merchant, number?: string) {
  const customerId = await newCustomer(stack, m);
  return { customerId, paymentMethodId: await savedCard(stack, m, customerId, number) };
}

export async function newClock(stack: TestStack, m: Merchant, at: string) {
  return api(stack, m).post('/v1/test-clocks', { frozen_time: at, name: 'billing test' }, 201);
}

/** Advances the clock and waits until every subscription on it has caught up (READY). */
export async function advanceClock(stack: TestStack, m: Merchant, clockId: string, to: string, timeoutMs = 120_000) {
  await api(stack, m).post(`/v1/test-clocks/${clockId}/advance`, { frozen_time: to });
  return eventually(async () => {
    const clock = await api(stack, m).get(`/v1/test-clocks/${clockId}`);
    return clock.status === 'READY' ? clock : undefined;
  }, timeoutMs, 200);
}

/** The events of the sandbox written about a subscription or its invoices, oldest first. */
export async function billingEvents(stack: TestStack, subscriptionId: string): Promise<{ event: string; subject_id: string; data: any }[]> {
  const invoiceIds = (await stack.db('sandbox.invoices').where({ subscription_id: subscriptionId }).select('id')).map((r) => r.id);
  return stack.db('sandbox.events').whereIn('subject_id', [subscriptionId, ...invoiceIds]).orderBy('created_at', 'asc').orderBy('id', 'asc')
    .select('event', 'subject_id', 'data');
}

export const invoicesOf = (stack: TestStack, subscriptionId: string) =>
  stack.db('sandbox.invoices').where({ subscription_id: subscriptionId }).orderBy('period_start', 'asc').orderBy('created_at', 'asc');

/**
 * With RECORD_HISTORIES naming it (test/payments/replay.test.ts replays test/histories/), writes the
 * subscription's workflow histories as `temporal workflow show --output json` exports them: its first run
 * (`<name>-first`: the start, the first invoice) and the run going now (`<name>`: a run continued from a
 * renewal, with its carried answers); and the workflow of the latest invoice's payment (`payment-invoice-<name>`).
 */
export async function recordSubscriptionHistory(stack: TestStack, name: string, subscriptionId: string): Promise<void> {
  const asked = process.env.RECORD_HISTORIES ?? '';
  if (asked !== '1' && !asked.split(',').includes(name)) return;
  const workflowId = subscriptionWorkflowId(subscriptionId);
  const description = await (await stack.deps.temporal()).workflow.getHandle(workflowId).describe();
  const firstRunId = description.raw.workflowExecutionInfo?.firstRunId ?? description.runId;
  const show = (runId: string) => execFileSync(findTemporalCli('temporal')!, [
    'workflow', 'show', '--workflow-id', workflowId, '--run-id', runId, '--output', 'json',
    '--address', stack.config.temporal.address!, '--namespace', stack.config.temporal.namespace,
  ], { encoding: 'utf8' });
  const dir = join(__dirname, '..', 'histories');
  writeFileSync(join(dir, `subscription-${name}.json`), JSON.stringify(JSON.parse(show(description.runId)), null, 1));
  if (firstRunId !== description.runId) writeFileSync(join(dir, `subscription-${name}-first.json`), JSON.stringify(JSON.parse(show(firstRunId)), null, 1));
  // The latest invoice's payment too: a payment that carries its invoice and tells its subscription.
  const latest = await stack.db('sandbox.invoices').where({ subscription_id: subscriptionId }).whereNotNull('payment_id').orderBy('created_at', 'desc').first();
  if (latest) {
    const json = execFileSync(findTemporalCli('temporal')!, [
      'workflow', 'show', '--workflow-id', `payment/${latest.payment_id}`, '--output', 'json',
      '--address', stack.config.temporal.address!, '--namespace', stack.config.temporal.namespace,
    ], { encoding: 'utf8' });
    writeFileSync(join(dir, `payment-invoice-${name}.json`), JSON.stringify(JSON.parse(json), null, 1));
  }
}
