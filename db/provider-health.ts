// The store of provider health (docs/providers-and-routing.md#provider-health): each environment's
// `provider_health`, the only module that queries it. Rows per provider config, minute, card network,
// currency and shard, counted up by the recorder in the transaction that records a charge's outcome
// (activities/payments/outcomes.ts), so an outcome is counted exactly when it is recorded. Routing reads
// windows of it (`healthWindows`), the analytics API series (`healthSeries`): both sum the shards.

import type { Knex } from 'knex';
import { LATENCY_BUCKETS_MS, type HealthWindow } from '../lib/routing/adaptive-contract';
import { envTable, type Environment } from './environments';

/** What a recorded outcome was, for health: requires_action counts only as the attempt it starts. */
export type HealthOutcome = 'approved' | 'hard_decline' | 'soft_decline' | 'transport_error' | 'unknown' | 'requires_action';

/** One recorded charge outcome at one provider config. */
export interface HealthSample {
  providerConfigId: string;
  accountId: string;
  /** When it was recorded: the row is that minute's. */
  at: Date;
  /** The card's network; '' when unknown. */
  cardNetwork: string;
  currency: string;
  /** The charge's first outcome (it left CREATED): one attempt. Later outcomes of the same charge are not. */
  attempt: boolean;
  outcome: HealthOutcome;
  /** How long the authorize call took, when this outcome came from one. */
  latencyMs: number | null;
}

const COUNTERS = ['attempts', 'approvals', 'hard_declines', 'soft_declines', 'transport_errors', 'unknown'] as const;
type Counter = (typeof COUNTERS)[number];

const COUNTER_OF: Record<HealthOutcome, Counter | null> = {
  approved: 'approvals',
  hard_decline: 'hard_declines',
  soft_decline: 'soft_declines',
  transport_error: 'transport_errors',
  unknown: 'unknown',
  requires_action: null,
};

/** Outcomes that say the provider failed us (the circuit's errors); they stamp `last_error_at`. */
const ERRORS: ReadonlySet<HealthOutcome> = new Set(['transport_error', 'unknown']);

/** The histogram bucket of a latency: the first whose upper bound (inclusive) holds it, else the open-ended last. */
export function latencyBucket(ms: number): number {
  const index = LATENCY_BUCKETS_MS.findIndex((bound) => ms <= bound);
  return index === -1 ? LATENCY_BUCKETS_MS.length : index;
}

const MINUTE_MS = 60_000;

/**
 * How many rows a config's minute (per card network and currency) is counted into. A row's lock lasts
 * until its transaction commits, so one row per minute made concurrent outcomes at a provider wait on
 * each other's commits. Each connection counts into the shard of its backend's pid: transactions side by
 * side run on different connections, and a pool's connections, started together, have neighbouring pids.
 */
export const HEALTH_SHARDS = 16;
const health = (db: Knex, env: Environment) => db(envTable(env, 'provider_health'));

/**
 * Counts one recorded outcome: one statement, an upsert that adds to its connection's shard of the
 * minute's row, so concurrent outcomes at one config never lose a count. Call it in the transaction
 * that records the outcome.
 */
export async function recordHealth(db: Knex, env: Environment, sample: HealthSample): Promise<void> {
  const upsert = healthUpsert(db, env, sample);
  if (upsert) await upsert;
}

/**
 * recordHealth's statement, not yet run (none when the sample counts nothing): to run with another store's
 * (Alongside, db/knex.ts); with `only`, it counts only when that condition holds (db/knex.ts's firstWrote).
 */
export function healthUpsert(db: Knex, env: Environment, sample: HealthSample, only?: Knex.Raw): Knex.Raw | undefined {
  const counter = COUNTER_OF[sample.outcome];
  const counts = Object.fromEntries(COUNTERS.map((c) => [c, 0])) as Record<Counter, number>;
  if (sample.attempt) counts.attempts = 1;
  if (counter) counts[counter] += 1;
  const buckets: number[] = new Array(LATENCY_BUCKETS_MS.length + 1).fill(0);
  const latency = sample.latencyMs === null ? null : Math.max(0, Math.round(sample.latencyMs));
  if (latency !== null) buckets[latencyBucket(latency)] = 1;
  if (!counts.attempts && !counter && latency === null) return undefined;
  return db.raw(`
    INSERT INTO ?? AS h (payment_provider_config_id, minute, card_network, currency, shard, account_id,
      ${COUNTERS.join(', ')}, latency_ms_sum, latency_ms_max, latency_buckets, last_error_at)
    ${only ? 'SELECT ' : 'VALUES ('}?, ?, ?, ?, pg_backend_pid() % ${HEALTH_SHARDS}, ?, ${COUNTERS.map(() => '?').join(', ')}, ?, ?, ?::integer[], ?${only ? ' WHERE ?' : ')'}
    ON CONFLICT (payment_provider_config_id, minute, card_network, currency, shard) DO UPDATE SET
      ${COUNTERS.map((c) => `${c} = h.${c} + EXCLUDED.${c}`).join(',\n      ')},
      latency_ms_sum = h.latency_ms_sum + EXCLUDED.latency_ms_sum,
      latency_ms_max = GREATEST(h.latency_ms_max, EXCLUDED.latency_ms_max),
      latency_buckets = (SELECT array_agg(a + b ORDER BY i) FROM unnest(h.latency_buckets, EXCLUDED.latency_buckets) WITH ORDINALITY AS u(a, b, i)),
      last_error_at = GREATEST(h.last_error_at, EXCLUDED.last_error_at)
  `, [
    envTable(env, 'provider_health'),
    sample.providerConfigId, new Date(Math.floor(sample.at.getTime() / MINUTE_MS) * MINUTE_MS), sample.cardNetwork, sample.currency,
    sample.accountId,
    ...COUNTERS.map((c) => counts[c]),
    latency ?? 0, latency ?? 0, buckets, ERRORS.has(sample.outcome) ? sample.at : null,
    ...(only ? [only] : []),
  ]);
}

const SUMS = [...COUNTERS, 'latency_ms_sum'] as const;
type Sums = Record<(typeof SUMS)[number], number>;

/** The summed columns, as numbers whatever the driver made of them. */
const sumsOf = (row: Sums): Sums => Object.fromEntries(SUMS.map((c) => [c, Number(row[c])])) as Sums;

interface WindowRow extends Sums {
  payment_provider_config_id: string;
  last_error_at: Date | null;
}

/**
 * Each config's health over the last `windowMinutes` before `now` (the minutes from now − window to
 * now, the current one included), in one query on the (config, minute) key. Configs without a row in
 * the window are absent: no data.
 */
export async function healthWindows(
  db: Knex, env: Environment, configIds: readonly string[], windowMinutes: number, now: Date | string,
): Promise<Record<string, HealthWindow>> {
  if (!configIds.length) return {};
  const end = new Date(now);
  const start = new Date(end.getTime() - windowMinutes * MINUTE_MS);
  const rows: WindowRow[] = await health(db, env)
    .whereIn('payment_provider_config_id', [...new Set(configIds)])
    .where('minute', '>=', start)
    .where('minute', '<=', end)
    .groupBy('payment_provider_config_id')
    .select('payment_provider_config_id', ...SUMS.map((c) => db.raw('sum(??) as ??', [c, c])), db.raw('max(last_error_at) as last_error_at'));
  return Object.fromEntries(rows.map((row) => [row.payment_provider_config_id, {
    provider_config_id: row.payment_provider_config_id,
    ...sumsOf(row),
    last_error_at: row.last_error_at ? row.last_error_at.toISOString() : null,
  }]));
}

export type AnalyticsInterval = 'minute' | 'hour' | 'day';

/** The sums of one config over one interval (or any span: they add up). */
export interface HealthSums extends Record<Counter | 'latency_ms_sum' | 'latency_ms_max', number> {
  /** Authorize calls per LATENCY_BUCKETS_MS bucket, the last open-ended. */
  latency_buckets: number[];
}

export interface HealthSeriesRow extends HealthSums {
  payment_provider_config_id: string;
  /** The start of the interval (UTC). */
  at: Date;
}

interface SeriesRow extends Omit<HealthSeriesRow, 'latency_buckets'> { latency_buckets: (string | number)[] }

/**
 * An account's health per config and interval (UTC minutes, hours or days) over [from, to), in one
 * query on the (account, minute) index. Intervals without a row are absent.
 */
export async function healthSeries(
  db: Knex, env: Environment, accountId: string, range: { from: Date; to: Date; interval: AnalyticsInterval },
): Promise<HealthSeriesRow[]> {
  // The histogram summed bucket by bucket (one sum per element: arrays have no element-wise sum).
  const buckets = Array.from({ length: LATENCY_BUCKETS_MS.length + 1 }, (_, i) => `coalesce(sum(latency_buckets[${i + 1}]), 0)`);
  const rows: SeriesRow[] = await health(db, env)
    .where({ account_id: accountId })
    .where('minute', '>=', range.from)
    .where('minute', '<', range.to)
    .groupBy('payment_provider_config_id', 'at')
    .orderBy('payment_provider_config_id').orderBy('at')
    .select(
      'payment_provider_config_id',
      db.raw(`date_trunc(?, minute, 'UTC') as at`, [range.interval]),
      ...SUMS.map((c) => db.raw('sum(??) as ??', [c, c])),
      db.raw('max(latency_ms_max) as latency_ms_max'),
      db.raw(`array[${buckets.join(', ')}] as latency_buckets`),
    );
  return rows.map((row) => ({
    payment_provider_config_id: row.payment_provider_config_id,
    at: row.at,
    ...sumsOf(row),
    latency_ms_max: Number(row.latency_ms_max),
    latency_buckets: row.latency_buckets.map(Number),
  }));
}
