import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, RunningWorker, startStack, startWorker, TestStack } from '../support/stack';
import { CARDS, pay, paymentsFixture, PaymentsFixture, startSimulator, TestSimulator } from '../support/payments';

// Adaptive routing in real payment walks (docs/routing.md): the real API, Postgres, Temporal and sandbox
// processor. The cheaper `primary` config degrades; the routing plans of the next payments move it behind
// the `backup`, and say why (score, window counts, circuit). A least-cost account keeps today's order.

let sim: TestSimulator;
let stack: TestStack;
let worker: RunningWorker;

async function degrade(f: PaymentsFixture, simulate: Record<string, unknown>) {
  const res = await stack.http.put(`/v1/payment-provider-configs/${f.primary.id}`).set(bearer(f.merchant.token))
    .send({ credentials: { api_key: 'sim_primary_key_0001', simulate } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function settings(f: PaymentsFixture, body: Record<string, unknown>) {
  const res = await stack.http.put(`/v1/routing-settings?account_id=${f.merchant.account.id}`).set(bearer(f.merchant.token)).send(body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function planOf(f: PaymentsFixture, paymentId: string) {
  const res = await stack.http.get(`/v1/routing-plans?payment_id=${paymentId}&account_id=${f.merchant.account.id}`).set(bearer(f.merchant.token));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.at(-1);
}

const firstConfig = (payment: any) => payment.charges[0].payment_provider_config_id;

beforeAll(async () => {
  sim = await startSimulator();
  stack = await startStack({ SIMULATOR_URL: sim.url, PROVIDER_TIMEOUT_MS: '2000' });
  worker = await startWorker(stack);
});
afterAll(async () => {
  await worker?.stop();
  await stack?.close();
  await sim?.close();
});

describe('adaptive routing in real payment walks', () => {
  it('success_rate moves a provider that declines softly behind the healthy one, and the plan says why', async () => {
    const f = await paymentsFixture(stack);
    await settings(f, { strategy: 'success_rate', success_rate: { window_minutes: 5, exploration_share: 0, prior_approvals: 9, prior_attempts: 10 } });
    expect(firstConfig((await pay(stack, f.merchant, CARDS.visa)).body.data)).toBe(f.primary.id);
    await degrade(f, { soft_decline_rate: 1 });
    const firsts: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await pay(stack, f.merchant, CARDS.visa);
      expect(res.body.data.status).toBe('SUCCEEDED');
      firsts.push(firstConfig(res.body.data));
    }
    // A few soft declines pull the primary's estimate below the backup's; from then on the backup goes first.
    const moved = firsts.indexOf(f.backup.id);
    expect(moved).toBeGreaterThan(0);
    expect(moved).toBeLessThan(8);
    expect(firsts.slice(moved).every((id) => id === f.backup.id)).toBe(true);
    const last = (await pay(stack, f.merchant, CARDS.visa)).body.data;
    const plan = await planOf(f, last.id);
    expect(plan.candidates.map((c: any) => c.payment_provider_config_id)).toEqual([f.backup.id, f.primary.id]);
    const [backup, primary] = plan.candidates;
    expect(backup.ranking).toMatchObject({ strategy: 'success_rate', circuit: 'closed', explored: false });
    expect(primary.ranking.score).toBeLessThan(backup.ranking.score);
    expect(primary.ranking.window.soft_declines).toBeGreaterThanOrEqual(moved);
    expect(primary.ranking.note).toContain('approval');
  });

  it('elimination opens the circuit of a provider in an outage, and probes it again after the cool-down', async () => {
    const f = await paymentsFixture(stack);
    await settings(f, { elimination: { enabled: true, window_minutes: 5, min_attempts: 3, error_rate_threshold: 0.5, cool_down_seconds: 2, probe_share: 1 } });
    await degrade(f, { outage: true });
    const firsts: string[] = [];
    for (let i = 0; i < 6; i++) firsts.push(firstConfig((await pay(stack, f.merchant, CARDS.visa)).body.data));
    // Three failed first attempts open the circuit: the backup goes first and no attempt is wasted.
    expect(firsts.slice(0, 3)).toEqual([f.primary.id, f.primary.id, f.primary.id]);
    expect(firsts.slice(3)).toEqual([f.backup.id, f.backup.id, f.backup.id]);
    const open = await pay(stack, f.merchant, CARDS.visa);
    expect(open.body.data.charges).toHaveLength(1);
    const plan = await planOf(f, open.body.data.id);
    expect(plan.candidates[1]).toMatchObject({ payment_provider_config_id: f.primary.id, ranking: { circuit: 'open' } });
    // Recovered; after the cool-down the circuit is half-open and (probe_share 1) the primary is tried again.
    await degrade(f, {});
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const probe = await pay(stack, f.merchant, CARDS.visa);
    expect(firstConfig(probe.body.data)).toBe(f.primary.id);
    expect((await planOf(f, probe.body.data.id)).candidates[0].ranking).toMatchObject({ circuit: 'half_open', explored: true });
  });

  it('hard declines never count against a provider', async () => {
    const f = await paymentsFixture(stack);
    await settings(f, { strategy: 'success_rate', success_rate: { exploration_share: 0 }, elimination: { enabled: true, min_attempts: 3 } });
    for (let i = 0; i < 6; i++) expect((await pay(stack, f.merchant, CARDS.declined)).body.data.status).toBe('FAILED');
    expect(firstConfig((await pay(stack, f.merchant, CARDS.visa)).body.data)).toBe(f.primary.id);
  });

  it('keeps rules → least cost for an account that chose nothing, even with a failing primary', async () => {
    const f = await paymentsFixture(stack);
    await degrade(f, { outage: true });
    for (let i = 0; i < 6; i++) {
      const res = await pay(stack, f.merchant, CARDS.visa);
      expect(res.body.data.charges.map((c: any) => c.payment_provider_config_id)).toEqual([f.primary.id, f.backup.id]);
    }
    const plan = await planOf(f, (await pay(stack, f.merchant, CARDS.visa)).body.data.id);
    expect(plan.candidates[0].ranking).toBeUndefined();
  });
});
