import { Type } from '@sinclair/typebox';
import type { Environment } from '../../db/environments';
import { createPaymentProvider, listPaymentProviders, NewProviderMethod, TxnMapping } from '../../db/providers';
import { apiBaseHostErrors } from '../../lib/providers/api-base';
import { SANDBOX_IDENTIFIER, sandboxAdapterErrors } from '../../lib/providers/sandbox/credentials';
import { compileCredentialsSchema } from '../../lib/providers/credentials';
import { adapterIdentifiers, catalogueEntry, defaultMethodsOf, isAdapterIdentifier } from '../../lib/providers/catalogue';
import type { ProviderCatalogueEntry } from '../../lib/providers/types';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { PaymentProviderSchema, serializePaymentProvider } from '../../resources/payment-providers';
import { defineRoute } from '../route';
import { Country, FreeForm, Obj } from '../../resources/schemas';

const UpperToken = (maxLength: number, description: string) => Type.String({ pattern: '^[A-Z][A-Z0-9_]*$', maxLength, description });

const TxnMappingInput = Obj({
  strategy: Type.Optional(UpperToken(40, 'how the method is executed; default SDK (the provider adapter)')),
  strategy_identifier: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'default: the provider identifier' })),
  type: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'default CARD_PAYMENT' })),
  capabilities: Type.Optional(FreeForm),
});

const MethodInput = Obj({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  category: Type.Literal('CARD'),
  type: Type.Union([Type.Literal('CREDIT_CARD'), Type.Literal('DEBIT_CARD')]),
  network: UpperToken(40, 'card network, e.g. VISA, MASTERCARD, AMEX, DISCOVER'),
  installments_supported: Type.Optional(Type.Boolean({ default: false })),
  txn_mappings: Type.Optional(Type.Array(TxnMappingInput, { minItems: 1, maxItems: 10 })),
});

/** The txn mapping a method gets when none is given: the adapter itself (SDK), with what it declares it can do. */
function defaultTxnMapping(adapter: ProviderCatalogueEntry, installmentsSupported: boolean): TxnMapping {
  const c = adapter.capabilities;
  return {
    strategy: 'SDK',
    strategy_identifier: adapter.identifier,
    type: 'CARD_PAYMENT',
    capabilities: {
      authorize: true, capture: true, partial_capture: c.partialCapture, void: c.void, refund: c.refund,
      partial_refund: c.partialRefund, installments: c.installments && installmentsSupported,
    },
  };
}

function isSystemActor(principal: { kind: string; actorType?: string }): boolean {
  return principal.kind === 'user' && principal.actorType === 'system';
}

/**
 * 400 at body/config when the config is not one the adapter takes (at body/identifier for the sandbox
 * processor registered live in production); outside the sandbox its api_base must
 * also be one of the processor's own hosts (or PROVIDER_API_BASE_EXTRA_HOSTS): whoever answers a live
 * provider's requests decides which charges succeed.
 */
function checkProviderConfig(deps: ApiDeps, adapter: ProviderCatalogueEntry, config: Record<string, unknown>, sandbox: boolean): void {
  const extraHosts = deps.config.providerApiBaseExtraHosts;
  const errors = adapter.identifier === SANDBOX_IDENTIFIER ? sandboxAdapterErrors(sandbox, deps.config.env === 'production') : [];
  errors.push(...adapter.configErrors?.(config, sandbox, 'body/config', extraHosts) ?? []);
  if (!errors.length && !sandbox && adapter.apiHosts) errors.push(...apiBaseHostErrors(config, adapter.apiHosts, extraHosts, 'body/config'));
  if (errors.length) throw ApiError.validation(errors);
}

export const paymentProviderRoutes = [
  defineRoute({
    method: 'post',
    path: '/payment-providers',
    tag: 'Payment providers',
    summary: 'Register a payment provider in the live or the sandbox environment (platform-scoped system token only)',
    permission: null,
    errors: ['unknown_provider_adapter'],
    systemOnly: true,
    // The payment providers are the platform's, shared by every workspace: a workspace's system token acts
    // for that workspace's accounts, and would otherwise decide where every tenant's money goes.
    platform: 'required',
    status: 201,
    message: 'Payment provider created',
    query: Obj({ sandbox_mode: Type.Optional(Type.Boolean({ description: 'true: the sandbox environment; else live' })) }),
    body: Obj({
      name: Type.String({ minLength: 1, maxLength: 200 }),
      identifier: Type.String({ minLength: 1, maxLength: 64, description: 'the built-in adapter that speaks to this provider, e.g. sandbox' }),
      config: Type.Optional(FreeForm),
      is_global: Type.Optional(Type.Boolean({ default: false })),
      country: Type.Optional(Country),
      schemas: Type.Optional(Type.Object({}, {
        additionalProperties: true,
        description: '`credentials`: the JSON Schema provider configs\' credentials must satisfy (default: the adapter\'s)',
      })),
      methods: Type.Optional(Type.Array(MethodInput, { minItems: 1, maxItems: 100, description: 'default: the adapter\'s catalogue' })),
    }),
    response: PaymentProviderSchema,
    async handler({ query, body, deps }) {
      if (!isAdapterIdentifier(body.identifier)) {
        throw new ApiError('unknown_provider_adapter', `No adapter "${body.identifier}"; known: ${adapterIdentifiers().join(', ')}.`, {
          identifier: body.identifier, known: adapterIdentifiers(),
        });
      }
      const adapter = catalogueEntry(body.identifier);
      checkProviderConfig(deps, adapter, body.config ?? {}, query.sandbox_mode === true);
      const schemas: Record<string, unknown> = { ...(body.schemas ?? {}) };
      if (schemas.credentials === undefined) {
        schemas.credentials = adapter.credentialsSchema;
      } else {
        const compiled = compileCredentialsSchema(schemas.credentials);
        if (!compiled.ok) throw ApiError.validation([{ path: 'body/schemas/credentials', message: compiled.error }]);
      }
      const methods: NewProviderMethod[] = body.methods
        ? body.methods.map((m) => {
          const installments = m.installments_supported ?? false;
          return {
            name: m.name,
            category: m.category,
            type: m.type,
            network: m.network,
            installments_supported: installments,
            txn_mappings: m.txn_mappings
              ? m.txn_mappings.map((t) => ({
                strategy: t.strategy ?? 'SDK',
                strategy_identifier: t.strategy_identifier ?? body.identifier,
                type: t.type ?? 'CARD_PAYMENT',
                capabilities: t.capabilities ?? {},
              }))
              : [defaultTxnMapping(adapter, installments)],
          };
        })
        : defaultMethodsOf(adapter);
      const env: Environment = query.sandbox_mode ? 'sandbox' : 'production';
      const created = await createPaymentProvider(deps.db, env, {
        name: body.name,
        identifier: body.identifier,
        country: body.country,
        isGlobal: body.is_global ?? false,
        config: body.config ?? {},
        schemas,
        methods,
      });
      return { data: serializePaymentProvider(created) };
    },
  }),

  defineRoute({
    method: 'get',
    path: '/payment-providers',
    tag: 'Payment providers',
    summary: 'List the payment providers of the caller\'s environment, with their methods',
    permission: 'routing:read',
    platform: 'allowed',
    message: 'Payment providers retrieved',
    query: Obj({
      sandbox_mode: Type.Optional(Type.Boolean({ description: 'system actor only, without account_id: which environment to list' })),
    }),
    response: Type.Array(PaymentProviderSchema),
    async handler({ query, principal, access, deps }) {
      let env: Environment;
      if (isSystemActor(principal) && !access.namedAccountId) {
        env = query.sandbox_mode ? 'sandbox' : 'production';
      } else {
        // The environment is the account's (named, or the key's own): a caller cannot pick another one.
        const scope = await access.forAccount();
        env = scope.environment;
        if (query.sandbox_mode !== undefined && query.sandbox_mode !== (env === 'sandbox')) {
          throw ApiError.validation([{ path: 'query/sandbox_mode', message: `contradicts the account's environment (${env})` }]);
        }
      }
      const providers = await listPaymentProviders(deps.db, env);
      return { data: providers.map(serializePaymentProvider) };
    },
  }),
];
