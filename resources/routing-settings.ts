import { Static, Type } from '@sinclair/typebox';
import type { StoredRoutingSettings } from '../db/routing-settings';
import { ROUTING_STRATEGIES, type RoutingStrategy } from '../lib/routing/adaptive-contract';
import { iso } from '../lib/timestamps';
import { Obj, Resource, Timestamp } from './schemas';

// An account's routing settings (docs/providers-and-routing.md#routing-settings). Each section's fields
// are declared once: the resource shows them whole, a PUT takes any of them.

const Minutes = (description: string) => Type.Integer({ minimum: 1, maximum: 1440, description: `${description} (minutes, 1 to 1440)` });
const Share = (description: string) => Type.Number({ minimum: 0, maximum: 1, description: `${description} (0 to 1)` });
const PseudoCount = (description: string) => Type.Number({ minimum: 0, maximum: 1_000_000, description });

export const MAX_ALLOCATIONS = 100;

const Strategy = Type.Unsafe<RoutingStrategy>({
  type: 'string',
  enum: [...ROUTING_STRATEGIES],
  description: '`least_cost`: the routing rules, then the lowest estimated fee first. `success_rate`: the highest estimated '
    + 'authorization rate first. `volume_split`: the first candidate chosen by the allocations\' percents.',
});

const SuccessRate = Obj({
  window_minutes: Minutes('the sliding window the approval rate is estimated over'),
  exploration_share: Share('share of payments that put a candidate other than the best first, so that a recovering provider is noticed'),
  prior_approvals: PseudoCount('the prior\'s approvals, as pseudo-counts; at most prior_attempts'),
  prior_attempts: PseudoCount('the prior\'s attempts, as pseudo-counts: with little data the estimate stays near prior_approvals / prior_attempts'),
});

const Allocation = Obj({
  provider_config_id: Type.String({ minLength: 1, maxLength: 100, description: 'a provider config of the account (not deleted), once' }),
  percent: Type.Integer({ minimum: 1, maximum: 100, description: 'share of payments that try this config first' }),
});

const VolumeSplit = Obj({
  allocations: Type.Array(Allocation, {
    maxItems: MAX_ALLOCATIONS,
    description: 'percents summing to 100 (required with strategy volume_split); configs not listed keep their rules and cost order behind the chosen one',
  }),
});

const Elimination = Obj({
  enabled: Type.Boolean({ description: 'take failing configs out of the plan (circuit breaker)' }),
  window_minutes: Minutes('the window the error rate is measured over'),
  error_rate_threshold: Type.Number({
    exclusiveMinimum: 0, maximum: 1, description: '(transport errors + unknown outcomes) / attempts at or above this opens the circuit (above 0, at most 1)',
  }),
  min_attempts: Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'fewer attempts than this in the window never open the circuit' }),
  cool_down_seconds: Type.Integer({ minimum: 1, maximum: 86_400, description: 'the circuit stays open this long after the last error, then half-opens (1 to 86400)' }),
  probe_share: Share('share of payments that probe a half-open config'),
});

/** PUT /v1/routing-settings: any of the fields, merged over the stored settings (or the defaults). */
export const RoutingSettingsBody = Obj({
  strategy: Type.Optional(Strategy),
  success_rate: Type.Optional(Type.Partial(SuccessRate)),
  volume_split: Type.Optional(Type.Partial(VolumeSplit)),
  elimination: Type.Optional(Type.Partial(Elimination)),
}, { description: 'Any of the settings: each given field replaces the stored one (allocations as a whole list); the others stay.' });

export const RoutingSettingsSchema = Resource('routing_settings', {
  account_id: Type.String(),
  strategy: Strategy,
  success_rate: SuccessRate,
  volume_split: VolumeSplit,
  elimination: Elimination,
  /** When they were last changed; null while the account routes by the defaults. */
  updated_at: Timestamp,
});

export type RoutingSettingsResource = Static<typeof RoutingSettingsSchema>;

export function serializeRoutingSettings(accountId: string, stored: StoredRoutingSettings): RoutingSettingsResource {
  const { settings } = stored;
  return {
    object: 'routing_settings',
    account_id: accountId,
    strategy: settings.strategy,
    success_rate: { ...settings.success_rate },
    volume_split: { allocations: settings.volume_split.allocations.map((a) => ({ provider_config_id: a.provider_config_id, percent: a.percent })) },
    elimination: { ...settings.elimination },
    updated_at: iso(stored.updated_at),
  };
}
