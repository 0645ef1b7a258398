// The billing scenario (issue #45, docs/performance.md#scenarios): BENCH_SUBSCRIPTIONS subscriptions on
// one test clock in a sandbox, the worker's memory while they all sleep, then the clock advanced one
// period per run and timed until every subscription caught up (READY): renewals, invoices, payments and
// webhooks per second, and the worker's memory while it renews them.

import { loadConfig } from '../db/local-state';
import { signDevToken } from '../lib/tokens';
import { drive, medianOf, Repeated, round } from './measure';
import type { Merchant } from './merchant';
import { billingCounts, billingReceiver, cpuSince, workerPids, type BillingReceiver } from './billing-support';
import { AccountAnswer, Answer, Api, enabledEndpoint, ProviderAnswer, secretKeyOf } from './http';
import { log } from './runs';
import { rssMb, type Stack } from './stack';

/**
 * 250 by default, not the issue's 10,000: a subscription's create costs about 0.16 s of CPU and its
 * renewal about 0.25 s, so 10,000 take some 45 minutes on two cores (BENCH_SUBSCRIPTIONS=10000 runs them:
 * docs/performance.md gives its figures); 250 and one renewal round take some three minutes, and are more
 * than the worker's cache of 100 workflows holds. BENCH_SUBSCRIPTIONS_ASLEEP adds sleepers that are never
 * renewed, for the memory target.
 */
const SUBSCRIPTIONS = Number(process.env.BENCH_SUBSCRIPTIONS ?? 250);
/**
 * More subscriptions, asleep on a clock of their own that never moves (default none): with them the
 * worker's memory is read with that many more asleep, while the renewals stay BENCH_SUBSCRIPTIONS'.
 * 9750 makes the issue's 10,000 asleep (about a quarter of an hour more to create).
 */
const ASLEEP_ELSEWHERE = Number(process.env.BENCH_SUBSCRIPTIONS_ASLEEP ?? 0);
/** Renewal rounds (each a month's advance): one unless asked, as each costs minutes (BENCH_RUNS is not used here). */
const ROUNDS = Number(process.env.BENCH_BILLING_RUNS ?? 1);
/** Subscriptions made at once: enough to keep both cores busy, few enough that each create answers in seconds. */
const CREATE_CONCURRENCY = Number(process.env.BENCH_BILLING_CONCURRENCY ?? 24);
/** The clock's start: a month of 31 days, so that each run's advance is one calendar month (docs/billing.md#periods). */
const CLOCK_START = Date.parse('2026-01-01T00:00:00.000Z');
/** What the endpoint takes: the invoices' and their payments' events (a renewal's subscription.updated is left out). */
export const BILLING_WEBHOOK_EVENTS = (process.env.BENCH_BILLING_EVENTS ?? 'invoice.*,payment_intent.succeeded').split(',');

/** What the scenario answers: its runs and their medians, with how fast (and at what CPU) the subscriptions were made. */
export type BillingResult = Repeated<BillingRun> & { subscriptions: number; asleep_elsewhere: number; create: Record<string, number> };

export interface BillingRun extends Record<string, number> {
  renewals_per_s: number; invoices_per_s: number; payments_per_s: number; webhooks_per_s: number;
  renewal_s: number; invoices_s: number; payments_s: number; webhooks: number; worker_rss_mb: number; worker_rss_peak_mb: number; sleeping_subscriptions: number;
}

/** A sandbox account of the bench's merchant (test clocks live only in sandboxes), paying on the sandbox processor. */
async function sandboxAccount(http: Api, merchant: Merchant): Promise<{ key: string; account: AccountAnswer }> {
  const system = signDevToken(loadConfig(), { user: 'usr_bench_system', system: true });
  const body = { name: 'Bench sandbox', country: 'US', currency: 'USD' };
  const account = (await http.post<AccountAnswer>(`/accounts?sandbox_mode=true&prod_account_id=${merchant.account.id}`, body, merchant.token)).data;
  const provider = (await http.post<ProviderAnswer>('/payment-providers?sandbox_mode=true', { name: 'Sandbox', identifier: 'sandbox' }, system)).data;
  const ppc = (await http.post(`/payment-provider-configs?account_id=${account.id}`, { payment_provider_id: provider.id, name: 'Primary', credentials: { api_key: 'bench' } }, merchant.token)).data;
  for (const m of provider.methods) {
    await http.post(`/payment-provider-configs/${ppc.id}/fees`, { payment_provider_method_id: m.id, volume_fee: 2.9, fixed_fee: 30, fixed_fee_currency: 'USD' }, merchant.token);
  }
  return { key: secretKeyOf(account), account };
}

/**
 * Makes `count` subscriptions on the clock, each of its own customer with a saved card, paying its
 * first invoice at creation (a renewal then charges a card an approval anchored, as in production).
 */
async function subscribe(http: Api, key: string, priceId: string, clockId: string, count: number): Promise<void> {
  const t0 = performance.now();
  let made = 0;
  const progress = setInterval(() => log(`bench: billing, ${made}/${count} subscriptions (${round(made / ((performance.now() - t0) / 1000))}/s)`), 30_000);
  try {
    await drive(count, CREATE_CONCURRENCY, async (i) => {
      const customer = (await http.post('/customers', { name: `Subscriber ${i}`, email: `subscriber${i}@example.com` }, key)).data;
      const card = { type: 'CARD', card: { number: '4242424242424242', exp_month: 12, exp_year: new Date().getFullYear() + 3, cvc: '123' } };
      const pm = (await http.post(`/customers/${customer.id}/payment-methods`, card, key)).data;
      const sub = (await http.post<Answer>('/subscriptions', {
        customer_id: customer.id, default_payment_method_id: pm.id, test_clock_id: clockId, items: [{ price_id: priceId }],
      }, key)).data;
      if (sub.status !== 'ACTIVE') throw new Error(`subscription ${sub.id} is ${sub.status} after its first invoice`);
      made += 1;
    });
  } finally {
    clearInterval(progress);
  }
  const seconds = (performance.now() - t0) / 1000;
  log(`bench: billing, ${count} subscriptions in ${round(seconds)} s (${round(count / seconds)}/s at ${CREATE_CONCURRENCY})`);
}

/**
 * Seconds from the round's start to the last row of a kind (at least a millisecond): each kind's rate is
 * over its own span, since a big round makes all its invoices before most of their payments.
 */
function secondsUntil(since: Date, last: Date | null): number {
  return Math.max(1, (last ?? new Date()).getTime() - since.getTime()) / 1000;
}

/** CPU ms per subscription, by process (`cpu_ms_<process>_per_<what>`), and their total. */
function perSubscription(used: Record<string, number>, count: number, what: string): Record<string, number> {
  const n = Math.max(1, count);
  const total = Object.values(used).reduce((sum, ms) => sum + ms, 0);
  return { ...Object.fromEntries(Object.entries(used).map(([name, ms]) => [`cpu_ms_${name}_per_${what}`, round(ms / n)])), [`cpu_ms_per_${what}`]: round(total / n) };
}

/** Each worker's resident memory now (the first is stack.worker; a second, when the stack has one, after it). */
const workersRss = () => workerPids().map((pid) => rssMb(pid));

/** The first worker's RSS, sampled `samples` times a second apart while nothing is due: its median. */
async function sleepingRss(samples: number): Promise<{ first: number; all: number }> {
  const taken: number[][] = [];
  for (let i = 0; i < samples; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    taken.push(workersRss());
  }
  const mid = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  return { first: mid(taken.map((t) => t[0])), all: mid(taken.map((t) => t.reduce((s, mb) => s + mb, 0))) };
}

/** Waits until the clock is READY, sampling the workers' RSS each half second; answers the peak of the first and of all. */
async function untilReady(http: Api, key: string, clockId: string): Promise<{ peak: number; peakAll: number }> {
  let peak = 0;
  let peakAll = 0;
  // An hour, or more for a big round: 10,000 renewing took 26 minutes on two cores to themselves, over an hour shared.
  const minutes = Math.max(60, SUBSCRIPTIONS / 100);
  const deadline = Date.now() + minutes * 60_000;
  for (;;) {
    const rss = workersRss();
    peak = Math.max(peak, rss[0]);
    peakAll = Math.max(peakAll, rss.reduce((s, mb) => s + mb, 0));
    if ((await http.get<Answer>(`/test-clocks/${clockId}`, key)).data.status === 'READY') return { peak, peakAll };
    if (Date.now() > deadline) throw new Error(`billing: test clock ${clockId} still ADVANCING after ${minutes} minutes`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * One run: the clock moved a month, timed until READY (every subscription renewed, its invoice paid)
 * and until the receiver has every delivery the round's events call for.
 */
async function renewalRound(ctx: {
  stack: Stack; http: Api; key: string; accountId: string; clockId: string; asleepClockId?: string; receiver: BillingReceiver;
}, run: number): Promise<BillingRun> {
  const { stack, http, key, clockId, receiver } = ctx;
  const sleeping = await billingCounts(stack.db, clockId, new Date(0));
  const elsewhere = ctx.asleepClockId ? (await billingCounts(stack.db, ctx.asleepClockId, new Date(0))).sleeping : 0;
  const rss = await sleepingRss(5);
  log(`bench: billing, ${sleeping.sleeping} + ${elsewhere} subscriptions asleep, worker RSS ${rss.first} MB (all workers ${rss.all} MB)`);
  const to = new Date(CLOCK_START);
  to.setUTCMonth(to.getUTCMonth() + run);
  const cpu = cpuSince(stack);
  const since = new Date();
  receiver.reset();
  const t0 = performance.now();
  await http.post(`/test-clocks/${clockId}/advance`, { frozen_time: to.toISOString() }, key);
  const advancedMs = performance.now() - t0;
  const { peak, peakAll } = await untilReady(http, key, clockId);
  const readyMs = performance.now() - t0;
  const cpuUsed = cpu();
  const counts = await billingCounts(stack.db, clockId, since);
  if (counts.renewed !== sleeping.sleeping) throw new Error(`billing: ${counts.renewed} of ${sleeping.sleeping} subscriptions renewed to ${to.toISOString()}`);
  const expected = await receiver.expectedSince(stack.db, ctx.accountId, since);
  const webhooksMs = await receiver.until(expected, t0);
  const s = readyMs / 1000;
  const invoicesS = secondsUntil(since, counts.lastInvoiceAt);
  const paymentsS = secondsUntil(since, counts.lastPaymentAt);
  log(`bench: billing, advance answered in ${round(advancedMs / 1000)} s; the last invoice after ${round(invoicesS)} s, the last payment after ${round(paymentsS)} s, READY after ${round(s)} s, ${expected} webhooks in ${round(webhooksMs / 1000)} s`);
  return {
    renewals_per_s: round(counts.renewed / s), invoices_per_s: round(counts.invoices / invoicesS), payments_per_s: round(counts.payments / paymentsS),
    webhooks_per_s: round(expected / (webhooksMs / 1000)), renewal_s: round(s), invoices_s: round(invoicesS), payments_s: round(paymentsS),
    webhooks: expected, advance_request_s: round(advancedMs / 1000),
    worker_rss_mb: rss.first, workers_rss_mb: rss.all, worker_rss_peak_mb: peak, workers_rss_peak_mb: peakAll, sleeping_subscriptions: sleeping.sleeping + elsewhere,
    ...perSubscription(cpuUsed, counts.renewed, 'renewal'),
  };
}

/**
 * `billing`: BENCH_SUBSCRIPTIONS subscriptions made once (at BENCH_BILLING_CONCURRENCY), then
 * BENCH_BILLING_RUNS rounds, each a month's advance of their one clock; every run and the median of each number.
 */
export async function billingScenario(stack: Stack, merchant: Merchant): Promise<BillingResult> {
  const { http } = merchant;
  log(`bench: billing, setting up ${SUBSCRIPTIONS} subscriptions on a test clock`);
  const { key, account } = await sandboxAccount(http, merchant);
  const product = (await http.post('/products', { name: 'Bench plan' }, key)).data;
  const price = (await http.post('/prices', { product_id: product.id, unit_amount: 2000, currency: 'USD', recurring: { interval: 'month' } }, key)).data;
  const clock = (await http.post('/test-clocks', { frozen_time: new Date(CLOCK_START).toISOString(), name: 'bench' }, key)).data;
  const asleep = ASLEEP_ELSEWHERE > 0 ? (await http.post('/test-clocks', { frozen_time: new Date(CLOCK_START).toISOString(), name: 'bench asleep' }, key)).data : undefined;
  if (asleep) {
    log(`bench: billing, first ${ASLEEP_ELSEWHERE} subscriptions to stay asleep`);
    await subscribe(http, key, price.id, asleep.id, ASLEEP_ELSEWHERE);
  }
  const t0 = performance.now();
  const createCpu = cpuSince(stack);
  await subscribe(http, key, price.id, clock.id, SUBSCRIPTIONS);
  const create: Record<string, number> = { per_s: round(SUBSCRIPTIONS / ((performance.now() - t0) / 1000)), ...perSubscription(createCpu(), SUBSCRIPTIONS, 'subscription') };
  log(`bench: billing, creates cost ${create.cpu_ms_per_subscription} ms of CPU each (${Object.entries(create).map(([k, v]) => `${k} ${v}`).join(', ')})`);
  // Subscribed after the subscriptions were made: the creates' own events reach no endpoint, and each
  // round's deliveries are the renewals' alone.
  const receiver = await billingReceiver(BILLING_WEBHOOK_EVENTS);
  const endpoint = await enabledEndpoint(http, key, `${receiver.url}/hook`, BILLING_WEBHOOK_EVENTS);
  try {
    const runs: BillingRun[] = [];
    for (let run = 1; run <= ROUNDS; run++) {
      log(`bench: billing, run ${run}/${ROUNDS}`);
      runs.push(await renewalRound({ stack, http, key, accountId: account.id, clockId: clock.id, asleepClockId: asleep?.id, receiver }, run));
    }
    return { subscriptions: SUBSCRIPTIONS, asleep_elsewhere: ASLEEP_ELSEWHERE, create, runs, median: medianOf(runs) };
  } finally {
    await http.delete(`/webhook-endpoints/${endpoint.id}`, key).catch(() => {});
    receiver.server.close();
  }
}

/** The table's rows for `billing` (bench/results.ts prints them beside the memory target). */
export function billingRows(billing: BillingResult, target: string): [string, string, string, string][] {
  const m = billing.median;
  const runs = (field: keyof BillingRun) => billing.runs.map((r) => r[field]).join(' / ');
  return [
    ['billing', `${m.renewals_per_s} renewals/s, ${m.invoices_per_s} invoices/s, ${m.payments_per_s} paid/s, ${m.webhooks_per_s} webhooks/s (${billing.subscriptions})`, '', runs('renewals_per_s')],
    ['billing memory', `worker RSS ${m.worker_rss_mb} MB, ${m.sleeping_subscriptions} asleep; ${m.worker_rss_peak_mb} renewing`, target, runs('worker_rss_mb')],
  ];
}
