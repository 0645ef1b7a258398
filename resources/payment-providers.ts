import { Static, Type } from '@sinclair/typebox';
import type { ProviderMethodRow, ProviderWithMethods, TxnMapping } from '../db/providers';
import { iso } from '../lib/timestamps';
import { Resource, Timestamp } from './schemas';

// Payment providers and their methods (docs/providers-and-routing.md#payment-providers).

const Str = Type.String();
const NullableStr = Type.Union([Type.String(), Type.Null()]);
const Open = Type.Record(Type.String(), Type.Unknown());

export const TxnMappingSchema = Resource('payment_provider_method_txn_mapping', {
  payment_provider_method_id: Str, strategy: Str, strategy_identifier: Str, type: Str, capabilities: Open,
});

export const PaymentProviderMethodSchema = Resource('payment_provider_method', {
  id: Str, payment_provider_id: Str, name: Str, category: Str, type: Str, network: NullableStr,
  installments_supported: Type.Boolean(), txn_mappings: Type.Array(TxnMappingSchema), created_at: Timestamp, updated_at: Timestamp,
});

export const PaymentProviderSchema = Resource('payment_provider', {
  id: Str, name: Str, identifier: Str, country: NullableStr, schemas: Open, config: Open, is_global: Type.Boolean(),
  methods: Type.Array(PaymentProviderMethodSchema), created_at: Timestamp, updated_at: Timestamp,
});

export type PaymentProvider = Static<typeof PaymentProviderSchema>;

/** One txn mapping of a method (stored as jsonb on the method row). */
function serializeTxnMapping(methodId: string, mapping: TxnMapping): Static<typeof TxnMappingSchema> {
  return {
    object: 'payment_provider_method_txn_mapping',
    payment_provider_method_id: methodId,
    strategy: mapping.strategy,
    strategy_identifier: mapping.strategy_identifier,
    type: mapping.type,
    capabilities: mapping.capabilities ?? {},
  };
}

function serializePaymentProviderMethod(row: ProviderMethodRow): Static<typeof PaymentProviderMethodSchema> {
  return {
    object: 'payment_provider_method',
    id: row.id,
    payment_provider_id: row.payment_provider_id,
    name: row.name,
    category: row.category,
    type: row.type,
    network: row.network,
    installments_supported: row.installments_supported,
    txn_mappings: (row.txn_mappings ?? []).map((m) => serializeTxnMapping(row.id, m)),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function serializePaymentProvider({ provider, methods }: ProviderWithMethods): PaymentProvider {
  return {
    object: 'payment_provider',
    id: provider.id,
    name: provider.name,
    identifier: provider.identifier,
    country: provider.country ?? null,
    schemas: provider.schemas ?? {},
    config: provider.config ?? {},
    is_global: provider.is_global,
    methods: methods.map(serializePaymentProviderMethod),
    created_at: iso(provider.created_at),
    updated_at: iso(provider.updated_at),
  };
}
