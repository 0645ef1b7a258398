// What the sandbox provider offers: its default method catalogue, credentials schema and capabilities.

import { Static, Type } from '@sinclair/typebox';
import type { MethodTemplate, ProviderCapabilities, ProviderCatalogueEntry } from './types';

export const SANDBOX_IDENTIFIER = 'sandbox';

export const SandboxSimulateSchema = Type.Object(
  {
    outage: Type.Optional(Type.Boolean({ description: 'every call fails with provider_unavailable' })),
    latency_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000, description: 'answer every call this late' })),
    blackhole: Type.Optional(Type.Boolean({ description: 'process calls but never answer them' })),
    decline_rate: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'probability of a card_declined' })),
  },
  { additionalProperties: false },
);

export const SandboxCredentialsSchema = Type.Object(
  {
    api_key: Type.String({ minLength: 1 }),
    simulate: Type.Optional(SandboxSimulateSchema),
  },
  { additionalProperties: false },
);

export type SandboxCredentials = Static<typeof SandboxCredentialsSchema>;

export const SANDBOX_CAPABILITIES: ProviderCapabilities = {
  separateCapture: true,
  partialCapture: true,
  void: true,
  refund: true,
  partialRefund: true,
  statusLookup: true,
  installments: true,
};

const CARD_NETWORKS = [
  ['VISA', 'Visa'],
  ['MASTERCARD', 'Mastercard'],
  ['AMEX', 'American Express'],
  ['DISCOVER', 'Discover'],
] as const;

export const SANDBOX_DEFAULT_METHODS: readonly MethodTemplate[] = CARD_NETWORKS.map(([network, brand]) => ({
  name: `${brand} credit card`,
  category: 'CARD',
  type: 'CREDIT_CARD',
  network,
  installments_supported: true,
  txn_mappings: [
    {
      strategy: 'SDK',
      strategy_identifier: SANDBOX_IDENTIFIER,
      type: 'CARD_PAYMENT',
      capabilities: { authorize: true, capture: true, partial_capture: true, void: true, refund: true, partial_refund: true, installments: true },
    },
  ],
}));

export const SANDBOX_CATALOGUE: ProviderCatalogueEntry = {
  identifier: SANDBOX_IDENTIFIER,
  displayName: 'Sandbox processor',
  capabilities: SANDBOX_CAPABILITIES,
  defaultMethods: SANDBOX_DEFAULT_METHODS,
  credentialsSchema: SandboxCredentialsSchema,
};
