// The routing plan (docs/providers-and-routing.md#routing-plan): which provider configs a payment may try, in which order.
// Pure: the caller loads configs, providers, fees and rules; this decides.

import { rankCandidates } from './adaptive';
import type { HealthWindow, RankingReason, RoutingSettings } from './adaptive-contract';
import { Conditions, matchesConditions, PaymentFacts } from './conditions';

export const DEFAULT_MAX_ATTEMPTS = 3;
export const MAX_ATTEMPTS_LIMIT = 5;

export interface RoutingMethod {
  id: string;
  category: string;
  network: string;
  installments_supported: boolean;
}

export interface RoutingProvider {
  id: string;
  methods: RoutingMethod[];
}

export interface RoutingFee {
  id?: string;
  payment_provider_method_id: string;
  installment_count: number;
  /** Percent of the amount, e.g. 2.9. */
  volume_fee: number;
  /** Minor units of fixed_fee_currency. */
  fixed_fee: number;
  fixed_fee_currency: string;
}

export interface RoutingConfig {
  id: string;
  payment_provider_id: string;
  deleted: boolean;
  created_at: string;
  rules: { conditions: Conditions }[];
  fees: RoutingFee[];
}

export interface RoutingHints {
  provider_config_ids?: string[];
  exclude_provider_config_ids?: string[];
  max_attempts?: number;
}

export interface RoutingPlanInput {
  payment: PaymentFacts;
  configs: RoutingConfig[];
  providers: RoutingProvider[];
  routing?: RoutingHints;
  /**
   * Adaptive routing (docs/routing.md): the account's settings and the configs' recent health. The
   * eligible candidates not named by a hint are ranked by it before the max_attempts cut, so a healthy
   * config can take the place of one whose circuit is open. Absent: rules → least cost.
   */
  adaptive?: {
    settings: RoutingSettings;
    health: { success: Record<string, HealthWindow>; elimination: Record<string, HealthWindow> };
    paymentId: string;
    now: string;
  };
}

export type CandidateReason = 'hint' | 'least_cost' | 'least_cost_cross_currency' | 'no_fee_configured';

export interface Candidate {
  payment_provider_config_id: string;
  payment_provider_id: string;
  payment_provider_method_id: string;
  /** Minor units of the payment currency; null when the config has no fee for the method. */
  estimated_fee: number | null;
  reason: CandidateReason;
  /** Why adaptive routing put it where it is (score, window counts, circuit); absent for hints and without adaptive input. */
  ranking?: RankingReason;
}

export type IneligibleReason =
  | 'deleted'
  | 'excluded'
  | 'provider_not_found'
  | 'no_matching_method'
  | 'installments_unsupported'
  | 'rules_not_matched'
  | 'beyond_max_attempts';

export interface IneligibleConfig {
  payment_provider_config_id: string;
  payment_provider_id: string;
  reason: IneligibleReason;
}

export interface RoutingPlan {
  candidates: Candidate[];
  /** Every config that is not a candidate, and why (kept in the routing plan's metadata). */
  ineligible: IneligibleConfig[];
}

// How comparable a candidate's cost is; lower ranks first. Known fees in the payment currency are
// comparable with each other; a fixed fee in another currency cannot be compared without FX rates,
// and a config without a fee row has an unknown cost, so both rank after the comparable ones.
const COST_TIER: Record<Exclude<CandidateReason, 'hint'>, number> = {
  least_cost: 0,
  least_cost_cross_currency: 1,
  no_fee_configured: 2,
};

interface Costed {
  method: RoutingMethod;
  estimatedFee: number | null;
  reason: Exclude<CandidateReason, 'hint'>;
}

interface Eligible extends Costed {
  config: RoutingConfig;
}

export function buildRoutingPlan(input: RoutingPlanInput): RoutingPlan {
  const { payment, routing = {} } = input;
  const maxAttempts = routing.max_attempts ?? DEFAULT_MAX_ATTEMPTS;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > MAX_ATTEMPTS_LIMIT) {
    throw new RangeError(`max_attempts must be an integer from 1 to ${MAX_ATTEMPTS_LIMIT}`);
  }
  const excluded = new Set(routing.exclude_provider_config_ids ?? []);
  const providers = new Map(input.providers.map((provider) => [provider.id, provider]));

  const eligible: Eligible[] = [];
  const ineligible: IneligibleConfig[] = [];
  for (const config of input.configs) {
    const verdict = assess(config, payment, providers.get(config.payment_provider_id), excluded);
    if (typeof verdict === 'string') {
      ineligible.push({ payment_provider_config_id: config.id, payment_provider_id: config.payment_provider_id, reason: verdict });
    } else {
      eligible.push({ config, ...verdict });
    }
  }

  const ordered = orderCandidates(eligible, routing.provider_config_ids ?? []).map(toCandidate);
  const ranked = input.adaptive ? rank(ordered, input.adaptive) : ordered;
  for (const rest of ranked.slice(maxAttempts)) {
    ineligible.push({ payment_provider_config_id: rest.payment_provider_config_id, payment_provider_id: rest.payment_provider_id, reason: 'beyond_max_attempts' });
  }
  return { candidates: ranked.slice(0, maxAttempts), ineligible };
}

/** Hinted candidates stay first, as the merchant named them; the rest are ranked by adaptive routing. */
function rank(ordered: Candidate[], adaptive: NonNullable<RoutingPlanInput['adaptive']>): Candidate[] {
  const hinted = ordered.filter((c) => c.reason === 'hint');
  const rest = ordered.filter((c) => c.reason !== 'hint');
  const byId = new Map(rest.map((c) => [c.payment_provider_config_id, c]));
  const ranked = rankCandidates({
    candidates: rest.map((c) => ({ provider_config_id: c.payment_provider_config_id, estimated_fee: c.estimated_fee })),
    health: adaptive.health,
    settings: adaptive.settings,
    payment_id: adaptive.paymentId,
    now: adaptive.now,
  });
  return [...hinted, ...ranked.map((r) => ({ ...byId.get(r.provider_config_id)!, ranking: r.reason }))];
}

function assess(
  config: RoutingConfig,
  payment: PaymentFacts,
  provider: RoutingProvider | undefined,
  excluded: Set<string>,
): Costed | IneligibleReason {
  if (config.deleted) return 'deleted';
  if (excluded.has(config.id)) return 'excluded';
  if (!provider) return 'provider_not_found';

  const network = payment.card.network.toUpperCase();
  const cardMethods = provider.methods.filter((m) => m.category === 'CARD' && m.network.toUpperCase() === network);
  if (cardMethods.length === 0) return 'no_matching_method';
  const methods = payment.installments > 1 ? cardMethods.filter((m) => m.installments_supported) : cardMethods;
  if (methods.length === 0) return 'installments_unsupported';

  const rulesMatch = config.rules.length === 0 || config.rules.some((rule) => matchesConditions(rule.conditions, payment));
  if (!rulesMatch) return 'rules_not_matched';

  // A provider may list several methods for one network (e.g. credit and debit); use the cheapest.
  return methods.map((method) => costOf(config, method, payment)).sort(compareCost)[0];
}

function costOf(config: RoutingConfig, method: RoutingMethod, payment: PaymentFacts): Costed {
  const forMethod = config.fees.filter((fee) => fee.payment_provider_method_id === method.id);
  const exact = forMethod.filter((fee) => fee.installment_count === payment.installments);
  // A fee for the exact installment count wins; the single-payment fee is the fallback.
  const rows = exact.length > 0 ? exact : forMethod.filter((fee) => fee.installment_count === 1);
  if (rows.length === 0) return { method, estimatedFee: null, reason: 'no_fee_configured' };
  return rows.map((fee) => estimate(fee, method, payment)).sort(compareCost)[0];
}

function estimate(fee: RoutingFee, method: RoutingMethod, payment: PaymentFacts): Costed {
  const volume = (payment.amount * fee.volume_fee) / 100;
  if (fee.fixed_fee_currency.toUpperCase() === payment.currency.toUpperCase()) {
    return { method, estimatedFee: toMinorUnits(volume + fee.fixed_fee), reason: 'least_cost' };
  }
  // Without FX rates only the volume part is expressible in the payment currency; rank on that.
  return { method, estimatedFee: toMinorUnits(volume), reason: 'least_cost_cross_currency' };
}

// Round half up to whole minor units, after absorbing binary-float noise (2.9 is not exact in binary).
function toMinorUnits(value: number): number {
  return Math.round(Math.round(value * 1e6) / 1e6);
}

function compareCost(a: Costed, b: Costed): number {
  return COST_TIER[a.reason] - COST_TIER[b.reason] || (a.estimatedFee ?? 0) - (b.estimatedFee ?? 0);
}

function compareAge(a: RoutingConfig, b: RoutingConfig): number {
  const byTime = Date.parse(a.created_at) - Date.parse(b.created_at);
  if (byTime) return byTime;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function orderCandidates(eligible: Eligible[], hintIds: string[]): (Eligible & { hinted: boolean })[] {
  const byId = new Map(eligible.map((entry) => [entry.config.id, entry]));
  const hinted = [...new Set(hintIds)].flatMap((id) => {
    const entry = byId.get(id);
    return entry ? [{ ...entry, hinted: true }] : [];
  });
  const hintedIds = new Set(hinted.map((entry) => entry.config.id));
  const ranked = eligible
    .filter((entry) => !hintedIds.has(entry.config.id))
    .sort((a, b) => compareCost(a, b) || compareAge(a.config, b.config))
    .map((entry) => ({ ...entry, hinted: false }));
  return [...hinted, ...ranked];
}

function toCandidate(entry: Eligible & { hinted: boolean }): Candidate {
  return {
    payment_provider_config_id: entry.config.id,
    payment_provider_id: entry.config.payment_provider_id,
    payment_provider_method_id: entry.method.id,
    estimated_fee: entry.estimatedFee,
    reason: entry.hinted ? 'hint' : entry.reason,
  };
}
