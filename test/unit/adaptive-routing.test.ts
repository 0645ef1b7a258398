import { describe, expect, it } from 'vitest';
import { approvalEstimate, circuitState, paymentDraw, rankCandidates } from '../../lib/routing/adaptive';
import {
  DEFAULT_ROUTING_SETTINGS,
  HealthWindow,
  RankedCandidate,
  RankingReason,
  RankInput,
  RoutingSettings,
  RoutingStrategy,
} from '../../lib/routing/adaptive-contract';

const NOW = '2026-03-01T12:00:00.000Z';
const ago = (seconds: number): string => new Date(Date.parse(NOW) - seconds * 1000).toISOString();

/** The static plan's order is ppc_a, ppc_b, ppc_c (cheapest first); ppc_d has no fee. */
const FEES: Record<string, number | null> = { ppc_a: 100, ppc_b: 200, ppc_c: 300, ppc_d: null };

interface SettingsPatch {
  strategy?: RoutingStrategy;
  success_rate?: Partial<RoutingSettings['success_rate']>;
  volume_split?: Partial<RoutingSettings['volume_split']>;
  elimination?: Partial<RoutingSettings['elimination']>;
}

// The tables pin orders without draws: no exploration and no probes unless a case asks for them.
function settingsWith(patch: SettingsPatch = {}, base: SettingsPatch = { success_rate: { exploration_share: 0 }, elimination: { probe_share: 0, enabled: true } }): RoutingSettings {
  const d = DEFAULT_ROUTING_SETTINGS;
  return {
    strategy: patch.strategy ?? d.strategy,
    success_rate: { ...d.success_rate, ...base.success_rate, ...patch.success_rate },
    volume_split: { ...d.volume_split, ...patch.volume_split },
    elimination: { ...d.elimination, ...base.elimination, ...patch.elimination },
  };
}

function windows(partials: Record<string, Partial<HealthWindow>> = {}): Record<string, HealthWindow> {
  return Object.fromEntries(Object.entries(partials).map(([id, partial]) => [id, window(id, partial)]));
}

function window(id: string, partial: Partial<HealthWindow>): HealthWindow {
  return {
    provider_config_id: id, attempts: 0, approvals: 0, hard_declines: 0, soft_declines: 0,
    transport_errors: 0, unknown: 0, latency_ms_sum: 0, last_error_at: null, ...partial,
  };
}

/** Success-window counts: the rest of the attempts are soft declines. */
const approved = (approvals: number, attempts: number, hard_declines = 0): Partial<HealthWindow> =>
  ({ attempts, approvals, hard_declines, soft_declines: attempts - approvals - hard_declines });

/** Elimination-window counts: `errors` transport errors among `attempts`, the last `secondsAgo`. */
const failing = (errors: number, attempts: number, secondsAgo: number): Partial<HealthWindow> =>
  ({ attempts, transport_errors: errors, approvals: attempts - errors, last_error_at: ago(secondsAgo) });

interface Scenario {
  candidates?: string[];
  settings?: SettingsPatch;
  success?: Record<string, Partial<HealthWindow>>;
  elimination?: Record<string, Partial<HealthWindow>>;
  payment_id?: string;
}

function inputOf(scenario: Scenario, settings = settingsWith(scenario.settings)): RankInput {
  return {
    candidates: (scenario.candidates ?? ['ppc_a', 'ppc_b', 'ppc_c']).map((id) => ({ provider_config_id: id, estimated_fee: FEES[id] ?? null })),
    health: { success: windows(scenario.success), elimination: windows(scenario.elimination) },
    settings,
    payment_id: scenario.payment_id ?? 'pay_01JTEST',
    now: NOW,
  };
}

const ids = (ranked: RankedCandidate[]): string[] => ranked.map((entry) => entry.provider_config_id);
const reasonOf = (ranked: RankedCandidate[], id: string): RankingReason => ranked.find((entry) => entry.provider_config_id === id)!.reason;
const paymentIds = (count: number): string[] => Array.from({ length: count }, (_, i) => `pay_01J${String(i).padStart(8, '0')}`);

interface Case extends Scenario {
  name: string;
  order: string[];
  reasons?: Record<string, Partial<RankingReason>>;
}

const leastCost: Case[] = [
  {
    name: 'keeps the static (rules → cost) order when every circuit is closed',
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
    reasons: { ppc_a: { strategy: 'least_cost', score: null, circuit: 'closed', explored: false, window: null, note: 'least cost, fee 100 · circuit closed' } },
  },
  { name: 'ranks nothing when there is no candidate', candidates: [], order: [] },
  {
    name: 'says so when a candidate has no fee',
    candidates: ['ppc_a', 'ppc_d'],
    order: ['ppc_a', 'ppc_d'],
    reasons: { ppc_d: { note: 'least cost, fee unknown · circuit closed' } },
  },
  {
    name: 'puts open circuits behind all others, keeping their relative order',
    candidates: ['ppc_a', 'ppc_b', 'ppc_c', 'ppc_d'],
    elimination: { ppc_a: failing(8, 10, 12), ppc_c: failing(10, 10, 1) },
    order: ['ppc_b', 'ppc_d', 'ppc_a', 'ppc_c'],
    reasons: {
      ppc_a: { circuit: 'open', explored: false, note: 'least cost, fee 100 · circuit open: 8 of 10 attempts failed in 5 min, last error 12 s ago' },
      ppc_b: { circuit: 'closed' },
    },
  },
  {
    name: 'records the elimination window it read, without the config id',
    elimination: { ppc_a: failing(1, 10, 100) },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
    reasons: { ppc_a: { window: { attempts: 10, approvals: 9, hard_declines: 0, soft_declines: 0, transport_errors: 1, unknown: 0, latency_ms_sum: 0, last_error_at: ago(100) } }, ppc_b: { window: null } },
  },
  {
    name: 'ignores health of configs that are not candidates',
    elimination: { ppc_x: failing(10, 10, 1) },
    success: { ppc_y: approved(0, 100) },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
  },
  {
    name: 'leaves every circuit closed when elimination is off',
    settings: { elimination: { enabled: false } },
    elimination: { ppc_a: failing(10, 10, 1) },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
    reasons: { ppc_a: { circuit: 'closed', window: null, note: 'least cost, fee 100 · circuit check off' } },
  },
];

const circuits: Case[] = [
  {
    name: 'opens at the threshold: 5 of 10 attempts failed',
    elimination: { ppc_a: failing(5, 10, 3) },
    order: ['ppc_b', 'ppc_c', 'ppc_a'],
    reasons: { ppc_a: { circuit: 'open' } },
  },
  {
    name: 'stays closed just below the threshold: 4 of 10',
    elimination: { ppc_a: failing(4, 10, 3) },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
    reasons: { ppc_a: { circuit: 'closed' } },
  },
  {
    name: 'stays closed below min_attempts, however bad',
    elimination: { ppc_a: failing(4, 4, 1) },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
    reasons: { ppc_a: { circuit: 'closed' } },
  },
  {
    name: 'opens at min_attempts',
    elimination: { ppc_a: failing(5, 5, 1) },
    order: ['ppc_b', 'ppc_c', 'ppc_a'],
  },
  {
    name: 'counts unknown outcomes as errors',
    elimination: { ppc_a: { attempts: 10, approvals: 4, transport_errors: 3, unknown: 3, last_error_at: ago(2) } },
    order: ['ppc_b', 'ppc_c', 'ppc_a'],
    reasons: { ppc_a: { circuit: 'open', note: 'least cost, fee 100 · circuit open: 6 of 10 attempts failed in 5 min, last error 2 s ago' } },
  },
  {
    name: 'never counts hard or soft declines as errors',
    elimination: { ppc_a: { attempts: 10, hard_declines: 6, soft_declines: 4 } },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
    reasons: { ppc_a: { circuit: 'closed' } },
  },
  {
    name: 'counts declines as attempts only: 4 errors among 6 hard declines stay below 50%',
    elimination: { ppc_a: { attempts: 10, hard_declines: 6, transport_errors: 4, last_error_at: ago(1) } },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
  },
  {
    name: 'is open while the last error is younger than the cool-down (29 s of 30)',
    elimination: { ppc_a: failing(8, 10, 29) },
    order: ['ppc_b', 'ppc_c', 'ppc_a'],
    reasons: { ppc_a: { circuit: 'open' } },
  },
  {
    name: 'turns half-open when the cool-down has passed (30 s); unprobed, it is tried last',
    elimination: { ppc_a: failing(8, 10, 30) },
    order: ['ppc_b', 'ppc_c', 'ppc_a'],
    reasons: {
      ppc_a: {
        circuit: 'half_open', explored: false,
        note: 'least cost, fee 100 · circuit half-open: 8 of 10 attempts failed in 5 min, last error 30 s ago; not probed, tried last (probed by 0% of payments)',
      },
    },
  },
  {
    name: 'keeps a probed half-open candidate where the strategy put it',
    settings: { elimination: { probe_share: 1 } },
    elimination: { ppc_a: failing(8, 10, 120) },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
    reasons: {
      ppc_a: {
        circuit: 'half_open', explored: true,
        note: 'least cost, fee 100 · circuit half-open: 8 of 10 attempts failed in 5 min, last error 120 s ago; probed (100% of payments)',
      },
    },
  },
  {
    name: 'honours the cool-down of the settings',
    settings: { elimination: { cool_down_seconds: 300 } },
    elimination: { ppc_a: failing(8, 10, 120) },
    order: ['ppc_b', 'ppc_c', 'ppc_a'],
    reasons: { ppc_a: { circuit: 'open' } },
  },
  {
    name: 'treats an error stamped in the future as just now',
    elimination: { ppc_a: failing(8, 10, -5) },
    order: ['ppc_b', 'ppc_c', 'ppc_a'],
    reasons: { ppc_a: { circuit: 'open', note: 'least cost, fee 100 · circuit open: 8 of 10 attempts failed in 5 min, last error 0 s ago' } },
  },
  {
    name: 'is half-open when the window failed but knows no time for the last error',
    elimination: { ppc_a: { ...failing(8, 10, 0), last_error_at: null } },
    order: ['ppc_b', 'ppc_c', 'ppc_a'],
    reasons: { ppc_a: { circuit: 'half_open' } },
  },
  {
    name: 'opens no circuit of a config that never failed, even at a threshold of 0',
    settings: { elimination: { error_rate_threshold: 0 } },
    elimination: { ppc_a: approved(10, 10) },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
  },
];

const successRate: Case[] = [
  {
    name: 'orders by the estimated approval probability',
    success: { ppc_a: approved(21, 50), ppc_b: approved(45, 50) },
    order: ['ppc_b', 'ppc_c', 'ppc_a'],
    reasons: {
      ppc_a: { strategy: 'success_rate', score: 30 / 60, explored: false, note: 'approval 0.50 (21/50 non-hard + prior 9/10) · circuit closed' },
      ppc_b: { score: 54 / 60 },
      ppc_c: { score: 0.9, window: null, note: 'approval 0.90 (no data, prior 9/10) · circuit closed' },
    },
  },
  {
    name: 'breaks ties by cost: estimates within 0.02 keep the static order',
    success: { ppc_a: approved(90, 100), ppc_b: approved(91, 100), ppc_c: approved(92, 100) },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
  },
  {
    name: 'counts exactly 0.02 apart as a tie',
    settings: { success_rate: { prior_approvals: 0, prior_attempts: 0 } },
    success: { ppc_a: approved(90, 100), ppc_b: approved(92, 100) },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
  },
  {
    name: 'prefers the better one just beyond 0.02 when the cheaper one\'s interval cannot reach it either',
    settings: { success_rate: { prior_approvals: 0, prior_attempts: 0 } },
    success: { ppc_a: approved(8900, 10000), ppc_b: approved(9210, 10000), ppc_c: approved(8900, 10000) },
    order: ['ppc_b', 'ppc_a', 'ppc_c'],
  },
  {
    name: 'does not chain ties: each pick is within 0.02 of the best still unplaced',
    settings: { success_rate: { prior_approvals: 0, prior_attempts: 0 } },
    success: { ppc_a: approved(8900, 10000), ppc_b: approved(9100, 10000), ppc_c: approved(9200, 10000) },
    order: ['ppc_b', 'ppc_c', 'ppc_a'],
  },
  {
    name: 'gives a cheaper provider with little data back the traffic while its interval reaches the best (recovery)',
    settings: { success_rate: { prior_approvals: 0, prior_attempts: 0 } },
    success: { ppc_a: approved(12, 12), ppc_b: approved(990, 1000) },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
  },
  {
    name: 'keeps a cheaper provider with as little data but many declines behind',
    settings: { success_rate: { prior_approvals: 0, prior_attempts: 0 } },
    success: { ppc_a: approved(5, 12), ppc_b: approved(990, 1000) },
    order: ['ppc_b', 'ppc_a', 'ppc_c'],
  },
  {
    name: 'lets the prior dominate little data: 1/1 does not beat a cheaper 9/10',
    success: { ppc_a: approved(9, 10), ppc_b: approved(1, 1) },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
    reasons: { ppc_a: { score: 18 / 20 }, ppc_b: { score: 10 / 11 } },
  },
  {
    name: 'lets plenty of data dominate the prior',
    success: { ppc_a: approved(900, 1000), ppc_b: approved(990, 1000) },
    order: ['ppc_b', 'ppc_a', 'ppc_c'],
  },
  {
    name: 'does not hold hard declines against a provider',
    success: { ppc_a: approved(150, 200), ppc_b: approved(10, 20, 10) },
    order: ['ppc_b', 'ppc_c', 'ppc_a'],
    reasons: { ppc_b: { score: 19 / 20, note: 'approval 0.95 (10/10 non-hard + prior 9/10) · circuit closed' }, ppc_a: { score: 159 / 210 } },
  },
  {
    name: 'puts candidates without any estimate (no data, no prior) last, in cost order',
    settings: { success_rate: { prior_approvals: 0, prior_attempts: 0 } },
    success: { ppc_c: approved(1, 2) },
    order: ['ppc_c', 'ppc_a', 'ppc_b'],
    reasons: { ppc_a: { score: null, note: 'approval unknown (no data, prior 0/0) · circuit closed' } },
  },
  {
    name: 'puts the best candidate behind the others when its circuit is open',
    success: { ppc_c: approved(100, 100) },
    elimination: { ppc_c: failing(8, 10, 5) },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
    reasons: { ppc_c: { circuit: 'open', score: 109 / 110 } },
  },
  {
    name: 'with no data at all ranks like least cost',
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
  },
];

const volumeSplit: Case[] = [
  {
    name: 'puts the only allocated candidate first; the others keep the static order',
    settings: { volume_split: { allocations: [{ provider_config_id: 'ppc_c', percent: 100 }] } },
    order: ['ppc_c', 'ppc_a', 'ppc_b'],
    reasons: {
      ppc_c: { strategy: 'volume_split', score: 1, note: 'split bucket 100% · circuit closed' },
      ppc_a: { score: null, note: 'not in the split · least cost, fee 100 · circuit closed' },
    },
  },
  {
    name: 'renormalizes over the allocated configs that are candidates',
    settings: { volume_split: { allocations: [{ provider_config_id: 'ppc_x', percent: 90 }, { provider_config_id: 'ppc_b', percent: 10 }] } },
    order: ['ppc_b', 'ppc_a', 'ppc_c'],
    reasons: { ppc_b: { score: 1, note: 'split bucket 100% · circuit closed' } },
  },
  {
    name: 'without allocations ranks like least cost',
    settings: { volume_split: { allocations: [] } },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
    reasons: { ppc_a: { strategy: 'volume_split', score: null, note: 'no split allocation among the candidates, least cost, fee 100 · circuit closed' } },
  },
  {
    name: 'with allocations only for configs that are not candidates ranks like least cost',
    settings: { volume_split: { allocations: [{ provider_config_id: 'ppc_x', percent: 100 }] } },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
  },
  {
    name: 'puts the chosen candidate behind the others when its circuit is open',
    settings: { volume_split: { allocations: [{ provider_config_id: 'ppc_c', percent: 100 }] } },
    elimination: { ppc_c: failing(8, 10, 5) },
    order: ['ppc_a', 'ppc_b', 'ppc_c'],
    reasons: { ppc_c: { circuit: 'open', score: 1 } },
  },
];

function runCases(strategy: RoutingStrategy, cases: Case[]): void {
  it.each(cases)('$name', (scenario) => {
    const ranked = rankCandidates(inputOf({ ...scenario, settings: { strategy, ...scenario.settings } }));
    expect(ids(ranked)).toEqual(scenario.order);
    for (const [id, reason] of Object.entries(scenario.reasons ?? {})) expect(reasonOf(ranked, id), id).toMatchObject(reason);
  });
}

describe('rankCandidates: least_cost', () => runCases('least_cost', leastCost));
describe('rankCandidates: the circuit breaker', () => runCases('least_cost', circuits));
describe('rankCandidates: success_rate', () => runCases('success_rate', successRate));
describe('rankCandidates: volume_split', () => runCases('volume_split', volumeSplit));

describe('rankCandidates over many payments', () => {
  const many = paymentIds(10_000);
  const firstShare = (scenario: Scenario, id: string, check: (ranked: RankedCandidate[]) => void = () => {}): number => {
    const settings = settingsWith(scenario.settings, { elimination: { enabled: true } });
    const hits = many.filter((payment_id) => {
      const ranked = rankCandidates(inputOf({ ...scenario, payment_id }, settings));
      check(ranked);
      return ranked[0].provider_config_id === id;
    });
    return hits.length / many.length;
  };

  it.each([[0.05, '5%'], [0.3, '30%']])('explores %s of payments, each with a non-best candidate first', (share, shown) => {
    const scenario: Scenario = { settings: { strategy: 'success_rate', success_rate: { exploration_share: share } }, success: { ppc_a: approved(100, 100) } };
    let explored = 0;
    const firstOther = firstShare(scenario, 'ppc_a', (ranked) => {
      const flagged = ranked.filter((entry) => entry.reason.explored);
      if (ranked[0].provider_config_id !== 'ppc_a') {
        expect(flagged.map((entry) => entry.provider_config_id)).toEqual([ranked[0].provider_config_id]);
        expect(ranked[0].reason.note.startsWith(`explored (${shown} of payments) · approval`)).toBe(true);
        explored += 1;
      } else {
        expect(flagged).toEqual([]);
      }
    });
    expect(Math.abs(1 - firstOther - share)).toBeLessThanOrEqual(0.015);
    expect(explored / many.length).toBeCloseTo(1 - firstOther, 10);
  });

  it('chooses the explored candidate uniformly among the non-best ones', () => {
    const scenario: Scenario = { settings: { strategy: 'success_rate', success_rate: { exploration_share: 1 } }, success: { ppc_a: approved(100, 100) } };
    expect(firstShare(scenario, 'ppc_a')).toBe(0);
    expect(Math.abs(firstShare(scenario, 'ppc_b') - 0.5)).toBeLessThanOrEqual(0.02);
  });

  it('never explores a candidate whose circuit is open, nor with a single candidate', () => {
    const open: Scenario = {
      settings: { strategy: 'success_rate', success_rate: { exploration_share: 1 } },
      success: { ppc_a: approved(100, 100) },
      elimination: { ppc_b: failing(8, 10, 1) },
    };
    expect(firstShare(open, 'ppc_c')).toBe(1);
    const alone: Scenario = { candidates: ['ppc_a'], settings: { strategy: 'success_rate', success_rate: { exploration_share: 1 } } };
    expect(firstShare(alone, 'ppc_a', (ranked) => expect(ranked[0].reason.explored).toBe(false))).toBe(1);
  });

  it('explores the same payments whenever it is asked, and more payments only add to them', () => {
    const exploredIds = (share: number): Set<string> => new Set(many.filter((payment_id) => {
      const input = inputOf({ payment_id, settings: { strategy: 'success_rate', success_rate: { exploration_share: share } } }, undefined);
      const once = rankCandidates(input);
      expect(rankCandidates(structuredClone(input))).toEqual(once);
      return once[0].reason.explored;
    }));
    const five = exploredIds(0.05);
    const thirty = exploredIds(0.3);
    expect([...five].every((id) => thirty.has(id))).toBe(true);
  });

  it('probes a half-open candidate with probe_share of payments and treats it as open otherwise', () => {
    const scenario: Scenario = { settings: { elimination: { probe_share: 0.1 } }, elimination: { ppc_a: failing(8, 10, 60) } };
    const probed = firstShare(scenario, 'ppc_a', (ranked) => {
      const first = ranked[0].provider_config_id === 'ppc_a';
      expect(ids(ranked)).toEqual(first ? ['ppc_a', 'ppc_b', 'ppc_c'] : ['ppc_b', 'ppc_c', 'ppc_a']);
      expect(reasonOf(ranked, 'ppc_a')).toMatchObject({ circuit: 'half_open', explored: first });
    });
    expect(Math.abs(probed - 0.1)).toBeLessThanOrEqual(0.015);
  });

  it.each([
    [{ ppc_a: 30, ppc_b: 70 }],
    [{ ppc_a: 20, ppc_b: 30, ppc_c: 50 }],
    [{ ppc_c: 1, ppc_a: 1, ppc_b: 2 }],
  ])('splits the first attempt in proportion to %j', (percents) => {
    const allocations = Object.entries(percents).map(([provider_config_id, percent]) => ({ provider_config_id, percent }));
    const total = allocations.reduce((sum, allocation) => sum + allocation.percent, 0);
    const scenario: Scenario = { settings: { strategy: 'volume_split', volume_split: { allocations } } };
    for (const { provider_config_id, percent } of allocations) {
      expect(Math.abs(firstShare(scenario, provider_config_id) - percent / total), provider_config_id).toBeLessThanOrEqual(0.02);
    }
  });

  it.each(['least_cost', 'success_rate', 'volume_split'] as const)('returns every candidate exactly once (%s)', (strategy) => {
    const candidates = ['ppc_a', 'ppc_b', 'ppc_c', 'ppc_d'];
    const scenario: Scenario = {
      candidates,
      settings: {
        strategy,
        success_rate: { exploration_share: 0.5 },
        volume_split: { allocations: [{ provider_config_id: 'ppc_b', percent: 50 }, { provider_config_id: 'ppc_d', percent: 50 }] },
        elimination: { probe_share: 0.5 },
      },
      success: { ppc_a: approved(5, 10), ppc_c: approved(10, 10) },
      elimination: { ppc_b: failing(9, 10, 2), ppc_d: failing(9, 10, 200) },
    };
    firstShare(scenario, 'ppc_a', (ranked) => expect([...ids(ranked)].sort()).toEqual(candidates));
  });
});

describe('the building blocks', () => {
  it('draws uniformly in [0, 1), the same for the same payment and salt', () => {
    const draws = paymentIds(10_000).map((id) => paymentDraw(id, 'split'));
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...draws)).toBeLessThan(1);
    for (let decile = 0; decile < 10; decile += 1) {
      const share = draws.filter((draw) => Math.floor(draw * 10) === decile).length / draws.length;
      expect(Math.abs(share - 0.1), `decile ${decile}`).toBeLessThanOrEqual(0.015);
    }
    expect(paymentDraw('pay_1', 'split')).toBe(paymentDraw('pay_1', 'split'));
    expect(paymentDraw('pay_1', 'split')).not.toBe(paymentDraw('pay_1', 'exploration'));
  });

  it('estimates approval with the prior as pseudo-counts', () => {
    const success = DEFAULT_ROUTING_SETTINGS.success_rate;
    expect(approvalEstimate(undefined, success)).toBe(0.9);
    expect(approvalEstimate(window('ppc_a', approved(21, 50)), success)).toBe(30 / 60);
    expect(approvalEstimate(window('ppc_a', approved(0, 5, 5)), success)).toBe(0.9);
    expect(approvalEstimate(undefined, { ...success, prior_approvals: 0, prior_attempts: 0 })).toBeNull();
  });

  it('tells the circuit of a window at a time (what analytics shows)', () => {
    const elimination = { ...DEFAULT_ROUTING_SETTINGS.elimination, enabled: true };
    const now = Date.parse(NOW);
    expect(circuitState(undefined, elimination, now)).toBe('closed');
    expect(circuitState(window('ppc_a', failing(8, 10, 10)), elimination, now)).toBe('open');
    expect(circuitState(window('ppc_a', failing(8, 10, 10)), elimination, now + 20_000)).toBe('half_open');
    expect(circuitState(window('ppc_a', failing(8, 10, 10)), { ...elimination, enabled: false }, now)).toBe('closed');
  });

  it('stores the window without its config id (the candidate names it)', () => {
    const ranked = rankCandidates(inputOf({ settings: { strategy: 'success_rate' }, success: { ppc_a: approved(1, 2) } }));
    expect(reasonOf(ranked, 'ppc_a').window).toEqual({ ...window('ppc_a', approved(1, 2)), provider_config_id: undefined });
    expect(reasonOf(ranked, 'ppc_a').window).not.toHaveProperty('provider_config_id');
  });

  it('refuses a plan time that is not a time', () => {
    expect(() => rankCandidates({ ...inputOf({}), now: 'soon' })).toThrow(RangeError);
  });
});
