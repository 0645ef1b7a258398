// The built-in providers by identifier, as data: what each offers (capabilities, default methods,
// credentials schema). Pure, so the API and the seed read it without loading adapter code; adding a
// real processor is one entry here and one adapter folder under activities/providers/ (its registry
// line is checked against this list).

import { ADYEN_CATALOGUE } from './adyen/credentials';
import { SANDBOX_CATALOGUE } from './sandbox/credentials';
import { STRIPE_CATALOGUE } from './stripe/credentials';
import type { MethodTemplate, ProviderCatalogueEntry } from './types';

const CATALOGUE = {
  sandbox: SANDBOX_CATALOGUE,
  stripe: STRIPE_CATALOGUE,
  adyen: ADYEN_CATALOGUE,
} as const satisfies Record<string, ProviderCatalogueEntry>;

export type AdapterIdentifier = keyof typeof CATALOGUE;

export function adapterIdentifiers(): AdapterIdentifier[] {
  return Object.keys(CATALOGUE) as AdapterIdentifier[];
}

export function isAdapterIdentifier(identifier: string): identifier is AdapterIdentifier {
  return Object.hasOwn(CATALOGUE, identifier);
}

export function catalogueEntry(identifier: AdapterIdentifier): ProviderCatalogueEntry {
  return CATALOGUE[identifier];
}

/** Fresh copies of an adapter's default methods, for a provider registered without methods of its own. */
export function defaultMethodsOf(entry: ProviderCatalogueEntry): MethodTemplate[] {
  return entry.defaultMethods.map((m) => ({ ...m, txn_mappings: m.txn_mappings.map((t) => ({ ...t })) }));
}

export class UnknownProviderAdapterError extends Error {
  readonly reason = 'unknown_provider_adapter';
  constructor(readonly identifier: string) {
    super(`no provider adapter "${identifier}" (known: ${adapterIdentifiers().join(', ')})`);
  }
}
