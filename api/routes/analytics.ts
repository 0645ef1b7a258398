import { Type } from '@sinclair/typebox';
import { disputeRates } from '../../db/dispute-analytics';
import { healthSeries, healthWindows, type AnalyticsInterval } from '../../db/provider-health';
import { findProviderConfig, listProviderConfigs } from '../../db/provider-configs';
import { routingSettingsOf } from '../../db/routing-settings';
import { circuitState } from '../../lib/routing/adaptive';
import { ApiError } from '../errors';
import { ANALYTICS_INTERVALS, pointCount, ProviderAnalyticsSchema, serializeProviderAnalytics, type AnalyticsConfig } from '../../resources/analytics';
import { defineRoute } from '../route';
import { Obj } from '../../resources/schemas';
import { requestTime } from '../validation';

const HOUR_MS = 3_600_000;
const DEFAULT_RANGE_MS = 24 * HOUR_MS;
const MAX_RANGE_DAYS = 31;
const MAX_POINTS = 1_500;


/** [from, to) and the interval, as asked or defaulted (the last 24 hours, by hour); 400 when out of bounds. */
function rangeOf(query: { from?: string; to?: string; interval?: AnalyticsInterval }, now: Date) {
  const interval = query.interval ?? 'hour';
  const to = query.to !== undefined ? requestTime(query.to, 'query/to') : now;
  const from = query.from !== undefined ? requestTime(query.from, 'query/from') : new Date(to.getTime() - DEFAULT_RANGE_MS);
  if (from >= to) throw ApiError.validation([{ path: 'query/from', message: 'must be before to' }]);
  if (to.getTime() - from.getTime() > MAX_RANGE_DAYS * 24 * HOUR_MS) {
    throw ApiError.validation([{ path: 'query/from', message: `must be at most ${MAX_RANGE_DAYS} days before to` }]);
  }
  const points = pointCount(from, to, interval);
  if (points > MAX_POINTS) {
    throw ApiError.validation([{
      path: 'query/interval', message: `gives ${points} points per series, more than ${MAX_POINTS}: choose a longer interval or a shorter range`,
    }]);
  }
  return { from, to, interval };
}

export const analyticsRoutes = [
  defineRoute({
    method: 'get',
    path: '/analytics/providers',
    tag: 'Analytics',
    summary: 'How each provider config did over a range: attempts, outcomes, approval rate, latency, dispute rate, and its circuit now',
    permission: 'routing:read',
    message: 'Provider analytics retrieved',
    query: Obj({
      from: Type.Optional(Type.String({ format: 'date-time', description: 'start of the range (inclusive); default: 24 hours before `to`' })),
      to: Type.Optional(Type.String({ format: 'date-time', description: `end of the range (exclusive); default: now. At most ${MAX_RANGE_DAYS} days after \`from\`` })),
      interval: Type.Optional(Type.Unsafe<AnalyticsInterval>({
        type: 'string', enum: [...ANALYTICS_INTERVALS], default: 'hour',
        description: `the series' step, in UTC; at most ${MAX_POINTS} points per series`,
      })),
    }),
    response: ProviderAnalyticsSchema,
    async handler({ query, access, deps }) {
      const { account, environment: env } = await access.forAccount();
      const now = new Date();
      const range = rangeOf(query, now);
      const [settings, configs, rows, disputes] = await Promise.all([
        routingSettingsOf(deps.db, env, account.id),
        listProviderConfigs(deps.db, deps.vault, env, account.id),
        healthSeries(deps.db, env, account.id, range),
        disputeRates(deps.db, env, account.id, range),
      ]);
      // Configs deleted since they took payments (or disputes) in the range are shown too, under their names.
      const listed = new Set(configs.map((c) => c.id));
      const active = [...rows, ...disputes].map((r) => r.payment_provider_config_id);
      const deleted = await Promise.all([...new Set(active)]
        .filter((id) => !listed.has(id))
        .map((id) => findProviderConfig(deps.db, deps.vault, env, id)));
      const shown: { id: string; name: string }[] = [...configs];
      for (const config of deleted) if (config?.account_id === account.id) shown.push(config);
      const windows = await healthWindows(deps.db, env, shown.map((c) => c.id), settings.elimination.window_minutes, now);
      const withCircuits: AnalyticsConfig[] = shown.map((c) => ({ id: c.id, name: c.name, circuit: circuitState(windows[c.id], settings.elimination, now.getTime()) }));
      return { data: serializeProviderAnalytics(range, withCircuits, rows, disputes) };
    },
  }),
];
