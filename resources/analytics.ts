import { Static, Type } from '@sinclair/typebox';
import type { DisputeRateRow } from '../db/dispute-analytics';
import type { AnalyticsInterval, HealthSeriesRow, HealthSums } from '../db/provider-health';
import {
  LATENCY_BUCKETS_MS, type AnalyticsPoint, type CircuitState, type ProviderAnalytics,
} from '../lib/routing/adaptive-contract';
import { Resource } from './schemas';

// Provider analytics (docs/providers-and-routing.md#provider-analytics): per provider config, totals and
// a series over [from, to), computed from the minute rows of provider health. Pure: sums in, JSON out.

export const ANALYTICS_INTERVALS = ['minute', 'hour', 'day'] as const satisfies readonly AnalyticsInterval[];

const INTERVAL_MS: Record<AnalyticsInterval, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** The starts of the intervals (UTC) that overlap [from, to): one point each. */
export function intervalStarts(from: Date, to: Date, interval: AnalyticsInterval): Date[] {
  const step = INTERVAL_MS[interval];
  const first = Math.floor(from.getTime() / step) * step;
  const starts: Date[] = [];
  for (let at = first; at < to.getTime(); at += step) starts.push(new Date(at));
  return starts;
}

/** How many points a series over [from, to) has, without listing them. */
export function pointCount(from: Date, to: Date, interval: AnalyticsInterval): number {
  const step = INTERVAL_MS[interval];
  return to <= from ? 0 : Math.floor((to.getTime() - 1) / step) - Math.floor(from.getTime() / step) + 1;
}

const EMPTY: HealthSums = {
  attempts: 0, approvals: 0, hard_declines: 0, soft_declines: 0, transport_errors: 0, unknown: 0,
  latency_ms_sum: 0, latency_ms_max: 0, latency_buckets: new Array(LATENCY_BUCKETS_MS.length + 1).fill(0),
};

export function addSums(a: HealthSums, b: HealthSums): HealthSums {
  return {
    attempts: a.attempts + b.attempts,
    approvals: a.approvals + b.approvals,
    hard_declines: a.hard_declines + b.hard_declines,
    soft_declines: a.soft_declines + b.soft_declines,
    transport_errors: a.transport_errors + b.transport_errors,
    unknown: a.unknown + b.unknown,
    latency_ms_sum: a.latency_ms_sum + b.latency_ms_sum,
    latency_ms_max: Math.max(a.latency_ms_max, b.latency_ms_max),
    latency_buckets: a.latency_buckets.map((count, i) => count + (b.latency_buckets[i] ?? 0)),
  };
}

/**
 * The latency at or below which `percent` % of the calls took, from the histogram: the upper bound of
 * the bucket where the cumulative count reaches that share, no more than the largest latency seen
 * (which is also what the open-ended last bucket reports). Null without calls.
 */
export function latencyPercentile(buckets: readonly number[], maxMs: number, percent: number): number | null {
  const total = buckets.reduce((sum, n) => sum + n, 0);
  if (total === 0) return null;
  let cumulative = 0;
  for (let i = 0; i < buckets.length; i += 1) {
    cumulative += buckets[i];
    // Integer arithmetic: cumulative / total ≥ percent / 100.
    if (cumulative * 100 >= percent * total) {
      const bound = LATENCY_BUCKETS_MS[i];
      return bound === undefined ? maxMs : Math.min(bound, maxMs);
    }
  }
  return maxMs;
}

export function analyticsPoint(sums: HealthSums): AnalyticsPoint {
  const calls = sums.latency_buckets.reduce((sum, n) => sum + n, 0);
  // Hard declines are the card's, not the provider's. An approval can land in a later interval than
  // its attempt (after 3-D Secure, or a reconciliation), so a single interval may exceed 1: capped.
  const decided = sums.attempts - sums.hard_declines;
  return {
    attempts: sums.attempts,
    approvals: sums.approvals,
    approval_rate: decided > 0 ? Math.min(1, sums.approvals / decided) : null,
    hard_declines: sums.hard_declines,
    soft_declines: sums.soft_declines,
    transport_errors: sums.transport_errors,
    unknown: sums.unknown,
    latency_ms: {
      mean: calls > 0 ? sums.latency_ms_sum / calls : null,
      p50: latencyPercentile(sums.latency_buckets, sums.latency_ms_max, 50),
      p95: latencyPercentile(sums.latency_buckets, sums.latency_ms_max, 95),
      p99: latencyPercentile(sums.latency_buckets, sums.latency_ms_max, 99),
    },
  };
}

const Count = Type.Integer({ minimum: 0 });
const Ms = Type.Union([Type.Number({ minimum: 0 }), Type.Null()]);

const PointFields = {
  attempts: Count,
  approvals: Count,
  approval_rate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], {
    description: 'approvals / (attempts − hard declines): hard declines are the card\'s, not the provider\'s; null without data',
  }),
  hard_declines: Count,
  soft_declines: Count,
  transport_errors: Count,
  unknown: Count,
  latency_ms: Type.Object({ mean: Ms, p50: Ms, p95: Ms, p99: Ms }, {
    description: 'of the authorize calls; percentiles are histogram bucket upper bounds (at most the largest latency seen); null without calls',
  }),
};

export const AnalyticsPointSchema = Type.Object(PointFields);

export const DisputeRateSchema = Type.Object({
  chargebacks: Type.Integer({ minimum: 0, description: 'disputes opened in the range that are chargebacks (inquiries and early fraud warnings are not)' }),
  captured_charges: Type.Integer({ minimum: 0, description: 'charges made in the range that were captured' }),
  dispute_rate: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], {
    description: 'chargebacks / captured_charges; null without captured charges. Card schemes watch it per merchant (Visa\'s programmes start near 0.9%)',
  }),
}, { description: 'the range\'s chargebacks against its captured charges, for the whole range (no series)' });

export type DisputeRate = Static<typeof DisputeRateSchema>;

export const ProviderAnalyticsSchema = Resource('provider_analytics', {
  from: Type.String({ format: 'date-time' }),
  to: Type.String({ format: 'date-time' }),
  interval: Type.Unsafe<AnalyticsInterval>({ type: 'string', enum: [...ANALYTICS_INTERVALS] }),
  providers: Type.Array(Type.Object({
    provider_config_id: Type.String(),
    name: Type.String(),
    circuit: Type.Unsafe<CircuitState>({
      type: 'string', enum: ['closed', 'open', 'half_open'], description: 'the circuit as routing sees it now (the elimination window)',
    }),
    totals: AnalyticsPointSchema,
    disputes: DisputeRateSchema,
    series: Type.Array(Type.Object({ at: Type.String({ format: 'date-time', description: 'the interval\'s start (UTC)' }), ...PointFields }), {
      description: 'one point per interval overlapping [from, to), oldest first, including those without data',
    }),
  })),
});

export type ProviderAnalyticsResource = Static<typeof ProviderAnalyticsSchema> & ProviderAnalytics;

/** The dispute rate from the counts. A rate can pass 1 when chargebacks come in for charges made before the range. */
export function disputeRate(row: Pick<DisputeRateRow, 'chargebacks' | 'captured_charges'> | undefined): DisputeRate {
  const chargebacks = row?.chargebacks ?? 0;
  const captured = row?.captured_charges ?? 0;
  return { chargebacks, captured_charges: captured, dispute_rate: captured > 0 ? chargebacks / captured : null };
}

export interface AnalyticsConfig { id: string; name: string; circuit: CircuitState }

/** Totals, the dispute rate and a dense series per config; rows of configs not listed are left out. */
export function serializeProviderAnalytics(
  range: { from: Date; to: Date; interval: AnalyticsInterval }, configs: readonly AnalyticsConfig[], rows: readonly HealthSeriesRow[],
  disputeRows: readonly DisputeRateRow[] = [],
): ProviderAnalyticsResource {
  const disputes = new Map(disputeRows.map((r) => [r.payment_provider_config_id, r]));
  const starts = intervalStarts(range.from, range.to, range.interval);
  const byConfig = new Map<string, Map<number, HealthSeriesRow>>();
  for (const row of rows) {
    const series = byConfig.get(row.payment_provider_config_id) ?? new Map<number, HealthSeriesRow>();
    series.set(new Date(row.at).getTime(), row);
    byConfig.set(row.payment_provider_config_id, series);
  }
  return {
    object: 'provider_analytics',
    from: range.from.toISOString(),
    to: range.to.toISOString(),
    interval: range.interval,
    providers: configs.map((config) => {
      const series = byConfig.get(config.id) ?? new Map<number, HealthSeriesRow>();
      const totals = [...series.values()].reduce<HealthSums>((sum, row) => addSums(sum, row), EMPTY);
      return {
        provider_config_id: config.id,
        name: config.name,
        circuit: config.circuit,
        totals: analyticsPoint(totals),
        disputes: disputeRate(disputes.get(config.id)),
        series: starts.map((at) => ({ at: at.toISOString(), ...analyticsPoint(series.get(at.getTime()) ?? EMPTY) })),
      };
    }),
  };
}
