// What a provider offers, declared as data (lib/providers/catalogue.ts): capabilities and the method
// catalogue a provider gets when it is registered without one. The adapters' operation contract is
// activities/providers/types.ts.

export type CardNetwork = 'VISA' | 'MASTERCARD' | 'AMEX' | 'DISCOVER' | (string & {});

export interface TxnMappingTemplate {
  strategy: 'SDK' | (string & {});
  strategy_identifier: string;
  type: string;
  capabilities: Record<string, unknown>;
}

/** A payment_provider_method as created when a provider is registered without methods (docs/sandbox-processor.md#adapters-activitiesproviders). */
export interface MethodTemplate {
  name: string;
  category: 'CARD' | (string & {});
  type: 'CREDIT_CARD' | (string & {});
  network: CardNetwork;
  installments_supported: boolean;
  txn_mappings: TxnMappingTemplate[];
}

/** What the adapter supports, declared rather than guessed by callers. */
export interface ProviderCapabilities {
  /** Authorize now, capture later. */
  separateCapture: boolean;
  partialCapture: boolean;
  void: boolean;
  refund: boolean;
  partialRefund: boolean;
  /** getStatus can look an operation up by its idempotency key (required to reconcile unknown outcomes). */
  statusLookup: boolean;
  installments: boolean;
}

/** One built-in provider as the API, the seed and the adapter registry know it. */
export interface ProviderCatalogueEntry {
  readonly identifier: string;
  /** The name a provider registered for this adapter gets by default (the seed's). */
  readonly displayName: string;
  readonly capabilities: ProviderCapabilities;
  readonly defaultMethods: readonly MethodTemplate[];
  /** JSON Schema (ajv, draft-07 compatible) for a provider config's `credentials`. */
  readonly credentialsSchema: Record<string, unknown>;
  /**
   * The field errors of a provider's `config` as the system actor registers it (paths below `root`),
   * for adapters that read something from it (e.g. stripe's `api_base`; `extraHosts`: the operator's
   * PROVIDER_API_BASE_EXTRA_HOSTS). Absent: any object goes.
   */
  readonly configErrors?: (
    config: Record<string, unknown>, sandbox: boolean, root: string, extraHosts?: readonly { host: string; port?: number }[],
  ) => { path: string; message: string }[];
  /**
   * The processor's own API hosts, where a live provider's `config.api_base` may point (lib/providers/api-base.ts):
   * an exact host, or `*-suffix` / `*.suffix` for one DNS label before the suffix. Absent: the adapter reads no api_base.
   */
  readonly apiHosts?: readonly string[];
  /**
   * The processor's every notification says whether it is of its live mode (Stripe's signed `livemode`,
   * Adyen's `live`): a live config then takes only events that say live (ProcessorEvent.live).
   */
  readonly eventsStateMode?: boolean;
  /**
   * The field errors of a config's `credentials` (already valid by the schema) for the environment it is
   * made in (paths below `root`): a live config takes live credentials only, a sandbox config test ones
   * only. `providerConfig` is the provider's `config` (an adapter may read it, e.g. adyen's api_base).
   */
  readonly credentialsErrors?: (
    credentials: Record<string, unknown>, sandbox: boolean, root: string, providerConfig?: Record<string, unknown>,
  ) => { path: string; message: string }[];
}
