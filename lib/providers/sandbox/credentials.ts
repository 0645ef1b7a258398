// What the sandbox provider offers: its default method catalogue, credentials schema and capabilities.

import { Static, Type } from '@sinclair/typebox';
import { cardMethodTemplates, cardProcessorCapabilities } from '../methods';
import type { SchemaFieldError } from '../credentials';
import type { MethodTemplate, ProviderCapabilities, ProviderCatalogueEntry } from '../types';
import { AUTHORIZATION_DECLINE_CODES } from './decline-codes';

export const SANDBOX_IDENTIFIER = 'sandbox';

export const SandboxSimulateSchema = Type.Object(
  {
    outage: Type.Optional(Type.Boolean({ description: 'every call fails with provider_unavailable' })),
    latency_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000, description: 'answer every call this late' })),
    blackhole: Type.Optional(Type.Boolean({ description: 'process calls but never answer them' })),
    decline_rate: Type.Optional(Type.Number({ minimum: 0, maximum: 1, description: 'probability of a card_declined' })),
    soft_decline_rate: Type.Optional(Type.Number({
      minimum: 0, maximum: 1, description: 'probability of an issuer_unavailable (a soft decline: the next provider is tried)',
    })),
    // One `enum`, so that a wrong code is one error naming the rule (an anyOf of constants would list each).
    decline_code: Type.Optional(Type.Unsafe<(typeof AUTHORIZATION_DECLINE_CODES)[number]>({
      type: 'string', enum: [...AUTHORIZATION_DECLINE_CODES],
      description: 'every new authorization is declined with this code, hard or soft as the sandbox decline table says (e.g. stolen_card, insufficient_funds, issuer_unavailable)',
    })),
    decline_after_authentication: Type.Optional(Type.String({
      pattern: '^[a-z_]{1,40}$', description: 'a card that is challenged declines with this code once the cardholder has authenticated (e.g. issuer_unavailable: a soft decline after 3-D Secure)',
    })),
    // The dispute test cards' timing (docs/sandbox-processor.md#disputes-in-the-sandbox); the limits are the simulator's.
    dispute_after_ms: Type.Optional(Type.Integer({
      minimum: 0, maximum: 3_600_000, description: 'how long after a dispute test card is captured its dispute comes (default 2000)',
    })),
    dispute_due_in_ms: Type.Optional(Type.Integer({
      minimum: 0, maximum: 1_814_400_000, description: 'how long a dispute gives to answer, from its creation (default 7 days)',
    })),
    dispute_decision_ms: Type.Optional(Type.Integer({
      minimum: 0, maximum: 3_600_000, description: 'how long a submitted dispute waits for its decision, and an early fraud warning before it closes (default 1000)',
    })),
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

/**
 * The sandbox processor approves what its test cards say, so in production (NODE_ENV) it serves the
 * sandbox environment only: registered live, it would let test cards pay real orders. Development and
 * test stacks keep it live too, for demos and the suite.
 */
export function sandboxAdapterErrors(sandbox: boolean, production: boolean): SchemaFieldError[] {
  return !sandbox && production
    ? [{ path: 'body/identifier', message: 'the sandbox processor moves no money: in production it is registered with sandbox_mode=true only' }]
    : [];
}

export const SANDBOX_CAPABILITIES: ProviderCapabilities = cardProcessorCapabilities(true);

export const SANDBOX_DEFAULT_METHODS: readonly MethodTemplate[] = cardMethodTemplates(SANDBOX_IDENTIFIER, true);

export const SANDBOX_CATALOGUE: ProviderCatalogueEntry = {
  identifier: SANDBOX_IDENTIFIER,
  displayName: 'Sandbox processor',
  capabilities: SANDBOX_CAPABILITIES,
  defaultMethods: SANDBOX_DEFAULT_METHODS,
  credentialsSchema: SandboxCredentialsSchema,
};
