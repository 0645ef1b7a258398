import { Type } from '@sinclair/typebox';
import { getAdapter, isAdapterIdentifier } from '../../activities/providers/registry';
import { envTable, Environment } from '../../db/environments';
import type { Db } from '../../db/knex';
import { configEmbeds } from '../../db/repositories/routing';
import { serializePaymentProviderConfig, serializeProviderConfigFee, serializeRoutingRule } from '../../db/serialize';
import { compileCredentialsSchema, credentialsErrors } from '../../lib/credentials-schema';
import { newId } from '../../lib/ids';
import { validateConditions } from '../../lib/routing/conditions';
import type { Access } from '../auth/access';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { defineRoute } from '../route';
import { Currency, FreeForm, Obj, RuleConditions } from '../schemas';
import { findVisibleRow } from './environment-lookup';
import { DeletedSchema, ProviderConfigFeeSchema, ProviderConfigSchema, RoutingRuleSchema } from './routing-schemas';

const CONFIG = 'payment provider config';
const TAG = 'Payment provider configs';
const PathId = Type.String({ minLength: 1, maxLength: 100 });
const ConfigParams = Obj({ id: PathId });
const Credentials = Type.Object({}, {
  additionalProperties: true,
  description: 'validated against the provider\'s schemas.credentials; stored encrypted, answered masked',
});
const Conditions = RuleConditions;
/** fees.volume_fee is numeric(8,4). */
const VOLUME_FEE_DECIMALS = 4;

/** A non-deleted config the caller may see, with its environment; 404 otherwise. */
async function findConfig(db: Db, access: Access, id: string) {
  const found = await findVisibleRow(db, access, 'payment_provider_configs', id, CONFIG);
  if (found.row.deleted) throw ApiError.notFound(CONFIG);
  return found;
}

/** 400 with paths under body/credentials when the credentials break the provider's credentials schema. */
async function checkCredentials(db: Db, env: Environment, providerId: string, credentials: unknown): Promise<void> {
  const provider = await db(envTable(env, 'payment_providers')).where({ id: providerId }).first('identifier', 'schemas');
  if (!provider) throw ApiError.notFound('payment provider');
  const schema = provider.schemas?.credentials
    ?? (isAdapterIdentifier(provider.identifier) ? getAdapter(provider.identifier).credentialsSchema : undefined);
  if (schema === undefined) return;
  const compiled = compileCredentialsSchema(schema);
  // Schemas are compiled when a provider is registered, so this is a broken row, not a bad request.
  if (!compiled.ok) throw new Error(`payment provider ${providerId} has an invalid credentials schema: ${compiled.error}`);
  const errors = credentialsErrors(compiled.validate, credentials, 'body/credentials');
  if (errors.length) throw ApiError.validation(errors);
}

/** Configs as responses: credentials decrypted only to be masked, fees and rules in two queries. */
async function present(deps: ApiDeps, env: Environment, rows: any[]) {
  const embeds = await configEmbeds(deps.db, env, rows.map((r) => r.id as string));
  return rows.map((row) => serializePaymentProviderConfig(row, {
    credentials: deps.vault.decryptJson(row.credentials_encrypted),
    fees: embeds.fees.get(row.id),
    rules: embeds.rules.get(row.id),
  }));
}

function checkConditions(conditions: unknown): void {
  const errors = validateConditions(conditions);
  if (errors.length) {
    throw ApiError.validation(errors.map((e) => ({ path: `body/conditions${e.path === '/' ? '' : e.path}`, message: e.message })));
  }
}

function hasMoreDecimals(value: number, decimals: number): boolean {
  return Number(value.toFixed(decimals)) !== value;
}

export const providerConfigRoutes = [
  defineRoute({
    method: 'post',
    path: '/payment-provider-configs',
    tag: TAG,
    summary: 'Connect the account to a payment provider with its credentials',
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
      const { account, environment: env } = await access.forAccount();
      await checkCredentials(deps.db, env, body.payment_provider_id, body.credentials);
      const [row] = await deps.db(envTable(env, 'payment_provider_configs'))
        .insert({
          id: newId('ppc'),
          account_id: account.id,
          payment_provider_id: body.payment_provider_id,
          name: body.name,
          credentials_encrypted: deps.vault.encryptJson(body.credentials),
          merchant_capabilities: JSON.stringify(body.merchant_capabilities ?? {}),
        })
        .returning('*');
      return { data: (await present(deps, env, [row]))[0] };
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
      const rows = await deps.db(envTable(env, 'payment_provider_configs'))
        .where({ account_id: account.id, deleted: false })
        .orderBy('created_at', 'desc').orderBy('id', 'desc');
      return { data: await present(deps, env, rows) };
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
      const { row, env } = await findConfig(deps.db, access, params.id);
      return { data: (await present(deps, env, [row]))[0] };
    },
  }),

  defineRoute({
    method: 'put',
    path: '/payment-provider-configs/:id',
    tag: TAG,
    summary: 'Update a provider config; credentials, when given, replace the stored ones whole',
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
      const { row, env } = await findConfig(deps.db, access, params.id);
      const changes: Record<string, unknown> = { updated_at: deps.db.fn.now() };
      if (body.name !== undefined) changes.name = body.name;
      if (body.merchant_capabilities !== undefined) changes.merchant_capabilities = JSON.stringify(body.merchant_capabilities);
      if (body.credentials !== undefined) {
        await checkCredentials(deps.db, env, row.payment_provider_id, body.credentials);
        changes.credentials_encrypted = deps.vault.encryptJson(body.credentials);
      }
      const [updated] = await deps.db(envTable(env, 'payment_provider_configs'))
        .where({ id: row.id, deleted: false }).update(changes).returning('*');
      if (!updated) throw ApiError.notFound(CONFIG);
      return { data: (await present(deps, env, [updated]))[0] };
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
      const { row, env } = await findConfig(deps.db, access, params.id);
      const [deleted] = await deps.db(envTable(env, 'payment_provider_configs'))
        .where({ id: row.id, deleted: false }).update({ deleted: true, updated_at: deps.db.fn.now() }).returning('*');
      if (!deleted) throw ApiError.notFound(CONFIG);
      return { data: (await present(deps, env, [deleted]))[0] };
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
      const { row: config, env } = await findConfig(deps.db, access, params.id);
      if (hasMoreDecimals(body.volume_fee, VOLUME_FEE_DECIMALS)) {
        throw ApiError.validation([{ path: 'body/volume_fee', message: `must have at most ${VOLUME_FEE_DECIMALS} decimal places` }]);
      }
      const method = await deps.db(envTable(env, 'payment_provider_methods'))
        .where({ id: body.payment_provider_method_id, payment_provider_id: config.payment_provider_id }).first('id');
      if (!method) {
        throw ApiError.validation([{ path: 'body/payment_provider_method_id', message: 'is not a method of this config\'s payment provider' }]);
      }
      const installmentCount = body.installment_count ?? 1;
      const [fee] = await deps.db(envTable(env, 'payment_provider_config_fees'))
        .insert({
          id: newId('fee'),
          payment_provider_config_id: config.id,
          payment_provider_method_id: method.id,
          installment_count: installmentCount,
          volume_fee: body.volume_fee,
          fixed_fee: body.fixed_fee,
          fixed_fee_currency: body.fixed_fee_currency,
        })
        .onConflict(['payment_provider_config_id', 'payment_provider_method_id', 'installment_count']).ignore()
        .returning('*');
      if (!fee) {
        const existing = await deps.db(envTable(env, 'payment_provider_config_fees'))
          .where({ payment_provider_config_id: config.id, payment_provider_method_id: method.id, installment_count: installmentCount })
          .first('id');
        throw new ApiError('fee_already_exists', undefined, { fee_id: existing?.id ?? null });
      }
      return { data: serializeProviderConfigFee(fee) };
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
      const { row: config, env } = await findConfig(deps.db, access, params.id);
      const removed = await deps.db(envTable(env, 'payment_provider_config_fees'))
        .where({ id: params.feeId, payment_provider_config_id: config.id }).del();
      if (!removed) throw ApiError.notFound('fee');
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
      const { row: config, env } = await findConfig(deps.db, access, params.id);
      const rules = await deps.db(envTable(env, 'payment_provider_config_routing_rules'))
        .where({ payment_provider_config_id: config.id }).orderBy('created_at', 'desc').orderBy('id', 'desc');
      return { data: rules.map(serializeRoutingRule) };
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
    body: Obj({ conditions: Conditions }),
    response: RoutingRuleSchema,
    async handler({ params, body, access, deps }) {
      const { row: config, env } = await findConfig(deps.db, access, params.id);
      checkConditions(body.conditions);
      const [rule] = await deps.db(envTable(env, 'payment_provider_config_routing_rules'))
        .insert({ id: newId('rule'), payment_provider_config_id: config.id, conditions: JSON.stringify(body.conditions) })
        .returning('*');
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
    body: Obj({ conditions: Conditions }),
    response: RoutingRuleSchema,
    async handler({ params, body, access, deps }) {
      const { row: config, env } = await findConfig(deps.db, access, params.id);
      checkConditions(body.conditions);
      const [rule] = await deps.db(envTable(env, 'payment_provider_config_routing_rules'))
        .where({ id: params.ruleId, payment_provider_config_id: config.id })
        .update({ conditions: JSON.stringify(body.conditions), updated_at: deps.db.fn.now() })
        .returning('*');
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
      const { row: config, env } = await findConfig(deps.db, access, params.id);
      const removed = await deps.db(envTable(env, 'payment_provider_config_routing_rules'))
        .where({ id: params.ruleId, payment_provider_config_id: config.id }).del();
      if (!removed) throw ApiError.notFound('routing rule');
      return { data: { object: 'payment_provider_config_routing_rule', id: params.ruleId, deleted: true } };
    },
  }),
];
