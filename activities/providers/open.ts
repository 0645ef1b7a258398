import { ApplicationFailure } from '@temporalio/activity';
import type { Knex } from 'knex';
import type { Environment } from '../../db/environments';
import { ConfigProvider, openConfigProvider, ProviderConfigNotFoundError } from '../../db/provider-configs';
import type { Config } from '../../lib/config';
import type { Vault } from '../../lib/vault';
import { instrumentAdapter } from '../metrics';
import { getAdapter } from './registry';
import type { ProviderAdapter, ProviderCredentials } from './types';

export interface OpenProvider extends ConfigProvider {
  adapter: ProviderAdapter;
  /** In the clear, in activity memory only: never returned, so never in workflow history. */
  credentials: ProviderCredentials;
}

/**
 * A config's provider, its adapter and its credentials, for an activity about to call the provider (a
 * charge, capture, void or refund). The one way activities open a provider: a config that does not exist
 * fails the activity for good (non-retryable `not_found`), since no retry can bring it back.
 */
export async function openProvider(
  deps: { db: Knex; vault: Vault; config: Pick<Config, 'simulatorUrl' | 'providerTimeoutMs'> }, env: Environment, configId: string,
): Promise<OpenProvider> {
  try {
    const { credentials, ...found } = await openConfigProvider(deps.db, deps.vault, env, configId);
    const adapter = getAdapter(found.provider.identifier, {
      simulatorUrl: deps.config.simulatorUrl, requestTimeoutMs: deps.config.providerTimeoutMs, apiBase: apiBaseOf(found.provider.config), environment: env,
    });
    return { ...found, adapter: instrumentAdapter(adapter, found.provider.identifier), credentials };
  } catch (err) {
    if (err instanceof ProviderConfigNotFoundError) throw ApplicationFailure.nonRetryable(`provider config ${configId} is gone`, 'not_found');
    throw err;
  }
}

/** A provider's `config.api_base` (validated when the provider was registered), if it has one. */
function apiBaseOf(config: Record<string, unknown> | null | undefined): string | undefined {
  return typeof config?.api_base === 'string' ? config.api_base : undefined;
}
