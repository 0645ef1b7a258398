// What the `adyen` provider offers (docs/connectors.md#adyen): capabilities, default methods, the
// credentials schema, the check of a provider's `config.api_base`, and where its Checkout API lives.
// Pure: the adapter is activities/providers/adyen/.

import { Static, Type } from '@sinclair/typebox';
import { apiBaseErrors, type ExtraApiHost } from '../api-base';
import type { SchemaFieldError } from '../credentials';
import { cardMethodTemplates, cardProcessorCapabilities } from '../methods';
import type { MethodTemplate, ProviderCapabilities, ProviderCatalogueEntry } from '../types';

export const ADYEN_IDENTIFIER = 'adyen';

/** The Checkout API version the adapter speaks (the library's, which appends `/v71/…`). */
export const ADYEN_CHECKOUT_VERSION = 'v71';

/** Adyen's test Checkout API, for sandbox configs (the adapter appends `/v71/…`). */
export const ADYEN_TEST_API_BASE = 'https://checkout-test.adyen.com';

/**
 * Adyen's live Checkout hosts (`{PREFIX}-checkout-live.adyenpayments.com`, the OpenAPI's live servers):
 * where a live provider's api_base may point. The test host is not among them: a live provider sending to
 * it would have test cards approved for real orders.
 */
export const ADYEN_LIVE_API_HOSTS = ['*-checkout-live.adyenpayments.com'] as const;

/** Adyen's live Checkout API: a host of the merchant's company account, named by its prefix. */
export function adyenLiveApiBase(liveUrlPrefix: string): string {
  return `https://${liveUrlPrefix}-checkout-live.adyenpayments.com/checkout`;
}

export const AdyenCredentialsSchema = Type.Object(
  {
    api_key: Type.String({ minLength: 1, maxLength: 1024, description: 'the API key of the web service user (Customer Area › Developers › API credentials)' }),
    merchant_account: Type.String({ minLength: 1, maxLength: 255, description: 'the merchant account payments are made under' }),
    hmac_key: Type.String({
      pattern: '^(?:[0-9A-Fa-f]{2}){16,64}$',
      description: 'the HMAC key (hex) of the standard webhook, which signs its notifications',
    }),
    live_url_prefix: Type.Optional(Type.String({
      pattern: '^[A-Za-z0-9](?:[A-Za-z0-9-]{0,47}[A-Za-z0-9])?$',
      description: 'the live endpoints\' prefix of the company account (Customer Area › Developers › API URLs); required in live unless the provider has a config.api_base',
    })),
  },
  { additionalProperties: false },
);

export type AdyenCredentials = Static<typeof AdyenCredentialsSchema>;

/** A card processor without a look-up by our reference: Checkout has none, notifications settle unknowns. */
export const ADYEN_CAPABILITIES: ProviderCapabilities = { ...cardProcessorCapabilities(false), statusLookup: false };

export const ADYEN_DEFAULT_METHODS: readonly MethodTemplate[] = cardMethodTemplates(ADYEN_IDENTIFIER, false);

/** The errors of an adyen provider's `config` (paths below `root`): `api_base` as for every connector. */
export function adyenConfigErrors(
  config: Record<string, unknown>, sandbox: boolean, root: string, extraHosts: readonly ExtraApiHost[] = [],
): SchemaFieldError[] {
  return apiBaseErrors(config, sandbox, root, `/${ADYEN_CHECKOUT_VERSION}/…`, extraHosts);
}

/**
 * Adyen's keys do not say their environment; `live_url_prefix` does (it names live endpoints only). A
 * sandbox config refuses one: its payments would go to the live platform. A live config needs one,
 * unless its provider's api_base (a proxy) stands in for it: without, it has no live endpoint at all.
 */
export function adyenCredentialsErrors(
  credentials: Record<string, unknown>, sandbox: boolean, root: string, providerConfig: Record<string, unknown> = {},
): SchemaFieldError[] {
  const path = `${root}/live_url_prefix`;
  const prefix = credentials.live_url_prefix;
  if (sandbox && prefix !== undefined) {
    return [{ path, message: 'must be absent in a sandbox account: it names a live endpoint, where payments move real money' }];
  }
  if (!sandbox && prefix === undefined && typeof providerConfig.api_base !== 'string') {
    return [{ path, message: 'is required in a live account (Customer Area › Developers › API URLs): without it there is no live endpoint' }];
  }
  return [];
}

export const ADYEN_CATALOGUE: ProviderCatalogueEntry = {
  identifier: ADYEN_IDENTIFIER,
  displayName: 'Adyen',
  capabilities: ADYEN_CAPABILITIES,
  defaultMethods: ADYEN_DEFAULT_METHODS,
  credentialsSchema: AdyenCredentialsSchema,
  configErrors: adyenConfigErrors,
  apiHosts: ADYEN_LIVE_API_HOSTS,
  eventsStateMode: true,
  credentialsErrors: adyenCredentialsErrors,
};
