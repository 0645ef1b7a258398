import type { Knex } from 'knex';
import { newId } from '../../lib/ids';
import { envTable, Environment } from '../environments';
import { groupBy } from './routing';

export interface NewTxnMapping {
  strategy: string;
  strategy_identifier: string;
  type: string;
  capabilities: Record<string, unknown>;
}

export interface NewProviderMethod {
  name: string;
  category: string;
  type: string;
  network: string;
  installments_supported: boolean;
  txn_mappings: NewTxnMapping[];
}

export interface NewPaymentProvider {
  name: string;
  identifier: string;
  country?: string;
  isGlobal: boolean;
  config: Record<string, unknown>;
  schemas: Record<string, unknown>;
  methods: NewProviderMethod[];
}

/** A provider and its method catalogue, in one transaction: a provider never exists without its methods. */
export async function createPaymentProvider(db: Knex, env: Environment, input: NewPaymentProvider) {
  return db.transaction(async (trx) => {
    const [provider] = await trx(envTable(env, 'payment_providers'))
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
    const methods = input.methods.length
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
export async function listPaymentProviders(db: Knex, env: Environment) {
  const providers = await db(envTable(env, 'payment_providers')).orderBy('created_at', 'desc').orderBy('id', 'desc');
  const methods = providers.length
    ? await db(envTable(env, 'payment_provider_methods')).whereIn('payment_provider_id', providers.map((p) => p.id)).orderBy('id')
    : [];
  const byProvider = groupBy(methods, 'payment_provider_id');
  return providers.map((provider) => ({ provider, methods: byProvider.get(provider.id) ?? [] }));
}
