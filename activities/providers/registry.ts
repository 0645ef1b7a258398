// The built-in provider adapters by identifier: one line per entry of the catalogue
// (lib/providers/catalogue.ts, which the type below keeps in step). Adding a real processor is one
// folder under activities/providers/ (its HTTP calls), one under lib/providers/ (its credentials,
// decline table and webhook parser, listed in lib/providers/webhooks.ts), one catalogue entry and one
// line in ADAPTERS.

import { AdapterIdentifier, isAdapterIdentifier, UnknownProviderAdapterError } from '../../lib/providers/catalogue';
import { createAdyenAdapter } from './adyen';
import { createSandboxAdapter } from './sandbox';
import { createStripeAdapter } from './stripe';
import { ProviderAdapter } from './types';

export interface AdapterOptions {
  /** The sandbox simulator's base URL (SIMULATOR_URL). */
  simulatorUrl?: string;
  /** How long a provider call may wait for its answer before the outcome is `unknown`. */
  requestTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** The provider's `config.api_base`, for adapters that take one (stripe, adyen). */
  apiBase?: string;
  /** The environment the call is made in, for adapters whose default endpoint depends on it (adyen: test or live). */
  environment?: 'sandbox' | 'production';
  /** The adapter's fallback return URL for an authorize without one (adyen requires one; the engine always gives its own). */
  returnUrl?: string;
}

export const DEFAULT_SIMULATOR_URL = 'http://127.0.0.1:4010';

const ADAPTERS: Record<AdapterIdentifier, (options: AdapterOptions) => ProviderAdapter> = {
  sandbox: (options) => createSandboxAdapter({
    baseUrl: options.simulatorUrl ?? DEFAULT_SIMULATOR_URL,
    timeoutMs: options.requestTimeoutMs,
    connectTimeoutMs: options.connectTimeoutMs,
  }),
  stripe: (options) => createStripeAdapter({ apiBase: options.apiBase, timeoutMs: options.requestTimeoutMs }),
  adyen: (options) => createAdyenAdapter({
    apiBase: options.apiBase, environment: options.environment, returnUrl: options.returnUrl,
    timeoutMs: options.requestTimeoutMs, connectTimeoutMs: options.connectTimeoutMs,
  }),
};

// One adapter per identifier and options, so connection pools are shared rather than leaked per call.
const instances = new Map<string, ProviderAdapter>();

/** The adapter for a provider's `identifier`; throws UnknownProviderAdapterError for an unknown one. */
export function getAdapter(identifier: string, options: AdapterOptions = {}): ProviderAdapter {
  if (!isAdapterIdentifier(identifier)) throw new UnknownProviderAdapterError(identifier);
  const cacheKey = `${identifier} ${JSON.stringify([options.simulatorUrl, options.requestTimeoutMs, options.connectTimeoutMs, options.apiBase, options.environment, options.returnUrl])}`;
  let adapter = instances.get(cacheKey);
  if (!adapter) {
    adapter = ADAPTERS[identifier](options);
    instances.set(cacheKey, adapter);
  }
  return adapter;
}
