import type { SandboxCredentials } from '../lib/providers/sandbox/credentials';
import { DEFAULT_ROUTING_SETTINGS, RoutingSettings } from '../lib/routing/adaptive-contract';
import { AccountAnswer, Answer, Api, HttpFailure, ProviderAnswer, secretKeyOf, VISA } from './http';
import { drive, percentile, round } from './measure';

/**
 * The `routing` scenario (docs/performance.md#routing-simulation): one payment stream, run against two
 * merchants at the same time, each with three sandbox provider configs — A (the cheapest), B, C. One
 * merchant routes statically (least cost, elimination off), the other adaptively (success rate with
 * elimination). Between phases A's simulator knobs change through `PUT /v1/payment-provider-configs/{id}`
 * (credentials are read at every attempt): healthy → degraded (60 % soft declines) → outage → recovered.
 * The phases start together for both merchants: each waits for the other's payments of the phase.
 * Environment: BENCH_ROUTING_PAYMENTS (per strategy, default 600), BENCH_ROUTING_STRATEGIES
 * (`static,adaptive`; `static` alone measures a build without routing settings).
 */

export const ROUTING_PAYMENTS = Number(process.env.BENCH_ROUTING_PAYMENTS ?? 600);
const CONCURRENCY = 4;
const AMOUNT = 1000;

const STRATEGY_NAMES = ['static', 'adaptive'] as const;
type StrategyName = (typeof STRATEGY_NAMES)[number];

const PHASES = [
  { name: 'healthy', share: 0.1, simulate: {} },
  { name: 'degraded', share: 0.2, simulate: { soft_decline_rate: 0.6 } },
  { name: 'outage', share: 0.1, simulate: { outage: true } },
  // The longest: the one-minute success-rate window must forget the bad phases before A can come back.
  { name: 'recovered', share: 0.6, simulate: {} },
] as const satisfies readonly { name: string; share: number; simulate: NonNullable<SandboxCredentials['simulate']> }[];
type PhaseName = (typeof PHASES)[number]['name'];

/** Moved away: the first attempt went to another config this many payments in a row. */
const SUSTAINED_RUN = 10;
/** Back: A made the first attempt for at least RETURN_SHARE of RETURN_WINDOW consecutive payments. */
const RETURN_WINDOW = 20;
const RETURN_SHARE = 0.8;

/** A is the cheapest, so least cost puts it first; B is next. */
const CONFIGS = [
  { name: 'A', volume_fee: 2.5, fixed_fee: 20 },
  { name: 'B', volume_fee: 2.9, fixed_fee: 30 },
  { name: 'C', volume_fee: 3.4, fixed_fee: 30 },
] as const;

const SETTINGS: Record<StrategyName, RoutingSettings> = {
  static: { ...DEFAULT_ROUTING_SETTINGS, strategy: 'least_cost', elimination: { ...DEFAULT_ROUTING_SETTINGS.elimination, enabled: false } },
  // One-minute windows and a 5 s cool-down (the defaults: 15 min, 5 min, 30 s) so that the effect shows
  // within a run of a few minutes.
  adaptive: {
    ...DEFAULT_ROUTING_SETTINGS,
    strategy: 'success_rate',
    success_rate: { ...DEFAULT_ROUTING_SETTINGS.success_rate, window_minutes: 1 },
    elimination: { ...DEFAULT_ROUTING_SETTINGS.elimination, enabled: true, window_minutes: 1, cool_down_seconds: 5 },
  },
};

const APPROVED_PAYMENT = new Set(['AUTHORIZED', 'SUCCEEDED']);
const APPROVED_CHARGE = new Set(['AUTHORIZED', 'CAPTURED', 'PARTIALLY_REFUNDED', 'REFUNDED']);

interface ChargeAnswer { attempt_no: number; status: string; payment_provider_config_id: string | null }
interface PaymentAnswer extends Answer { charges?: ChargeAnswer[] }

/** One payment of the stream as the scenario saw it. */
interface Paid {
  phase: PhaseName;
  approved: boolean;
  firstOnA: boolean;
  firstApproved: boolean;
  attempts: number;
  failedAttempts: number;
  confirmMs: number;
}

interface Merchant {
  strategy: StrategyName;
  key: string;
  configA: { id: string; apiKey: string };
  /** False when the build has no routing-settings endpoint (static only: its own routing is least cost). */
  settingsApplied: boolean;
  paid: Paid[];
}

export interface PhaseResult {
  payments: number;
  a_first_share: number;
  first_attempt_approval_rate: number;
  mean_attempts: number;
}

export interface StrategyResult {
  payments: number;
  first_attempt_approval_rate: number;
  approval_rate: number;
  mean_attempts: number;
  /** Attempts that did not approve (declined, failed or unknown). */
  wasted_attempts: number;
  p50_ms: number;
  p99_ms: number;
  /** Payments after the degradation starts until the first of SUSTAINED_RUN in a row whose first attempt is not A; null: never. */
  payments_to_move_away: number | null;
  /** Payments after the recovery starts until the first RETURN_WINDOW with A first in RETURN_SHARE of them; null: not within the run. */
  payments_to_return: number | null;
  phases: Record<PhaseName, PhaseResult>;
  settings: RoutingSettings | 'endpoint absent: the build routes by least cost';
}

export interface RoutingResults {
  stream: { payments: number; concurrency: number; phases: Record<PhaseName, { payments: number; seconds: number; simulate: object }> };
  static?: StrategyResult;
  adaptive?: StrategyResult;
}

export interface RoutingDeps {
  api: Api;
  /** A user's bearer: creates the accounts, their configs and settings. */
  token: string;
  provider: ProviderAnswer;
  log: (line: string) => void;
}

function strategiesToRun(): StrategyName[] {
  const names = (process.env.BENCH_ROUTING_STRATEGIES ?? STRATEGY_NAMES.join(',')).split(',');
  const unknown = names.filter((name) => !(STRATEGY_NAMES as readonly string[]).includes(name));
  if (unknown.length) throw new Error(`BENCH_ROUTING_STRATEGIES: unknown ${unknown.join(', ')} (known: ${STRATEGY_NAMES.join(', ')})`);
  return names as StrategyName[];
}

/** Payments per phase: each phase's share of the stream, the last one taking the rest. */
function phasePlan(total: number): { name: PhaseName; simulate: object; start: number; payments: number }[] {
  let start = 0;
  return PHASES.map((phase, i) => {
    const payments = i === PHASES.length - 1 ? total - start : Math.round(phase.share * total);
    const planned = { name: phase.name, simulate: phase.simulate, start, payments };
    start += payments;
    return planned;
  });
}

async function applySettings({ api, token }: RoutingDeps, accountId: string, strategy: StrategyName): Promise<boolean> {
  try {
    await api.put(`/routing-settings?account_id=${accountId}`, SETTINGS[strategy], token);
    return true;
  } catch (err) {
    if (!(err instanceof HttpFailure && err.status === 404)) throw err;
    if (strategy === 'adaptive') {
      throw new Error('adaptive routing not available: PUT /v1/routing-settings answered 404 in this build '
        + `(${JSON.stringify(err.body)}); BENCH_ROUTING_STRATEGIES=static measures the static half alone`, { cause: err });
    }
    return false;
  }
}

async function setUpMerchant(deps: RoutingDeps, strategy: StrategyName): Promise<Merchant> {
  const { api, token, provider } = deps;
  const account = (await api.post<AccountAnswer>('/accounts', { name: `Routing ${strategy}`, country: 'US', currency: 'USD' }, token)).data;
  const ids: string[] = [];
  for (const config of CONFIGS) {
    const credentials = { api_key: `routing-${strategy}-${config.name}` };
    const created = (await api.post(`/payment-provider-configs?account_id=${account.id}`, { payment_provider_id: provider.id, name: config.name, credentials }, token)).data;
    for (const method of provider.methods) {
      await api.post(`/payment-provider-configs/${created.id}/fees`, {
        payment_provider_method_id: method.id, volume_fee: config.volume_fee, fixed_fee: config.fixed_fee, fixed_fee_currency: 'USD',
      }, token);
    }
    ids.push(created.id);
  }
  return {
    strategy,
    key: secretKeyOf(account),
    configA: { id: ids[0], apiKey: `routing-${strategy}-A` },
    settingsApplied: await applySettings(deps, account.id, strategy),
    paid: [],
  };
}

async function simulateOnA({ api, token }: RoutingDeps, merchant: Merchant, simulate: object): Promise<void> {
  await api.put(`/payment-provider-configs/${merchant.configA.id}`, { credentials: { api_key: merchant.configA.apiKey, simulate } }, token);
}

/** Create + confirm one payment; its final status and charges (a confirm answered PROCESSING is polled to its end). */
async function pay(api: Api, merchant: Merchant, phase: PhaseName): Promise<Paid> {
  const created = (await api.post('/payments', { amount: AMOUNT, currency: 'USD' }, merchant.key)).data;
  const t0 = performance.now();
  let payment = (await api.post<PaymentAnswer>(`/payments/${created.id}/confirm`, { payment_method: VISA }, merchant.key)).data;
  for (let polls = 0; payment.status === 'PROCESSING' && polls < 300; polls++) {
    await new Promise((r) => setTimeout(r, 200));
    payment = (await api.get<PaymentAnswer>(`/payments/${created.id}?include_charges=true`, merchant.key)).data;
  }
  const confirmMs = performance.now() - t0;
  const charges = [...(payment.charges ?? [])].sort((a, b) => a.attempt_no - b.attempt_no);
  const failedAttempts = charges.filter((c) => !APPROVED_CHARGE.has(c.status)).length;
  return {
    phase,
    approved: APPROVED_PAYMENT.has(payment.status),
    firstOnA: charges[0]?.payment_provider_config_id === merchant.configA.id,
    firstApproved: charges.length > 0 && APPROVED_CHARGE.has(charges[0].status),
    attempts: charges.length,
    failedAttempts,
    confirmMs,
  };
}

const share = (paid: Paid[], test: (p: Paid) => boolean) => (paid.length ? round(paid.filter(test).length / paid.length) : 0);
const mean = (paid: Paid[], value: (p: Paid) => number) => (paid.length ? round(paid.reduce((sum, p) => sum + value(p), 0) / paid.length) : 0);

/** Index (from 0) of the first payment starting SUSTAINED_RUN in a row whose first attempt is not A. */
function paymentsToMoveAway(firstOnA: boolean[]): number | null {
  let run = 0;
  for (let i = 0; i < firstOnA.length; i++) {
    run = firstOnA[i] ? 0 : run + 1;
    if (run === SUSTAINED_RUN) return i - SUSTAINED_RUN + 1;
  }
  return null;
}

/** Index (from 0) of the first payment starting RETURN_WINDOW payments with A first in at least RETURN_SHARE of them. */
function paymentsToReturn(firstOnA: boolean[]): number | null {
  const needed = Math.ceil(RETURN_WINDOW * RETURN_SHARE);
  let onA = 0;
  for (let i = 0; i < firstOnA.length; i++) {
    onA += firstOnA[i] ? 1 : 0;
    if (i >= RETURN_WINDOW) onA -= firstOnA[i - RETURN_WINDOW] ? 1 : 0;
    if (i >= RETURN_WINDOW - 1 && onA >= needed) return i - RETURN_WINDOW + 1;
  }
  return null;
}

function resultOf(merchant: Merchant): StrategyResult {
  const { paid } = merchant;
  const latencies = paid.map((p) => p.confirmMs).sort((a, b) => a - b);
  const inPhases = (...names: PhaseName[]) => paid.filter((p) => names.includes(p.phase));
  const phases = Object.fromEntries(PHASES.map(({ name }) => {
    const of = inPhases(name);
    return [name, {
      payments: of.length,
      a_first_share: share(of, (p) => p.firstOnA),
      first_attempt_approval_rate: share(of, (p) => p.firstApproved),
      mean_attempts: mean(of, (p) => p.attempts),
    }];
  })) as Record<PhaseName, PhaseResult>;
  return {
    payments: paid.length,
    first_attempt_approval_rate: share(paid, (p) => p.firstApproved),
    approval_rate: share(paid, (p) => p.approved),
    mean_attempts: mean(paid, (p) => p.attempts),
    wasted_attempts: paid.reduce((sum, p) => sum + p.failedAttempts, 0),
    p50_ms: round(percentile(latencies, 50)),
    p99_ms: round(percentile(latencies, 99)),
    payments_to_move_away: paymentsToMoveAway(inPhases('degraded', 'outage').map((p) => p.firstOnA)),
    payments_to_return: paymentsToReturn(inPhases('recovered').map((p) => p.firstOnA)),
    phases,
    settings: merchant.settingsApplied ? SETTINGS[merchant.strategy] : 'endpoint absent: the build routes by least cost',
  };
}

/**
 * Creates the merchants and applies their routing settings (failing at once, before any payment, when
 * the build has no adaptive routing); `run` then drives the stream and measures it.
 */
export async function prepareRoutingScenario(deps: RoutingDeps): Promise<{ run(): Promise<RoutingResults> }> {
  const merchants: Merchant[] = [];
  for (const strategy of strategiesToRun()) merchants.push(await setUpMerchant(deps, strategy));
  for (const m of merchants) if (!m.settingsApplied) deps.log(`bench: routing ${m.strategy}: no routing-settings endpoint, the build's own least-cost routing`);
  const plan = phasePlan(ROUTING_PAYMENTS);
  return {
    async run() {
      const started = performance.now();
      const phases: Partial<RoutingResults['stream']['phases']> = {};
      for (const phase of plan) {
        const phaseStarted = performance.now();
        await Promise.all(merchants.map((m) => simulateOnA(deps, m, phase.simulate)));
        await Promise.all(merchants.map((m) => drive(phase.payments, CONCURRENCY, async (i) => {
          m.paid[phase.start + i] = await pay(deps.api, m, phase.name);
        })));
        phases[phase.name] = { payments: phase.payments, seconds: round((performance.now() - phaseStarted) / 1000), simulate: phase.simulate };
        deps.log(`bench: routing ${phase.name}: ${phase.payments} payments per strategy, ${round((performance.now() - started) / 1000)} s so far`);
      }
      const results: RoutingResults = {
        stream: { payments: ROUTING_PAYMENTS, concurrency: CONCURRENCY, phases: phases as RoutingResults['stream']['phases'] },
      };
      for (const m of merchants) results[m.strategy] = resultOf(m);
      return results;
    },
  };
}

/** The scenario's table, one column per strategy. */
export function routingRows(results: RoutingResults): string[] {
  const runs = STRATEGY_NAMES.flatMap((name) => (results[name] ? [[name, results[name]] as const] : []));
  const row = (label: string, cell: (r: StrategyResult) => unknown) => `${label.padEnd(40)}${runs.map(([, r]) => String(cell(r)).padEnd(26)).join('')}`;
  const phaseNames = PHASES.map((p) => p.name);
  const seconds = phaseNames.map((n) => `${n} ${results.stream.phases[n].payments} in ${results.stream.phases[n].seconds} s`).join(', ');
  return [
    `phases: ${seconds}`,
    `${`routing (${results.stream.payments} payments, concurrency ${results.stream.concurrency})`.padEnd(40)}${runs.map(([name]) => name.padEnd(26)).join('')}`,
    row('first-attempt approval', (r) => r.first_attempt_approval_rate),
    row('approval (payments)', (r) => r.approval_rate),
    row('attempts per payment', (r) => r.mean_attempts),
    row('wasted attempts', (r) => r.wasted_attempts),
    row('confirm p50 / p99 ms', (r) => `${r.p50_ms} / ${r.p99_ms}`),
    row(`payments to move away (${SUSTAINED_RUN} in a row)`, (r) => r.payments_to_move_away ?? 'never'),
    row(`payments to return (${RETURN_SHARE * RETURN_WINDOW}/${RETURN_WINDOW} on A)`, (r) => r.payments_to_return ?? 'not within the run'),
    row('A first, by phase', (r) => phaseNames.map((n) => r.phases[n].a_first_share).join(' / ')),
    row('first-attempt approval, by phase', (r) => phaseNames.map((n) => r.phases[n].first_attempt_approval_rate).join(' / ')),
  ];
}
