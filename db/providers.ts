// The store of payment providers, their methods and provider configs, credentials sealed
// (docs/providers-and-routing.md): the only module that queries those tables. Fees and routing rules
// are db/fees-and-rules.ts's.

import type { Knex } from 'knex';
import { maskCredentials } from '../lib/providers/credentials';
import { groupBy } from '../lib/group-by';
import { newId } from '../lib/ids';
import type { Conditions } from '../lib/routing/conditions';
import type { RoutingSettings } from '../lib/routing/adaptive-contract';
import type { RoutingConfig, RoutingFee, RoutingMethod, RoutingProvider } from '../lib/routing/plan';
import type { Vault } from '../lib/vault';
import { envTable, Environment } from './environments';
import { feesAndRulesOf, ProviderConfigFeeRow, routingFeesAndRules, routingFeesAndRulesFrom, RoutingRuleRow } from './fees-and-rules';
import { routingSettingsFrom, routingSettingsQuery, type RoutingSettingsPatch } from './routing-settings';

type Json = Record<string, unknown>;

interface Stamps { created_at: Date; updated_at: Date }

export interface PaymentProviderRow extends Stamps {
  id: string; name: string;
  /** The adapter that speaks to this provider (lib/providers/catalogue.ts). */
  identifier: string;
  country: string | null; schemas: Json; config: Json; is_global: boolean;
}

export interface TxnMapping { strategy: string; strategy_identifier: string; type: string; capabilities: Json }

export interface ProviderMethodRow extends Stamps {
  id: string; payment_provider_id: string; name: string; category: string; type: string; network: string | null;
  installments_supported: boolean; txn_mappings: TxnMapping[];
}

export interface ProviderWithMethods { provider: PaymentProviderRow; methods: ProviderMethodRow[] }

export type NewProviderMethod = Omit<ProviderMethodRow, 'id' | 'payment_provider_id' | 'network' | keyof Stamps> & { network: string };

export interface NewPaymentProvider {
  name: string; identifier: string; country?: string; isGlobal: boolean; config: Json; schemas: Json; methods: NewProviderMethod[];
}

/** A provider config without its sealed credentials. */
export interface ProviderConfigRow extends Stamps {
  id: string; account_id: string; payment_provider_id: string; name: string; merchant_capabilities: Json; deleted: boolean;
}

const CONFIG_COLUMNS = ['id', 'account_id', 'payment_provider_id', 'name', 'merchant_capabilities', 'deleted', 'created_at', 'updated_at'] as const;

/**
 * A config that does not exist in the environment, from the loaders an activity calls before talking to
 * a provider. Stores stay free of Temporal, so this is a plain typed error; the activity turns it into a
 * non-retryable ApplicationFailure of its `type`, `not_found` (activities/providers/open.ts), since no
 * retry can bring the config back. The API's finders answer undefined instead (a 404).
 */
export class ProviderConfigNotFoundError extends Error {
  readonly type = 'not_found';
  constructor(readonly configId: string, readonly environment: Environment) {
    super(`payment provider config ${configId} not found in ${environment}`);
    this.name = 'ProviderConfigNotFoundError';
  }
}

// ---------------------------------------------------------------------------------------------------
// Providers and methods

/** A provider and its method catalogue, in one transaction: a provider never exists without its methods. */
export async function createPaymentProvider(db: Knex, env: Environment, input: NewPaymentProvider): Promise<ProviderWithMethods> {
  return db.transaction(async (trx) => {
    const [provider]: PaymentProviderRow[] = await trx(envTable(env, 'payment_providers'))
      .insert({
        id: newId('pp'),
        name: input.name,
        identifier: input.identifier,
        country: input.country ?? null,
        is_global: input.isGlobal,
        config: JSON.stringify(input.config),
        schemas: JSON.stringify(input.schemas),
      })
      .returning('*');
    const methods: ProviderMethodRow[] = input.methods.length
      ? await trx(envTable(env, 'payment_provider_methods'))
        .insert(input.methods.map((m) => ({
          id: newId('ppm'),
          payment_provider_id: provider.id,
          name: m.name,
          category: m.category,
          type: m.type,
          network: m.network,
          installments_supported: m.installments_supported,
          txn_mappings: JSON.stringify(m.txn_mappings),
        })))
        .returning('*')
      : [];
    return { provider, methods };
  });
}

/** Every provider of an environment with its methods, newest first, in two queries. */
export async function listPaymentProviders(db: Knex, env: Environment): Promise<ProviderWithMethods[]> {
  const providers: PaymentProviderRow[] = await db(envTable(env, 'payment_providers')).orderBy('created_at', 'desc').orderBy('id', 'desc');
  const methods: ProviderMethodRow[] = providers.length
    ? await db(envTable(env, 'payment_provider_methods')).whereIn('payment_provider_id', providers.map((p) => p.id)).orderBy('id')
    : [];
  const byProvider = groupBy(methods, 'payment_provider_id');
  return providers.map((provider) => ({ provider, methods: byProvider.get(provider.id) ?? [] }));
}

export async function findPaymentProvider(db: Knex, env: Environment, id: string): Promise<PaymentProviderRow | undefined> {
  return db(envTable(env, 'payment_providers')).where({ id }).first();
}

/** The oldest provider spoken to by an adapter (the seed's sandbox provider). */
export async function findPaymentProviderByIdentifier(db: Knex, env: Environment, identifier: string): Promise<PaymentProviderRow | undefined> {
  return db(envTable(env, 'payment_providers')).where({ identifier }).orderBy('created_at').orderBy('id').first();
}

export async function listProviderMethods(db: Knex, env: Environment, providerId: string): Promise<ProviderMethodRow[]> {
  return db(envTable(env, 'payment_provider_methods')).where({ payment_provider_id: providerId }).orderBy('id');
}

export async function isMethodOfProvider(db: Knex, env: Environment, providerId: string, methodId: string): Promise<boolean> {
  return !!(await db(envTable(env, 'payment_provider_methods')).where({ id: methodId, payment_provider_id: providerId }).first('id'));
}

// ---------------------------------------------------------------------------------------------------
// Provider configs. Credentials are sealed with the vault on the way in and leave this store masked
// (lib/providers/credentials.ts); only openConfigProvider opens them.

/** A config as the API shows it: credentials masked. */
export interface MaskedProviderConfig extends ProviderConfigRow {
  credentials: Json;
}

export interface ProviderConfigWithEmbeds extends MaskedProviderConfig {
  fees: ProviderConfigFeeRow[];
  rules: RoutingRuleRow[];
}

type StoredConfig = ProviderConfigRow & { credentials_encrypted: string };

function masked(vault: Vault, stored: StoredConfig): MaskedProviderConfig;
function masked(vault: Vault, stored: StoredConfig | undefined): MaskedProviderConfig | undefined;
function masked(vault: Vault, stored: StoredConfig | undefined): MaskedProviderConfig | undefined {
  if (!stored) return undefined;
  const { credentials_encrypted: sealed, ...row } = stored;
  return { ...row, credentials: maskCredentials(vault.decryptJson<Json | null>(sealed) ?? {}) };
}

const configs = (db: Knex, env: Environment) => db(envTable(env, 'payment_provider_configs'));

export interface NewProviderConfig {
  accountId: string;
  providerId: string;
  name: string;
  credentials: Json;
  merchantCapabilities: Json;
}

export async function createProviderConfig(db: Knex, vault: Vault, env: Environment, input: NewProviderConfig): Promise<MaskedProviderConfig> {
  const [row]: StoredConfig[] = await configs(db, env)
    .insert({
      id: newId('ppc'),
      account_id: input.accountId,
      payment_provider_id: input.providerId,
      name: input.name,
      credentials_encrypted: vault.encryptJson(input.credentials),
      merchant_capabilities: JSON.stringify(input.merchantCapabilities),
    })
    .returning('*');
  return masked(vault, row);
}

/** A config by id, deleted or not. */
export async function findProviderConfig(db: Knex, vault: Vault, env: Environment, id: string): Promise<MaskedProviderConfig | undefined> {
  return masked(vault, await configs(db, env).where({ id }).first());
}

/** Whether the account has a config that is not deleted. */
export async function hasActiveProviderConfig(db: Knex, env: Environment, accountId: string): Promise<boolean> {
  return !!(await configs(db, env).where({ account_id: accountId, deleted: false }).first('id'));
}

/** The account's configs that are not deleted, newest first, with their fees and rules. */
export async function listProviderConfigs(db: Knex, vault: Vault, env: Environment, accountId: string): Promise<ProviderConfigWithEmbeds[]> {
  const rows: StoredConfig[] = await configs(db, env).where({ account_id: accountId, deleted: false })
    .orderBy('created_at', 'desc').orderBy('id', 'desc');
  return withFeesAndRules(db, env, rows.map((row) => masked(vault, row)));
}

/** Configs with their fees and rules (newest first), in two queries whatever their number. */
export async function withFeesAndRules(db: Knex, env: Environment, rows: MaskedProviderConfig[]): Promise<ProviderConfigWithEmbeds[]> {
  const { fees, rules } = await feesAndRulesOf(db, env, rows.map((r) => r.id));
  return rows.map((row) => ({ ...row, fees: fees.get(row.id) ?? [], rules: rules.get(row.id) ?? [] }));
}

export interface ProviderConfigChanges {
  name?: string;
  merchantCapabilities?: Json;
  /** Replaces the stored credentials whole. */
  credentials?: Json;
}

/** Updates a config that is not deleted; undefined when there is none. */
export async function updateProviderConfig(
  db: Knex, vault: Vault, env: Environment, id: string, changes: ProviderConfigChanges,
): Promise<MaskedProviderConfig | undefined> {
  const [row]: StoredConfig[] = await configs(db, env).where({ id, deleted: false })
    .update({
      updated_at: db.fn.now(),
      ...(changes.name !== undefined ? { name: changes.name } : {}),
      ...(changes.merchantCapabilities !== undefined ? { merchant_capabilities: JSON.stringify(changes.merchantCapabilities) } : {}),
      ...(changes.credentials !== undefined ? { credentials_encrypted: vault.encryptJson(changes.credentials) } : {}),
    })
    .returning('*');
  return masked(vault, row);
}

/** Deletes a config softly (no longer routed to; its charges keep working); undefined when already gone. */
export async function deleteProviderConfig(db: Knex, vault: Vault, env: Environment, id: string): Promise<MaskedProviderConfig | undefined> {
  const [row]: StoredConfig[] = await configs(db, env).where({ id, deleted: false })
    .update({ deleted: true, updated_at: db.fn.now() }).returning('*');
  return masked(vault, row);
}

// ---------------------------------------------------------------------------------------------------
// Routing inputs and credentials: what the payment and refund activities read

export interface RoutingInputMethod extends RoutingMethod {
  payment_provider_id: string;
  name: string;
  type: string;
  txn_mappings: TxnMapping[];
}

export interface RoutingInputProvider extends RoutingProvider {
  name: string;
  identifier: string;
  methods: RoutingInputMethod[];
}

export interface RoutingInputConfig extends RoutingConfig {
  account_id: string;
  name: string;
  merchant_capabilities: Json;
  updated_at: string;
  rules: { id: string; conditions: Conditions }[];
  fees: (RoutingFee & { id: string })[];
}

/**
 * A config of the account with its provider and that provider's methods, as the routing inputs' statement
 * reads them (JSON for the methods), the first with the fees, rules and settings.
 */
type RoutingConfigRow = ProviderConfigRow & {
  provider_name: string; provider_identifier: string; provider_methods: Omit<ProviderMethodRow, keyof Stamps>[];
  fees_and_rules: Parameters<typeof routingFeesAndRulesFrom>[0] | null;
};

/**
 * What `buildRoutingPlan` needs besides the payment and the hints, and the account's routing settings
 * (defaults filled) for its adaptive part. Never holds credentials.
 */
export interface RoutingInputs {
  configs: RoutingInputConfig[];
  providers: RoutingInputProvider[];
  settings: RoutingSettings;
}

/**
 * The account's active provider configs with their fees and rules, the providers (with methods) they
 * use, in the shape `buildRoutingPlan` takes, and the account's routing settings (the defaults when it
 * has no config: nothing to route). One statement, so one snapshot: a rule or fee written meanwhile is
 * seen whole or not at all, without a transaction around it.
 */
export async function loadRoutingInputs(db: Knex, env: Environment, accountId: string): Promise<RoutingInputs> {
  const configs = envTable(env, 'payment_provider_configs');
  const active = { account_id: accountId, deleted: false };
  // The fees, rules and settings ride on the first config's row (one JSON value, not one per config).
  const feesAndRules = routingFeesAndRules(db, env, db(configs).where(active).select('id'), routingSettingsQuery(db, env, accountId));
  const configRows: RoutingConfigRow[] = await db({ c: configs })
    .join({ p: envTable(env, 'payment_providers') }, 'p.id', 'c.payment_provider_id')
    .where({ 'c.account_id': accountId, 'c.deleted': false })
    .orderBy('c.created_at', 'asc').orderBy('c.id', 'asc')
    .select(CONFIG_COLUMNS.map((column) => `c.${column}`))
    .select({ provider_name: 'p.name', provider_identifier: 'p.identifier' })
    .select(db.raw(`(SELECT coalesce(json_agg(json_build_object(
        'id', m.id, 'payment_provider_id', m.payment_provider_id, 'name', m.name, 'category', m.category, 'type', m.type,
        'network', m.network, 'installments_supported', m.installments_supported, 'txn_mappings', m.txn_mappings
      ) ORDER BY m.id), '[]') FROM ?? m WHERE m.payment_provider_id = c.payment_provider_id) AS provider_methods`, [envTable(env, 'payment_provider_methods')]))
    .select(db.raw('CASE WHEN row_number() OVER (ORDER BY c.created_at, c.id) = 1 THEN ? END AS fees_and_rules', [feesAndRules]));
  if (configRows.length === 0) return { configs: [], providers: [], settings: routingSettingsFrom(null) };
  // One entry per provider, in the order its first config comes.
  const providerRows = [...new Map(configRows.map((c) => [c.payment_provider_id, c])).values()]
    .map((c) => ({ id: c.payment_provider_id, name: c.provider_name, identifier: c.provider_identifier, methods: c.provider_methods }));
  const read = configRows.find((c) => c.fees_and_rules)?.fees_and_rules;
  if (!read) throw new Error('the routing inputs came back without their fees and rules');
  const { fees: feesByConfig, rules: rulesByConfig, alongside: settings } = routingFeesAndRulesFrom(read);
  return {
    settings: routingSettingsFrom(settings as RoutingSettingsPatch | null),
    configs: configRows.map((c) => ({
      id: c.id,
      account_id: c.account_id,
      payment_provider_id: c.payment_provider_id,
      name: c.name,
      merchant_capabilities: c.merchant_capabilities ?? {},
      deleted: c.deleted,
      created_at: c.created_at.toISOString(),
      updated_at: c.updated_at.toISOString(),
      rules: (rulesByConfig.get(c.id) ?? []).map((r) => ({ id: r.id, conditions: r.conditions })),
      fees: (feesByConfig.get(c.id) ?? []).map((f) => ({
        id: f.id,
        payment_provider_method_id: f.payment_provider_method_id,
        installment_count: f.installment_count,
        volume_fee: Number(f.volume_fee),
        fixed_fee: Number(f.fixed_fee),
        fixed_fee_currency: f.fixed_fee_currency,
      })),
    })),
    providers: providerRows.map((p) => ({
      id: p.id,
      name: p.name,
      identifier: p.identifier,
      methods: p.methods.map((m) => ({
        id: m.id,
        payment_provider_id: m.payment_provider_id,
        name: m.name,
        category: m.category,
        type: m.type,
        network: m.network ?? '',
        installments_supported: m.installments_supported,
        txn_mappings: m.txn_mappings ?? [],
      })),
    })),
  };
}

/** A config and the provider behind it, as an activity about to call the provider needs them (no secrets). */
export interface ConfigProvider {
  config: Pick<ProviderConfigRow, 'id' | 'account_id' | 'name' | 'payment_provider_id' | 'merchant_capabilities' | 'deleted'>;
  provider: Pick<PaymentProviderRow, 'id' | 'name' | 'identifier' | 'config'>;
}

/**
 * The one way to read a config's credentials in the clear, with the config and its provider in the same
 * read: what an activity about to call the provider needs (the credentials never leave it: not in results,
 * history or logs). Deleted configs are included on purpose: a charge made through a config deleted since
 * must still be capturable and refundable. Throws ProviderConfigNotFoundError when the config does not
 * exist in that environment.
 */
export async function openConfigProvider(db: Knex, vault: Vault, env: Environment, configId: string): Promise<ConfigProvider & { credentials: Json }> {
  const row: (ConfigProvider['config'] & { provider_name: string; identifier: string; provider_config: Json | null; credentials_encrypted: string }) | undefined =
    await db(`${envTable(env, 'payment_provider_configs')} as c`)
      .join(`${envTable(env, 'payment_providers')} as p`, 'p.id', 'c.payment_provider_id')
      .where('c.id', configId)
      .first('c.id', 'c.account_id', 'c.name', 'c.payment_provider_id', 'c.merchant_capabilities', 'c.deleted', 'c.credentials_encrypted',
        'p.name as provider_name', 'p.identifier', 'p.config as provider_config');
  if (!row) throw new ProviderConfigNotFoundError(configId, env);
  const { provider_name: providerName, identifier, provider_config: providerConfig, credentials_encrypted: sealed, ...config } = row;
  return {
    config,
    provider: { id: config.payment_provider_id, name: providerName, identifier, config: providerConfig ?? {} },
    credentials: vault.decryptJson<Json>(sealed),
  };
}

/** A config's credentials alone, in the clear (openConfigProvider's rules). */
export async function loadProviderCredentials(db: Knex, vault: Vault, env: Environment, configId: string): Promise<Json> {
  return (await openConfigProvider(db, vault, env, configId)).credentials;
}

