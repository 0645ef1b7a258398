// What the `stripe` provider offers (docs/connectors.md): capabilities, default methods, the credentials
// schema, and the check of a provider's `config.api_base`. Pure: the adapter is activities/providers/stripe/.

import { Static, Type } from '@sinclair/typebox';
import { apiBaseErrors, apiBaseParts } from './api-base';
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

/**
 * The errors of a stripe provider's `config` (paths below `root`, e.g. `body/config`): `api_base`, when
 * given, is scheme, host and port only; `https://` always in live, `http://` allowed on loopback in
 * sandbox (local doubles).
 */
export function stripeConfigErrors(config: Record<string, unknown>, sandbox: boolean, root: string): SchemaFieldError[] {
  return apiBaseErrors(config, sandbox, root, '/v1/…');
}

/** A sandbox config takes a test key: a live key (`sk_live_…`) there would charge real cards for test payments. */
export function stripeCredentialsErrors(credentials: Record<string, unknown>, sandbox: boolean, root: string): SchemaFieldError[] {
  const key = typeof credentials.secret_key === 'string' ? credentials.secret_key : '';
  return sandbox && key.startsWith('sk_live_')
    ? [{ path: `${root}/secret_key`, message: 'must be a test key (sk_test_…) in a sandbox account: a live key would move real money' }]
    : [];
}

/** The parts of an api_base the `stripe` library takes (`host`, `port`, `protocol`). */
export function stripeApiBaseParts(apiBase: string | undefined): { protocol: 'http' | 'https'; host: string; port: number } {
  return apiBaseParts(apiBase ?? STRIPE_DEFAULT_API_BASE);
}

export const STRIPE_CATALOGUE: ProviderCatalogueEntry = {
  identifier: STRIPE_IDENTIFIER,
  displayName: 'Stripe',
  capabilities: STRIPE_CAPABILITIES,
  defaultMethods: STRIPE_DEFAULT_METHODS,
  credentialsSchema: StripeCredentialsSchema,
  configErrors: stripeConfigErrors,
  credentialsErrors: stripeCredentialsErrors,
};
