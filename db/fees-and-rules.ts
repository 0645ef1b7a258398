// The store of provider configs' fees and routing rules (docs/providers-and-routing.md): the only module
// that queries payment_provider_config_fees and payment_provider_config_routing_rules. The configs
// themselves are db/providers.ts's.

import type { Knex } from 'knex';
import { groupBy } from '../lib/group-by';
import { newId } from '../lib/ids';
import type { Conditions } from '../lib/routing/conditions';
import { envTable, Environment } from './environments';

export interface ProviderConfigFeeRow {
  id: string;
  payment_provider_config_id: string;
  payment_provider_method_id: string;
  installment_count: number;
  /** Percent of the amount (numeric(8,4), parsed as a number). */
  volume_fee: number;
  /** Minor units of fixed_fee_currency. */
  fixed_fee: number;
  fixed_fee_currency: string;
  created_at: Date;
  updated_at: Date;
}

export interface RoutingRuleRow {
  id: string;
  payment_provider_config_id: string;
  conditions: Conditions;
  created_at: Date;
  updated_at: Date;
}

export interface FeesAndRules {
  fees: Map<string, ProviderConfigFeeRow[]>;
  rules: Map<string, RoutingRuleRow[]>;
}

const FEES = 'payment_provider_config_fees';
const RULES = 'payment_provider_config_routing_rules';

/**
 * The fees and routing rules of some configs by config id, newest first, as the API shows them (a
 * routing plan reads them with routingFeesAndRulesOf).
 */
export async function feesAndRulesOf(db: Knex, env: Environment, configIds: string[]): Promise<FeesAndRules> {
  if (!configIds.length) return { fees: new Map(), rules: new Map() };
  const sorted = (q: Knex.QueryBuilder) => q.orderBy('created_at', 'desc').orderBy('id', 'desc');
  const fees: ProviderConfigFeeRow[] = await sorted(db(envTable(env, FEES)).whereIn('payment_provider_config_id', configIds));
  const rules: RoutingRuleRow[] = await sorted(db(envTable(env, RULES)).whereIn('payment_provider_config_id', configIds));
  return { fees: groupBy(fees, 'payment_provider_config_id'), rules: groupBy(rules, 'payment_provider_config_id') };
}

/** A fee as a routing plan reads it. */
export type RoutingFeeRow = Omit<ProviderConfigFeeRow, 'created_at' | 'updated_at'>;
/** A routing rule as a routing plan reads it. */
export type RoutingRuleConditions = Omit<RoutingRuleRow, 'created_at' | 'updated_at'>;

/** What `routingFeesAndRules` selects: the fees and rules by config id, and the value selected alongside. */
export interface RoutingFeesAndRules {
  fees: Map<string, RoutingFeeRow[]>;
  rules: Map<string, RoutingRuleConditions[]>;
  alongside: unknown;
}

/**
 * The fees and routing rules of the configs `configIds` selects, by id, as a routing plan reads them, and
 * the one value `alongside` selects from another store (the account's routing settings): one JSON value,
 * each table aggregated, for the configs' own statement to select as a column (a payment's plan is on the
 * hot path of every confirm: one statement, one snapshot). Read it back with `routingFeesAndRulesFrom`.
 */
export function routingFeesAndRules(db: Knex, env: Environment, configIds: Knex.QueryBuilder, alongside: Knex.QueryBuilder): Knex.Raw {
  return db.raw(`json_build_object(
      'fees', (SELECT coalesce(json_agg(json_build_object(
          'id', f.id, 'payment_provider_config_id', f.payment_provider_config_id, 'payment_provider_method_id', f.payment_provider_method_id,
          'installment_count', f.installment_count, 'volume_fee', f.volume_fee, 'fixed_fee', f.fixed_fee, 'fixed_fee_currency', f.fixed_fee_currency
        ) ORDER BY f.id), '[]')
        FROM ?? f WHERE f.payment_provider_config_id IN (?)),
      'rules', (SELECT coalesce(json_agg(json_build_object(
          'id', r.id, 'payment_provider_config_id', r.payment_provider_config_id, 'conditions', r.conditions
        ) ORDER BY r.id), '[]')
        FROM ?? r WHERE r.payment_provider_config_id IN (?)),
      'alongside', (?))`,
  [envTable(env, FEES), configIds, envTable(env, RULES), configIds, alongside]);
}

/** `routingFeesAndRules`' value as its column came back. */
export function routingFeesAndRulesFrom(value: { fees: RoutingFeeRow[]; rules: RoutingRuleConditions[]; alongside: unknown }): RoutingFeesAndRules {
  return { fees: groupBy(value.fees, 'payment_provider_config_id'), rules: groupBy(value.rules, 'payment_provider_config_id'), alongside: value.alongside };
}

// ---------------------------------------------------------------------------------------------------
// Fees

export interface NewFee {
  configId: string;
  methodId: string;
  installmentCount: number;
  volumeFee: number;
  fixedFee: number;
  fixedFeeCurrency: string;
}

/**
 * Adds a fee, or finds the one already set for that (config, method, installment count): one fee per
 * triple, held by a unique index under concurrency too (db/migrations/004_providers.ts).
 */
export async function createFee(db: Knex, env: Environment, input: NewFee): Promise<{ fee: ProviderConfigFeeRow } | { existingId: string | null }> {
  const key = { payment_provider_config_id: input.configId, payment_provider_method_id: input.methodId, installment_count: input.installmentCount };
  const [fee]: ProviderConfigFeeRow[] = await db(envTable(env, FEES))
    .insert({
      id: newId('fee'),
      ...key,
      volume_fee: input.volumeFee,
      fixed_fee: input.fixedFee,
      fixed_fee_currency: input.fixedFeeCurrency,
    })
    .onConflict(['payment_provider_config_id', 'payment_provider_method_id', 'installment_count']).ignore()
    .returning('*');
  if (fee) return { fee };
  const existing: { id: string } | undefined = await db(envTable(env, FEES)).where(key).first('id');
  return { existingId: existing?.id ?? null };
}

/** Removes a fee of the config; false when the config has no such fee. */
export async function deleteFee(db: Knex, env: Environment, configId: string, feeId: string): Promise<boolean> {
  return (await db(envTable(env, FEES)).where({ id: feeId, payment_provider_config_id: configId }).del()) > 0;
}

// ---------------------------------------------------------------------------------------------------
// Routing rules

export async function listRoutingRules(db: Knex, env: Environment, configId: string): Promise<RoutingRuleRow[]> {
  return db(envTable(env, RULES)).where({ payment_provider_config_id: configId }).orderBy('created_at', 'desc').orderBy('id', 'desc');
}

export async function createRoutingRule(db: Knex, env: Environment, configId: string, conditions: Conditions): Promise<RoutingRuleRow> {
  const [rule]: RoutingRuleRow[] = await db(envTable(env, RULES))
    .insert({ id: newId('rule'), payment_provider_config_id: configId, conditions: JSON.stringify(conditions) })
    .returning('*');
  return rule;
}

/** Replaces a rule's conditions; undefined when the config has no such rule. */
export async function updateRoutingRule(db: Knex, env: Environment, configId: string, ruleId: string, conditions: Conditions): Promise<RoutingRuleRow | undefined> {
  const [rule]: RoutingRuleRow[] = await db(envTable(env, RULES))
    .where({ id: ruleId, payment_provider_config_id: configId })
    .update({ conditions: JSON.stringify(conditions), updated_at: db.fn.now() })
    .returning('*');
  return rule;
}

/** Removes a rule of the config; false when the config has no such rule. */
export async function deleteRoutingRule(db: Knex, env: Environment, configId: string, ruleId: string): Promise<boolean> {
  return (await db(envTable(env, RULES)).where({ id: ruleId, payment_provider_config_id: configId }).del()) > 0;
}
