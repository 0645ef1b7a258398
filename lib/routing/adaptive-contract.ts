// Adaptive routing's shared vocabulary (docs/routing.md): the account's routing settings, a provider
// config's health over a window, and why a ranked candidate is where it is. Pure types and defaults; the
// decision itself is lib/routing/adaptive.ts, the recorder and the windows db/provider-health.ts.

export const ROUTING_STRATEGIES = ['least_cost', 'success_rate', 'volume_split'] as const;
export type RoutingStrategy = (typeof ROUTING_STRATEGIES)[number];

/** An account's routing settings (`GET/PUT /v1/routing-settings`); absent → DEFAULT_ROUTING_SETTINGS. */
export interface RoutingSettings {
  /** `least_cost`: today's rules → least cost. */
  strategy: RoutingStrategy;
  success_rate: {
    /** The sliding window the approval rate is estimated over. */
    window_minutes: number;
    /** Share of payments (0..1, deterministic per payment id) that put a non-best candidate first, so a recovering provider is noticed. */
    exploration_share: number;
    /** The prior, as pseudo-counts: `prior_attempts` attempts of which `prior_approvals` approved (little data → the prior). */
    prior_approvals: number;
    prior_attempts: number;
  };
  volume_split: {
    /** Percent per config, summing to 100; configs not listed keep their rules/cost order behind the chosen one. */
    allocations: { provider_config_id: string; percent: number }[];
  };
  elimination: {
    enabled: boolean;
    window_minutes: number;
    /** (transport errors + unknown outcomes) / attempts at or above this opens the circuit. */
    error_rate_threshold: number;
    /** Fewer attempts than this in the window never open the circuit. */
    min_attempts: number;
    /** Open this long after the last error, then half-open: probed by `probe_share` of payments. */
    cool_down_seconds: number;
    probe_share: number;
  };
}

export const DEFAULT_ROUTING_SETTINGS: RoutingSettings = {
  strategy: 'least_cost',
  success_rate: { window_minutes: 15, exploration_share: 0.05, prior_approvals: 9, prior_attempts: 10 },
  volume_split: { allocations: [] },
  elimination: { enabled: false, window_minutes: 5, error_rate_threshold: 0.5, min_attempts: 5, cool_down_seconds: 30, probe_share: 0.1 },
};

/** What happened at one provider config over a window (counts of charge outcomes; latency of the authorize calls). */
export interface HealthWindow {
  provider_config_id: string;
  attempts: number;
  approvals: number;
  hard_declines: number;
  soft_declines: number;
  transport_errors: number;
  unknown: number;
  latency_ms_sum: number;
  /** When the last transport error or unknown outcome was recorded (ISO), if any in the window. */
  last_error_at: string | null;
}

export type CircuitState = 'closed' | 'open' | 'half_open';

/** Why a candidate is where it is in the plan: stored per candidate on the routing plan, shown by the API and the dashboard. */
export interface RankingReason {
  strategy: RoutingStrategy;
  /** The estimated authorization probability (success_rate), or the split bucket's share (volume_split). */
  score: number | null;
  /** The window the decision read (null without data). */
  window: Omit<HealthWindow, 'provider_config_id'> | null;
  circuit: CircuitState;
  /** Put first by exploration (success_rate) or by a half-open probe. */
  explored: boolean;
  /** One line for people: "approval 0.42 (21/50) below 0.91 of ppc_…", "circuit open: 8/10 errors". */
  note: string;
}

export interface RankInput {
  /** The eligible candidates in rules → least-cost order (the static plan). */
  candidates: { provider_config_id: string; estimated_fee: number | null }[];
  /** Health over the success-rate window and over the elimination window, per config (missing → no data). */
  health: { success: Record<string, HealthWindow>; elimination: Record<string, HealthWindow> };
  settings: RoutingSettings;
  /** Seeds every deterministic choice (exploration, probes, split): a retry of the same payment does not move. */
  payment_id: string;
  /** ISO time the plan is made at. */
  now: string;
}

export interface RankedCandidate { provider_config_id: string; reason: RankingReason }

/** Upper bounds (ms) of the latency histogram buckets recorded per minute; the last bucket is open-ended. */
export const LATENCY_BUCKETS_MS = [10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000] as const;

/** `GET /v1/analytics/providers`: per config, totals and a series over [from, to) by `interval`. */
export interface ProviderAnalytics {
  from: string;
  to: string;
  interval: 'minute' | 'hour' | 'day';
  providers: {
    provider_config_id: string;
    name: string;
    /** The circuit as routing sees it now (elimination window). */
    circuit: CircuitState;
    totals: AnalyticsPoint;
    series: (AnalyticsPoint & { at: string })[];
  }[];
}

export interface AnalyticsPoint {
  attempts: number;
  approvals: number;
  /** approvals / (attempts − hard declines): hard declines are the card's, not the provider's; null without data. */
  approval_rate: number | null;
  hard_declines: number;
  soft_declines: number;
  transport_errors: number;
  unknown: number;
  latency_ms: { mean: number | null; p50: number | null; p95: number | null; p99: number | null };
}
