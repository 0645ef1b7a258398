// What the `stripe` provider offers (docs/connectors.md): capabilities, default methods, the credentials
// schema, and the check of a provider's `config.api_base`. Pure: the adapter is activities/providers/stripe/.

import { Static, Type } from '@sinclair/typebox';
import { apiBaseErrors, apiBaseParts, type ExtraApiHost } from '../api-base';
import type { SchemaFieldError } from '../credentials';
import { cardMethodTemplates, cardProcessorCapabilities } from '../methods';
import type { MethodTemplate, ProviderCapabilities, ProviderCatalogueEntry } from '../types';

export const STRIPE_IDENTIFIER = 'stripe';

/** Stripe's real API (the library appends `/v1/…` itself). */
export const STRIPE_DEFAULT_API_BASE = 'https://api.stripe.com';

/** Stripe's API host, for test and live keys alike (the key picks the mode). */
export const STRIPE_API_HOSTS = ['api.stripe.com'] as const;

export const StripeCredentialsSchema = Type.Object(
  {
    secret_key: Type.String({
      pattern: '^[sr]k_(test|live)_', minLength: 8, maxLength: 255,
      description: 'the account\'s secret or restricted key: sk_test_…/rk_test_… in a sandbox account, sk_live_…/rk_live_… in a live one',
    }),
    webhook_secret: Type.String({ minLength: 1, maxLength: 255, description: 'the signing secret (whsec_…) of the webhook endpoint; used by the inbound path' }),
  },
  { additionalProperties: false },
);

export type StripeCredentials = Static<typeof StripeCredentialsSchema>;

export const STRIPE_CAPABILITIES: ProviderCapabilities = cardProcessorCapabilities(false);

export const STRIPE_DEFAULT_METHODS: readonly MethodTemplate[] = cardMethodTemplates(STRIPE_IDENTIFIER, false);

/**
 * The errors of a stripe provider's `config` (paths below `root`, e.g. `body/config`): `api_base`, when
 * given, is scheme, host and port only; `https://` in live, `http://` allowed on loopback in sandbox (local
 * doubles) and on a loopback host of `extraHosts` (lib/providers/api-base.ts).
 */
export function stripeConfigErrors(
  config: Record<string, unknown>, sandbox: boolean, root: string, extraHosts: readonly ExtraApiHost[] = [],
): SchemaFieldError[] {
  return apiBaseErrors(config, sandbox, root, '/v1/…', extraHosts);
}

/** The mode a Stripe key is of, by its prefix (secret `sk_`, restricted `rk_`); undefined for anything else. */
export function stripeKeyMode(key: string): 'test' | 'live' | undefined {
  return /^[sr]k_(test|live)_/.exec(key)?.[1] as 'test' | 'live' | undefined;
}

/**
 * A sandbox config takes a test key: a live key there would charge real cards for test payments. A live
 * config takes a live key: with a test key, test cards "succeed" and the account ships goods unpaid. A
 * provider's own, looser schema does not lift this: the key's prefix is Stripe's word on its mode.
 */
export function stripeCredentialsErrors(credentials: Record<string, unknown>, sandbox: boolean, root: string): SchemaFieldError[] {
  const mode = stripeKeyMode(typeof credentials.secret_key === 'string' ? credentials.secret_key : '');
  if (sandbox && mode !== 'test') {
    return [{ path: `${root}/secret_key`, message: 'must be a test key (sk_test_…) in a sandbox account: a live key would move real money' }];
  }
  if (!sandbox && mode !== 'live') {
    return [{ path: `${root}/secret_key`, message: 'must be a live key (sk_live_… or rk_live_…) in a live account: a test key approves test cards' }];
  }
  return [];
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
  apiHosts: STRIPE_API_HOSTS,
  eventsStateMode: true,
  credentialsErrors: stripeCredentialsErrors,
};
