import { listProviderConfigs } from '../../db/provider-configs';
import { findRoutingSettings, mergeRoutingSettings, updateRoutingSettings } from '../../db/routing-settings';
import type { RoutingSettings } from '../../lib/routing/adaptive-contract';
import { ApiError, type FieldError } from '../errors';
import { RoutingSettingsBody, RoutingSettingsSchema, serializeRoutingSettings } from '../../resources/routing-settings';
import { defineRoute } from '../route';

const TAG = 'Routing settings';
const ALLOCATIONS = 'body/volume_split/allocations';

type Allocation = RoutingSettings['volume_split']['allocations'][number];

/** Allocations given in the request: each names a config of the account that is not deleted, once. */
function allocationErrors(allocations: readonly Allocation[], configIds: ReadonlySet<string>): FieldError[] {
  const seen = new Set<string>();
  return allocations.flatMap((allocation, i): FieldError[] => {
    const path = `${ALLOCATIONS}/${i}/provider_config_id`;
    if (seen.has(allocation.provider_config_id)) return [{ path, message: 'appears more than once' }];
    seen.add(allocation.provider_config_id);
    return configIds.has(allocation.provider_config_id) ? [] : [{ path, message: 'is not a provider config of this account' }];
  });
}

/** The rules across fields, on the settings as they would be stored. */
function settingsErrors(next: RoutingSettings, allocationsGiven: boolean): FieldError[] {
  const errors: FieldError[] = [];
  if (next.success_rate.prior_approvals > next.success_rate.prior_attempts) {
    errors.push({ path: 'body/success_rate/prior_approvals', message: `must be at most prior_attempts (${next.success_rate.prior_attempts})` });
  }
  const { allocations } = next.volume_split;
  // Allocations may be cleared ([]) unless the split uses them.
  if (next.strategy === 'volume_split' || (allocationsGiven && allocations.length > 0)) {
    const sum = allocations.reduce((total, a) => total + a.percent, 0);
    if (sum !== 100) {
      errors.push({
        path: ALLOCATIONS,
        message: next.strategy === 'volume_split' && allocations.length === 0
          ? 'is required with strategy volume_split: percents summing to 100'
          : `percents must sum to 100 (they sum to ${sum})`,
      });
    }
  }
  return errors;
}

export const routingSettingsRoutes = [
  defineRoute({
    method: 'get',
    path: '/routing-settings',
    tag: TAG,
    summary: 'Get the account\'s routing settings (the defaults until they are changed)',
    permission: 'routing:read',
    message: 'Routing settings retrieved',
    response: RoutingSettingsSchema,
    async handler({ access, deps }) {
      const { account, environment: env } = await access.forAccount();
      return { data: serializeRoutingSettings(account.id, await findRoutingSettings(deps.db, env, account.id)) };
    },
  }),

  defineRoute({
    method: 'put',
    path: '/routing-settings',
    tag: TAG,
    summary: 'Change the account\'s routing settings: the fields given replace the stored ones, the others stay',
    permission: 'routing:write',
    message: 'Routing settings updated',
    body: RoutingSettingsBody,
    response: RoutingSettingsSchema,
    async handler({ body, access, deps }) {
      const { account, environment: env } = await access.forAccount();
      const given = body.volume_split?.allocations;
      const configIds = given?.length
        ? new Set((await listProviderConfigs(deps.db, deps.vault, env, account.id)).map((c) => c.id))
        : new Set<string>();
      const stored = await updateRoutingSettings(deps.db, env, account.id, (current) => {
        const next = mergeRoutingSettings(current, body);
        const errors = [...(given ? allocationErrors(given, configIds) : []), ...settingsErrors(next, given !== undefined)];
        if (errors.length) throw ApiError.validation(errors);
        return next;
      });
      return { data: serializeRoutingSettings(account.id, stored) };
    },
  }),
];
