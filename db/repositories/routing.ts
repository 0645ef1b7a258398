import type { Knex } from 'knex';
import type { Vault } from '../../lib/vault';
import type { Conditions } from '../../lib/routing/conditions';
import type { RoutingConfig, RoutingFee, RoutingMethod, RoutingProvider } from '../../lib/routing/plan';
import { envTable, Environment } from '../environments';
import { iso } from '../serialize';

export interface RoutingInputMethod extends RoutingMethod {
  payment_provider_id: string;
  name: string;
  type: string;
  txn_mappings: unknown[];
}

export interface RoutingInputProvider extends RoutingProvider {
  name: string;
  /** The adapter that speaks to this provider (activities/providers/registry.ts). */
  identifier: string;
  methods: RoutingInputMethod[];
}

export interface RoutingInputConfig extends RoutingConfig {
  account_id: string;
  name: string;
  merchant_capabilities: Record<string, unknown>;
  updated_at: string;
  rules: { id: string; conditions: Conditions }[];
  fees: (RoutingFee & { id: string })[];
}

/** What `buildRoutingPlan` needs besides the payment and the hints. Never holds credentials. */
export interface RoutingInputs {
  configs: RoutingInputConfig[];
  providers: RoutingInputProvider[];
}

/**
 * The account's active provider configs with their fees and rules, and the providers (with methods)
 * they use, in the shape `buildRoutingPlan` takes. One query per table, read in one repeatable-read
 * snapshot so that a rule or fee written meanwhile is seen whole or not at all.
 */
export async function loadRoutingInputs(db: Knex, env: Environment, accountId: string): Promise<RoutingInputs> {
  return db.transaction(async (trx) => {
    const configRows = await trx(envTable(env, 'payment_provider_configs'))
      .where({ account_id: accountId, deleted: false })
      .orderBy('created_at', 'asc').orderBy('id', 'asc')
      .select('id', 'account_id', 'payment_provider_id', 'name', 'merchant_capabilities', 'deleted', 'created_at', 'updated_at');
    if (configRows.length === 0) return { configs: [], providers: [] };
    const configIds = configRows.map((c) => c.id as string);
    const providerIds = [...new Set(configRows.map((c) => c.payment_provider_id as string))];
    const [providerRows, methodRows, feeRows, ruleRows] = [
      await trx(envTable(env, 'payment_providers')).whereIn('id', providerIds).select('id', 'name', 'identifier'),
      await trx(envTable(env, 'payment_provider_methods')).whereIn('payment_provider_id', providerIds).orderBy('id'),
      await trx(envTable(env, 'payment_provider_config_fees')).whereIn('payment_provider_config_id', configIds).orderBy('id'),
      await trx(envTable(env, 'payment_provider_config_routing_rules')).whereIn('payment_provider_config_id', configIds).orderBy('id'),
    ];
    const methodsByProvider = groupBy(methodRows, 'payment_provider_id');
    const feesByConfig = groupBy(feeRows, 'payment_provider_config_id');
    const rulesByConfig = groupBy(ruleRows, 'payment_provider_config_id');
    return {
      configs: configRows.map((c) => ({
        id: c.id,
        account_id: c.account_id,
        payment_provider_id: c.payment_provider_id,
        name: c.name,
        merchant_capabilities: c.merchant_capabilities ?? {},
        deleted: c.deleted,
        created_at: iso(c.created_at)!,
        updated_at: iso(c.updated_at)!,
        rules: (rulesByConfig.get(c.id) ?? []).map((r) => ({ id: r.id, conditions: r.conditions as Conditions })),
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
        methods: (methodsByProvider.get(p.id) ?? []).map((m) => ({
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
  }, { isolationLevel: 'repeatable read', readOnly: true });
}

/**
 * The decrypted credentials of one provider config, for an activity about to call the provider. Deleted
 * configs are included on purpose: a charge made through a config deleted since must still be capturable
 * and refundable. Throws when the config does not exist in that environment.
 */
export async function loadConfigCredentials(db: Knex, vault: Vault, env: Environment, configId: string): Promise<Record<string, unknown>> {
  const row = await db(envTable(env, 'payment_provider_configs')).where({ id: configId }).first('credentials_encrypted');
  if (!row) throw new Error(`payment provider config ${configId} not found in ${env}`);
  return vault.decryptJson<Record<string, unknown>>(row.credentials_encrypted);
}

/** The fees and routing rules of some configs, newest first, in two queries. */
export async function configEmbeds(db: Knex, env: Environment, configIds: string[]) {
  const [fees, rules] = configIds.length
    ? [
      await db(envTable(env, 'payment_provider_config_fees')).whereIn('payment_provider_config_id', configIds)
        .orderBy('created_at', 'desc').orderBy('id', 'desc'),
      await db(envTable(env, 'payment_provider_config_routing_rules')).whereIn('payment_provider_config_id', configIds)
        .orderBy('created_at', 'desc').orderBy('id', 'desc'),
    ]
    : [[], []];
  return { fees: groupBy(fees, 'payment_provider_config_id'), rules: groupBy(rules, 'payment_provider_config_id') };
}

export function groupBy<T extends Record<string, any>>(rows: T[], key: string): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const row of rows) {
    const k = row[key] as string;
    const list = map.get(k);
    if (list) list.push(row);
    else map.set(k, [row]);
  }
  return map;
}
