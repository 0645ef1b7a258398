import { Type } from '@sinclair/typebox';
import { Resource, Timestamp } from '../schemas';

// Response schemas of the providers-and-routing resources (docs/providers-and-routing.md), for the OpenAPI document.
// Charge and payment are here because routing plans embed them; the payment routes reuse them.

const Str = Type.String();
const NullableStr = Type.Union([Type.String(), Type.Null()]);
const Open = Type.Record(Type.String(), Type.Unknown());
const Stamps = { created_at: Timestamp, updated_at: Timestamp };

export const TxnMappingSchema = Resource('payment_provider_method_txn_mapping', {
  payment_provider_method_id: Str, strategy: Str, strategy_identifier: Str, type: Str, capabilities: Open,
});

export const PaymentProviderMethodSchema = Resource('payment_provider_method', {
  id: Str, payment_provider_id: Str, name: Str, category: Str, type: Str, network: NullableStr,
  installments_supported: Type.Boolean(), txn_mappings: Type.Array(TxnMappingSchema), ...Stamps,
});

export const PaymentProviderSchema = Resource('payment_provider', {
  id: Str, name: Str, identifier: Str, country: NullableStr, schemas: Open, config: Open, is_global: Type.Boolean(),
  methods: Type.Array(PaymentProviderMethodSchema), ...Stamps,
});

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
  fees: Type.Array(ProviderConfigFeeSchema), routing_rules: Type.Array(RoutingRuleSchema), ...Stamps,
});

/** What a DELETE of a fee or a rule answers. */
export const DeletedSchema = (object: string) => Resource(object, { id: Str, deleted: Type.Literal(true) });

export const ChargeSchema = Resource('charge', {
  id: Str, payment_id: Str, payment_method_id: NullableStr, customer_id: NullableStr, account_id: Str, status: Str,
  amount: Type.Integer(), authorized_amount: Type.Integer(), captured_amount: Type.Integer(), refunded_amount: Type.Integer(),
  currency: Str, installments: Type.Integer(), attempt_no: Type.Integer(),
  security: Open, transaction: Open, details: Open, metadata: Open, exchanges: Type.Array(Type.Unknown()),
  performance: Type.Object({ duration: Type.Number({ description: 'milliseconds' }) }, { additionalProperties: true }),
  routing_plan_id: NullableStr, payment_provider_id: NullableStr, payment_provider_method_id: NullableStr,
  routing_origin: Str, payment_provider_config_snapshot: Open, ...Stamps,
});

export const PaymentSchema = Resource('payment', {
  id: Str, account_id: Str, customer_id: NullableStr, checkout_session_id: NullableStr, amount: Type.Integer(), currency: Str,
  status: Str, installments: Type.Integer(), routing_origin: Str, metadata: Open, ...Stamps,
  charges: Type.Optional(Type.Array(ChargeSchema)),
});

export const AttemptSchema = Type.Object({
  attempt_no: Type.Integer(), candidate_index: Type.Union([Type.Integer(), Type.Null()]), charge_id: Str, status: Str,
  payment_provider_config_id: NullableStr, decline_code: NullableStr, created_at: Timestamp,
}, { additionalProperties: true });

export const RoutingPlanSchema = Resource('routing_plan', {
  id: Str, account_id: Str, payment_id: Str, request_id: NullableStr, trace_id: NullableStr, current_index: Type.Integer(),
  routing_origin: Str, candidates: Type.Unknown(), metadata: Open, ...Stamps,
  charges: Type.Optional(Type.Array(ChargeSchema)),
  attempts: Type.Optional(Type.Array(AttemptSchema)),
  payment: Type.Optional(Type.Union([PaymentSchema, Type.Null()])),
});
