// The store of payment providers and their methods (docs/providers-and-routing.md): the only module that
// queries those tables; and the routing inputs, the read that joins them to an account's configs for
// the payment activities. The configs and their sealed credentials are db/provider-configs.ts's; fees
// and routing rules are db/fees-and-rules.ts's.

import type { Knex } from 'knex';
import { groupBy } from '../lib/group-by';
import { newId } from '../lib/ids';
import type { Conditions } from '../lib/routing/conditions';
import type { RoutingSettings } from '../lib/routing/adaptive-contract';
import type { RoutingConfig, RoutingFee, RoutingMethod, RoutingProvider } from '../lib/routing/plan';
import { envTable, Environment } from './environments';
import { routingFeesAndRules, routingFeesAndRulesFrom } from './fees-and-rules';
import type { ProviderConfigRow } from './provider-configs';
import { PREPARED } from './knex';
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

const CONFIG_COLUMNS = ['id', 'account_id', 'payment_provider_id', 'name', 'merchant_capabilities', 'deleted', 'created_at', 'updated_at'] as const;

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
    .select(db.raw('CASE WHEN row_number() OVER (ORDER BY c.created_at, c.id) = 1 THEN ? END AS fees_and_rules', [feesAndRules]))
    .options(PREPARED);
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
