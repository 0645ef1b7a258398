import { Type } from '@sinclair/typebox';
import type { Environment } from '../../db/environments';
import { createFee, createRoutingRule, deleteFee, deleteRoutingRule, listRoutingRules, updateRoutingRule } from '../../db/fees-and-rules';
import {
  createProviderConfig, deleteProviderConfig, findProviderConfig, listProviderConfigs, MaskedProviderConfig, updateProviderConfig, withFeesAndRules,
} from '../../db/provider-configs';
import { isMethodOfProvider } from '../../db/providers';
import { Conditions, validateConditions } from '../../lib/routing/conditions';
import type { Access, AccountScope } from '../auth/access';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import {
  DeletedSchema, ProviderConfigFeeSchema, ProviderConfigSchema, RoutingRuleSchema, serializeProviderConfig, serializeProviderConfigFee,
  serializeRoutingRule,
} from '../../resources/provider-configs';
import { defineRoute } from '../route';
import { Currency, FreeForm, Obj, RuleConditions } from '../../resources/schemas';
import { findVisible } from './environment-lookup';
import { checkCredentials, requireCredentialsRight } from './provider-credentials';

const CONFIG = 'payment provider config';
const TAG = 'Payment provider configs';
const PathId = Type.String({ minLength: 1, maxLength: 100 });
const ConfigParams = Obj({ id: PathId });
const Credentials = Type.Object({}, {
  additionalProperties: true,
  description: 'validated against the provider\'s schemas.credentials; stored encrypted, answered masked',
});
/** fees.volume_fee is numeric(8,4). */
const VOLUME_FEE_DECIMALS = 4;

/** A non-deleted config the caller may see, with its environment and the caller's scope on it; 404 otherwise. */
async function findConfig(deps: ApiDeps, access: Access, id: string): Promise<{ row: MaskedProviderConfig; env: Environment; scope: AccountScope }> {
  const found = await findVisible(access, CONFIG, (env) => findProviderConfig(deps.db, deps.vault, env, id));
  if (found.row.deleted) throw ApiError.notFound(CONFIG);
  return found;
}

/** A config as its response: with its fees and rules (credentials come masked from the store). */
async function present(deps: ApiDeps, env: Environment, config: MaskedProviderConfig) {
  const [withEmbeds] = await withFeesAndRules(deps.db, env, [config]);
  return serializeProviderConfig(withEmbeds, deps.config.publicUrl);
}

/** The conditions, checked against the grammar (lib/routing/conditions.ts); 400 with paths under body/conditions. */
function checkConditions(conditions: unknown): Conditions {
  const errors = validateConditions(conditions);
  if (errors.length) {
    throw ApiError.validation(errors.map((e) => ({ path: `body/conditions${e.path === '/' ? '' : e.path}`, message: e.message })));
  }
  return conditions as Conditions;
}

function hasMoreDecimals(value: number, decimals: number): boolean {
  return Number(value.toFixed(decimals)) !== value;
}

export const providerConfigRoutes = [
  defineRoute({
    method: 'post',
    path: '/payment-provider-configs',
    tag: TAG,
    summary: 'Connect the account to a payment provider with its credentials (live: provider:credentials:write)',
    permission: 'routing:write',
    errors: ['not_found'],
    status: 201,
    message: 'Payment provider config created',
    body: Obj({
      payment_provider_id: Type.String({ minLength: 1, maxLength: 100 }),
      name: Type.String({ minLength: 1, maxLength: 200 }),
      credentials: Credentials,
      merchant_capabilities: Type.Optional(FreeForm),
    }),
    response: ProviderConfigSchema,
    async handler({ body, access, deps }) {
      const scope = await access.forAccount();
      const { account, environment: env } = scope;
      requireCredentialsRight(access, scope, env);
      await checkCredentials(deps.db, env, body.payment_provider_id, body.credentials);
      const config = await createProviderConfig(deps.db, deps.vault, env, {
        accountId: account.id,
        providerId: body.payment_provider_id,
        name: body.name,
        credentials: body.credentials,
        merchantCapabilities: body.merchant_capabilities ?? {},
      });
      return { data: await present(deps, env, config) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/payment-provider-configs',
    tag: TAG,
    summary: 'List the account\'s provider configs (not deleted), with fees and routing rules',
    permission: 'routing:read',
    message: 'Payment provider configs retrieved',
    response: Type.Array(ProviderConfigSchema),
    async handler({ access, deps }) {
      const { account, environment: env } = await access.forAccount();
      const configs = await listProviderConfigs(deps.db, deps.vault, env, account.id);
      return { data: configs.map((c) => serializeProviderConfig(c, deps.config.publicUrl)) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/payment-provider-configs/:id',
    tag: TAG,
    summary: 'Get one provider config, with fees and routing rules',
    permission: 'routing:read',
    message: 'Payment provider config retrieved',
    params: ConfigParams,
    response: ProviderConfigSchema,
    async handler({ params, access, deps }) {
      const { row, env } = await findConfig(deps, access, params.id);
      return { data: await present(deps, env, row) };
    },
  }),

  defineRoute({
    method: 'put',
    path: '/payment-provider-configs/:id',
    tag: TAG,
    summary: 'Update a provider config; credentials, when given, replace the stored ones whole (live: provider:credentials:write)',
    permission: 'routing:write',
    message: 'Payment provider config updated',
    params: ConfigParams,
    body: Obj({
      name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
      credentials: Type.Optional(Credentials),
      merchant_capabilities: Type.Optional(FreeForm),
    }, { minProperties: 1 }),
    response: ProviderConfigSchema,
    async handler({ params, body, access, deps }) {
      const { row, env, scope } = await findConfig(deps, access, params.id);
      if (body.credentials !== undefined) {
        requireCredentialsRight(access, scope, env);
        await checkCredentials(deps.db, env, row.payment_provider_id, body.credentials);
      }
      const updated = await updateProviderConfig(deps.db, deps.vault, env, row.id, {
        name: body.name, merchantCapabilities: body.merchant_capabilities, credentials: body.credentials,
      });
      if (!updated) throw ApiError.notFound(CONFIG);
      return { data: await present(deps, env, updated) };
    },
  }),

  defineRoute({
    method: 'delete',
    path: '/payment-provider-configs/:id',
    tag: TAG,
    summary: 'Delete a provider config (soft): it is no longer routed to; charges made through it keep working',
    permission: 'routing:write',
    message: 'Payment provider config deleted',
    params: ConfigParams,
    response: ProviderConfigSchema,
    async handler({ params, access, deps }) {
      const { row, env } = await findConfig(deps, access, params.id);
      const deleted = await deleteProviderConfig(deps.db, deps.vault, env, row.id);
      if (!deleted) throw ApiError.notFound(CONFIG);
      return { data: await present(deps, env, deleted) };
    },
  }),

  // Fees -------------------------------------------------------------------------------------------

  defineRoute({
    method: 'post',
    path: '/payment-provider-configs/:id/fees',
    tag: TAG,
    summary: 'Add the fee the provider charges for one method and installment count',
    permission: 'routing:write',
    errors: ['fee_already_exists'],
    status: 201,
    message: 'Fee created',
    params: ConfigParams,
    body: Obj({
      payment_provider_method_id: Type.String({ minLength: 1, maxLength: 100, description: 'a method of the config\'s provider' }),
      installment_count: Type.Optional(Type.Integer({ minimum: 1, maximum: 48, default: 1 })),
      volume_fee: Type.Number({ minimum: 0, maximum: 100, description: 'percent of the amount, e.g. 2.9 (at most 4 decimals)' }),
      fixed_fee: Type.Integer({ minimum: 0, maximum: 99_999_999, description: 'minor units of fixed_fee_currency' }),
      fixed_fee_currency: Currency,
    }),
    response: ProviderConfigFeeSchema,
    async handler({ params, body, access, deps }) {
      const { row: config, env } = await findConfig(deps, access, params.id);
      if (hasMoreDecimals(body.volume_fee, VOLUME_FEE_DECIMALS)) {
        throw ApiError.validation([{ path: 'body/volume_fee', message: `must have at most ${VOLUME_FEE_DECIMALS} decimal places` }]);
      }
      if (!await isMethodOfProvider(deps.db, env, config.payment_provider_id, body.payment_provider_method_id)) {
        throw ApiError.validation([{ path: 'body/payment_provider_method_id', message: 'is not a method of this config\'s payment provider' }]);
      }
      const created = await createFee(deps.db, env, {
        configId: config.id,
        methodId: body.payment_provider_method_id,
        installmentCount: body.installment_count ?? 1,
        volumeFee: body.volume_fee,
        fixedFee: body.fixed_fee,
        fixedFeeCurrency: body.fixed_fee_currency,
      });
      if (!('fee' in created)) throw new ApiError('fee_already_exists', undefined, { fee_id: created.existingId });
      return { data: serializeProviderConfigFee(created.fee) };
    },
  }),

  defineRoute({
    method: 'delete',
    path: '/payment-provider-configs/:id/fees/:feeId',
    tag: TAG,
    summary: 'Remove a fee',
    permission: 'routing:write',
    message: 'Fee deleted',
    params: Obj({ id: PathId, feeId: PathId }),
    response: DeletedSchema('payment_provider_config_fee'),
    async handler({ params, access, deps }) {
      const { row: config, env } = await findConfig(deps, access, params.id);
      if (!await deleteFee(deps.db, env, config.id, params.feeId)) throw ApiError.notFound('fee');
      return { data: { object: 'payment_provider_config_fee', id: params.feeId, deleted: true } };
    },
  }),

  // Routing rules ------------------------------------------------------------------------------------

  defineRoute({
    method: 'get',
    path: '/payment-provider-configs/:id/rules',
    tag: TAG,
    summary: 'List the config\'s routing rules (a config with rules is tried when any rule matches)',
    permission: 'routing:read',
    message: 'Routing rules retrieved',
    params: ConfigParams,
    response: Type.Array(RoutingRuleSchema),
    async handler({ params, access, deps }) {
      const { row: config, env } = await findConfig(deps, access, params.id);
      return { data: (await listRoutingRules(deps.db, env, config.id)).map(serializeRoutingRule) };
    },
  }),

  defineRoute({
    method: 'post',
    path: '/payment-provider-configs/:id/rules',
    tag: TAG,
    summary: 'Add a routing rule',
    permission: 'routing:write',
    status: 201,
    message: 'Routing rule created',
    params: ConfigParams,
    body: Obj({ conditions: RuleConditions }),
    response: RoutingRuleSchema,
    async handler({ params, body, access, deps }) {
      const { row: config, env } = await findConfig(deps, access, params.id);
      const rule = await createRoutingRule(deps.db, env, config.id, checkConditions(body.conditions));
      return { data: serializeRoutingRule(rule) };
    },
  }),

  defineRoute({
    method: 'patch',
    path: '/payment-provider-configs/:id/rules/:ruleId',
    tag: TAG,
    summary: 'Replace a routing rule\'s conditions',
    permission: 'routing:write',
    message: 'Routing rule updated',
    params: Obj({ id: PathId, ruleId: PathId }),
    body: Obj({ conditions: RuleConditions }),
    response: RoutingRuleSchema,
    async handler({ params, body, access, deps }) {
      const { row: config, env } = await findConfig(deps, access, params.id);
      const rule = await updateRoutingRule(deps.db, env, config.id, params.ruleId, checkConditions(body.conditions));
      if (!rule) throw ApiError.notFound('routing rule');
      return { data: serializeRoutingRule(rule) };
    },
  }),

  defineRoute({
    method: 'delete',
    path: '/payment-provider-configs/:id/rules/:ruleId',
    tag: TAG,
    summary: 'Delete a routing rule',
    permission: 'routing:write',
    message: 'Routing rule deleted',
    params: Obj({ id: PathId, ruleId: PathId }),
    response: DeletedSchema('payment_provider_config_routing_rule'),
    async handler({ params, access, deps }) {
      const { row: config, env } = await findConfig(deps, access, params.id);
      if (!await deleteRoutingRule(deps.db, env, config.id, params.ruleId)) throw ApiError.notFound('routing rule');
      return { data: { object: 'payment_provider_config_routing_rule', id: params.ruleId, deleted: true } };
    },
  }),
];
