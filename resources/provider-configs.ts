import { Static, Type } from '@sinclair/typebox';
import type { ProviderConfigFeeRow, RoutingRuleRow } from '../db/fees-and-rules';
import type { ProviderConfigWithEmbeds } from '../db/provider-configs';
import { providerWebhookUrl } from '../lib/public-urls';
import { iso } from '../lib/timestamps';
import { Resource, Timestamp } from './schemas';

// Provider configs with their fees and routing rules (docs/providers-and-routing.md).

const Str = Type.String();
const Open = Type.Record(Type.String(), Type.Unknown());
const Stamps = { created_at: Timestamp, updated_at: Timestamp };

export const ProviderConfigFeeSchema = Resource('payment_provider_config_fee', {
  id: Str, payment_provider_config_id: Str, payment_provider_method_id: Str, installment_count: Type.Integer(),
  volume_fee: Type.Number({ description: 'percent of the amount' }), fixed_fee: Type.Integer({ description: 'minor units of fixed_fee_currency' }),
  fixed_fee_currency: Str, ...Stamps,
});

export const RoutingRuleSchema = Resource('payment_provider_config_routing_rule', {
  id: Str, payment_provider_config_id: Str, conditions: Open, ...Stamps,
});

export const ProviderConfigSchema = Resource('payment_provider_config', {
  id: Str, account_id: Str, payment_provider_id: Str, name: Str,
  credentials: Type.Record(Type.String(), Type.Unknown(), { description: 'masked: the keys that are set, never their values' }),
  merchant_capabilities: Open, deleted: Type.Boolean(),
  webhook_url: Type.String({ description: 'where the processor posts this config\'s events (POST, signed with the config\'s secret): register it at the processor' }),
  fees: Type.Array(ProviderConfigFeeSchema), routing_rules: Type.Array(RoutingRuleSchema), ...Stamps,
});

/** What a DELETE of a fee or a rule answers. */
export const DeletedSchema = <O extends string>(object: O) => Resource(object, { id: Str, deleted: Type.Literal(true) });

export function serializeProviderConfigFee(row: ProviderConfigFeeRow): Static<typeof ProviderConfigFeeSchema> {
  return {
    object: 'payment_provider_config_fee',
    id: row.id,
    payment_provider_config_id: row.payment_provider_config_id,
    payment_provider_method_id: row.payment_provider_method_id,
    installment_count: row.installment_count,
    volume_fee: Number(row.volume_fee),
    fixed_fee: Number(row.fixed_fee),
    fixed_fee_currency: row.fixed_fee_currency,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function serializeRoutingRule(row: RoutingRuleRow): Static<typeof RoutingRuleSchema> {
  return {
    object: 'payment_provider_config_routing_rule',
    id: row.id,
    payment_provider_config_id: row.payment_provider_config_id,
    conditions: row.conditions ?? {},
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** A config; its credentials come masked from the store (db/providers.ts), so none can reach a response. */
export function serializeProviderConfig(config: ProviderConfigWithEmbeds, publicUrl: string): Static<typeof ProviderConfigSchema> {
  return {
    object: 'payment_provider_config',
    id: config.id,
    account_id: config.account_id,
    payment_provider_id: config.payment_provider_id,
    name: config.name,
    credentials: config.credentials,
    merchant_capabilities: config.merchant_capabilities ?? {},
    deleted: config.deleted,
    webhook_url: providerWebhookUrl(publicUrl, config.id),
    fees: config.fees.map(serializeProviderConfigFee),
    routing_rules: config.rules.map(serializeRoutingRule),
    created_at: iso(config.created_at),
    updated_at: iso(config.updated_at),
  };
}
