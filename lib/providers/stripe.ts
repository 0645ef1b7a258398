// What the `stripe` provider offers (docs/connectors.md): capabilities, default methods, the credentials
// schema, and the check of a provider's `config.api_base`. Pure: the adapter is activities/providers/stripe/.

import { Static, Type } from '@sinclair/typebox';
import type { SchemaFieldError } from './credentials';
import { cardMethodTemplates, cardProcessorCapabilities } from './methods';
import type { MethodTemplate, ProviderCapabilities, ProviderCatalogueEntry } from './types';

export const STRIPE_IDENTIFIER = 'stripe';

/** Stripe's real API (the library appends `/v1/…` itself). */
export const STRIPE_DEFAULT_API_BASE = 'https://api.stripe.com';

export const StripeCredentialsSchema = Type.Object(
  {
    secret_key: Type.String({ pattern: '^sk_(test|live)_', minLength: 8, maxLength: 255, description: 'the account\'s secret key, sk_test_… or sk_live_…' }),
    webhook_secret: Type.String({ minLength: 1, maxLength: 255, description: 'the signing secret (whsec_…) of the webhook endpoint; used by the inbound path' }),
  },
  { additionalProperties: false },
);

export type StripeCredentials = Static<typeof StripeCredentialsSchema>;

export const STRIPE_CAPABILITIES: ProviderCapabilities = cardProcessorCapabilities(false);

export const STRIPE_DEFAULT_METHODS: readonly MethodTemplate[] = cardMethodTemplates(STRIPE_IDENTIFIER, false);

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * The errors of a stripe provider's `config` (paths below `root`, e.g. `body/config`): `api_base`, when
 * given, is scheme, host and port only; `https://` always in live, `http://` allowed on loopback in
 * sandbox (local doubles).
 */
export function stripeConfigErrors(config: Record<string, unknown>, sandbox: boolean, root: string): SchemaFieldError[] {
  const value = config.api_base;
  if (value === undefined) return [];
  const path = `${root}/api_base`;
  if (typeof value !== 'string') return [{ path, message: 'must be a URL string' }];
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return [{ path, message: 'must be an absolute URL' }];
  }
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash || url.username || url.password) {
    return [{ path, message: 'must be scheme, host and port only (the library appends /v1/…)' }];
  }
  if (url.protocol === 'https:') return [];
  if (url.protocol === 'http:') {
    if (!sandbox) return [{ path, message: 'must be https:// in live' }];
    if (!LOOPBACK_HOSTS.has(url.hostname)) return [{ path, message: 'may be http:// only on loopback (sandbox)' }];
    return [];
  }
  return [{ path, message: 'must be https:// (or http:// on loopback in sandbox)' }];
}

/** The parts of an api_base the `stripe` library takes (`host`, `port`, `protocol`). */
export function stripeApiBaseParts(apiBase: string | undefined): { protocol: 'http' | 'https'; host: string; port: number } {
  const url = new URL(apiBase ?? STRIPE_DEFAULT_API_BASE);
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  return { protocol, host: url.hostname, port: url.port ? Number(url.port) : protocol === 'https' ? 443 : 80 };
}

export const STRIPE_CATALOGUE: ProviderCatalogueEntry = {
  identifier: STRIPE_IDENTIFIER,
  displayName: 'Stripe',
  capabilities: STRIPE_CAPABILITIES,
  defaultMethods: STRIPE_DEFAULT_METHODS,
  credentialsSchema: StripeCredentialsSchema,
  configErrors: stripeConfigErrors,
};
