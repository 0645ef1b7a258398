/**
 * The configuration, parsed from the environment. Pure: the development secrets on disk and the data
 * directory are read by db/local-state.ts (`loadConfig`, what every process calls) and handed in.
 */
import ms from 'ms';
import { ExtraApiHost, parseExtraApiHosts } from './providers/api-base';
import { productionSecretProblems } from './production-secrets';
import { parseVaultKeys, VaultKeyError, vaultKeysText } from './vault-keys';

export interface Config {
  env: 'development' | 'test' | 'production';
  port: number;
  /** PUBLIC_URL: where the world reaches the API (processors' webhooks, 3-D Secure returns); no trailing slash. */
  publicUrl: string;
  dataDir: string;
  databaseUrl?: string;
  temporal: {
    address?: string;
    namespace: string;
    apiKey?: string;
    tls?: { certPath?: string; keyPath?: string; caPath?: string; serverName?: string };
    uiUrl: string;
  };
  jwt: {
    /** Users' tokens: HS256 with `secret`, RS256/ES256 with `publicKey` or the JWKS. */
    secret?: string;
    publicKey?: string;
    jwksUrl?: string;
    issuer?: string;
    audience?: string;
    /** The system actor's tokens, and only those: HS256 with `systemSecret`, RS256/ES256 with `systemPublicKey`. */
    systemSecret?: string;
    systemPublicKey?: string;
  };
  /**
   * VAULT_KEYS, the vault's key ring as it spells it (`k2:<base64>,k1:<base64>`, newest first; VAULT_KEY
   * alone is `k0:<VAULT_KEY>`): what `new Vault(...)` takes and child processes are handed.
   */
  vaultKeys: string;
  apiKeyPepper: string;
  simulatorUrl?: string;
  /** PROVIDER_API_BASE_EXTRA_HOSTS: where a live provider's api_base may point beyond the processor's own hosts. */
  providerApiBaseExtraHosts: ExtraApiHost[];
  webhookAllowPrivate: boolean;
  webhookRetrySchedule?: string;
  /** Webhook attempts one account may have in flight on one worker (WEBHOOK_ACCOUNT_CONCURRENCY; 0 = no limit). */
  webhookAccountConcurrency: number;
  /** AUTH_EXPIRY and PAYMENT_EXPIRY, in milliseconds. */
  authExpiryMs: number;
  paymentExpiryMs: number;
  /** AUTHENTICATION_TIMEOUT: how long a payment waits for the customer to authenticate (3-D Secure). */
  authenticationTimeoutMs: number;
  /** How long a provider call may take before its outcome is unknown (and reconciled, never cascaded). */
  providerTimeoutMs: number;
  /**
   * WORKER_METRICS_PORT: the worker's Prometheus `/metrics` (0 = off); the Temporal SDK's own metrics are
   * served on the next port (docs/observability.md#metrics).
   */
  workerMetricsPort: number;
  /**
   * WORKER_METRICS_HOST: the IP address both worker metrics endpoints listen on; loopback unless a
   * scraper elsewhere must reach them (`0.0.0.0` in the compose network, whose ports are not published).
   */
  workerMetricsHost: string;
  /**
   * METRICS_TOKEN: when set, the API's and the worker's `GET /metrics` answer only `Authorization: Bearer
   * <token>` (the scraper's): their counters tell every tenant's volume. Required in production.
   */
  metricsToken?: string;
  /** Workflows a worker keeps in memory per task queue; evicted ones are replayed from history when needed. */
  workerMaxCachedWorkflows: number;
  /**
   * WORKER_WORKFLOW_HEAP_MB: the V8 heap limit of the worker's workflow threads (0 = V8's default, a
   * share of the machine's memory). A bound only: it made no measurable difference to the worker's
   * memory, which grows on the main thread (WORKER_HEAP_MB; docs/performance-log.md#worker-memory).
   */
  workerWorkflowHeapMb: number;
  /**
   * WORKER_HEAP_MB: the V8 old-space limit of the worker's main thread, where activities (local ones
   * included) and the SDK's side of every task run (0 = V8's default, a share of the machine's memory).
   * A heap limit is fixed when the process starts, so launchers pass it as `--max-old-space-size`
   * (`workerNodeArgs`); the worker warns when it was started without it (docs/performance-log.md#worker-memory).
   */
  workerHeapMb: number;
  /** STUCK_PAYMENT_THRESHOLD: a payment PROCESSING longer than this is notified as stuck. */
  stuckPaymentThresholdMs: number;
  /** Per-credential request rate on /v1: RATE_LIMIT_RPS sustained, RATE_LIMIT_BURST on top; rps 0 = off. */
  rateLimit: { rps: number; burst: number };
  /**
   * The processors' notification route, per source IP (docs/production.md#rate-limits): requests it
   * refused (PROVIDER_WEBHOOK_FAILURES_PER_MINUTE, then 429 until the minute is over), and verified
   * notifications per provider config and source IP (PROVIDER_WEBHOOK_RPS a second); 0 turns either off.
   */
  providerWebhookLimit: { failuresPerMinute: number; rps: number };
  /**
   * The customer's return from 3-D Secure, per minute (docs/production.md#rate-limits): requests per source
   * IP (AUTHENTICATION_RETURN_IP_PER_MINUTE) and per payment (AUTHENTICATION_RETURN_PAYMENT_PER_MINUTE); 0 turns either off.
   */
  authenticationReturnLimit: { perIpPerMinute: number; perPaymentPerMinute: number };
  /** API_KEYS_PER_ACCOUNT_MAX: live (not deleted) keys an account may hold, managed ones included. */
  apiKeysPerAccountMax: number;
  /**
   * Declines client-side confirmations (publishable keys, the hosted page, the card fields) may collect
   * before confirm answers 429 `too_many_declines` (api/middleware/decline-limits.ts): per card fingerprint
   * an hour (CHECKOUT_DECLINES_PER_CARD_PER_HOUR), per client IP and per publishable key in 10 minutes
   * (CHECKOUT_DECLINES_PER_IP_PER_10_MIN, CHECKOUT_DECLINES_PER_KEY_PER_10_MIN); 0 turns one off.
   */
  checkoutDeclineLimits: { perCardPerHour: number; perIpPer10Min: number; perKeyPer10Min: number };
}

export class ConfigError extends Error {}

/**
 * The top-level catch of a process (API, worker, scripts): a configuration error becomes one line on
 * stderr naming the variable (never its value) and exit code 1, whatever LOG_LEVEL says. Returns for
 * any other error.
 */
export function exitOnConfigError(err: unknown, processName: string): void {
  if (!(err instanceof ConfigError)) return;
  process.stderr.write(`${processName}: configuration error: ${err.message}\n`);
  process.exit(1);
}

/** The secrets development generates once and keeps in `<dataDir>/secrets.json` (db/local-state.ts). */
export interface DevSecrets { jwtSecret: string; systemJwtSecret: string; vaultKey: string; apiKeyPepper: string }

/**
 * Only `development` and `test` (and NODE_ENV unset or empty, which is development) are development
 * modes; any other value (`staging`, `prod`, `Production`) runs as production, so a typo can never
 * give a deployment generated secrets or private webhook URLs.
 */
export function configMode(nodeEnv: string | undefined): Config['env'] {
  if (nodeEnv === undefined || nodeEnv === '' || nodeEnv === 'development') return 'development';
  return nodeEnv === 'test' ? 'test' : 'production';
}

/** The vault's key ring (VAULT_KEYS, or VAULT_KEY as its one key), unchecked; both set is refused. */
function vaultKeyRing(env: NodeJS.ProcessEnv, devKey: string | undefined): string | undefined {
  try {
    return vaultKeysText(env.VAULT_KEYS || undefined, env.VAULT_KEY || undefined) ?? vaultKeysText(undefined, devKey);
  } catch (err) {
    throw err instanceof VaultKeyError ? new ConfigError(err.message) : err;
  }
}

/** Throws a ConfigError naming the variable (and key id) when the ring is malformed. */
function checkVaultKeyRing(env: NodeJS.ProcessEnv, ring: string | undefined): void {
  if (!ring) throw new ConfigError('VAULT_KEYS (or VAULT_KEY) is not set');
  try {
    parseVaultKeys(ring);
  } catch (err) {
    if (!(err instanceof VaultKeyError)) throw err;
    throw new ConfigError(env.VAULT_KEYS ? err.message : 'VAULT_KEY must be 32 bytes, base64');
  }
}

function extraApiHosts(text: string | undefined, production: boolean): ExtraApiHost[] {
  const parsed = parseExtraApiHosts(text, production);
  if ('error' in parsed) throw new ConfigError(`PROVIDER_API_BASE_EXTRA_HOSTS ${parsed.error}`);
  return parsed.hosts;
}

/** An IPv4 or IPv6 address, as a listening socket takes it (the Temporal SDK's exporter takes no host names). */
function isIpAddress(host: string): boolean {
  if (/^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/.test(host)) return true;
  if (!host.includes(':') || !/^[\da-fA-F:.]+$/.test(host)) return false;
  try {
    return new URL(`http://[${host}]/`).hostname !== '';
  } catch {
    return false;
  }
}

function count(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new ConfigError(`${name} must be a whole number ≥ 0: ${value}`);
  return n;
}

/** A limit where 0 would mean "none at all", not "off": refused rather than read either way. */
function atLeastOne(name: string, value: string | undefined, fallback: number): number {
  const n = count(name, value, fallback);
  if (n < 1) throw new ConfigError(`${name} must be a whole number ≥ 1: ${value}`);
  return n;
}

function bool(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  return ['1', 'true', 'yes', 'on'].includes(value.toLowerCase());
}

/** A duration such as `7d`, `24h`, `90s` or `1500ms`, in milliseconds. */
function duration(name: string, value: string): number {
  const parsed = ms(value as ms.StringValue);
  if (typeof parsed !== 'number' || !Number.isFinite(parsed) || parsed <= 0) throw new ConfigError(`${name} is not a duration: ${value}`);
  return parsed;
}

/**
 * The configuration `env` describes. `local.dataDir` is where development state lives; `local.devSecrets`
 * stand in for unset secrets, in development modes only (production must be configured explicitly).
 */
export function parseConfig(env: NodeJS.ProcessEnv, local: { dataDir: string; devSecrets?: DevSecrets }): Config {
  const mode = configMode(env.NODE_ENV);
  const { dataDir } = local;
  const production = mode === 'production';
  const { jwt, vaultKeys, apiKeyPepper } = configSecrets(env, production, production ? undefined : local.devSecrets);
  const { port, publicUrl, workerMetricsPort, workerMetricsHost } = listeners(env);

  return {
    env: mode,
    port,
    publicUrl,
    dataDir,
    databaseUrl: env.DATABASE_URL || undefined,
    temporal: {
      address: env.TEMPORAL_ADDRESS || undefined,
      namespace: env.TEMPORAL_NAMESPACE || 'default',
      apiKey: env.TEMPORAL_API_KEY || undefined,
      tls: env.TEMPORAL_TLS_CERT || env.TEMPORAL_API_KEY || bool(env.TEMPORAL_TLS, false)
        ? {
            certPath: env.TEMPORAL_TLS_CERT || undefined,
            keyPath: env.TEMPORAL_TLS_KEY || undefined,
            caPath: env.TEMPORAL_TLS_CA || undefined,
            serverName: env.TEMPORAL_TLS_SERVER_NAME || undefined,
          }
        : undefined,
      uiUrl: (env.TEMPORAL_UI_URL || 'http://localhost:8233').replace(/\/$/, ''),
    },
    jwt,
    vaultKeys,
    apiKeyPepper,
    simulatorUrl: env.SIMULATOR_URL || undefined,
    providerApiBaseExtraHosts: extraApiHosts(env.PROVIDER_API_BASE_EXTRA_HOSTS, production),
    webhookAllowPrivate: bool(env.WEBHOOK_ALLOW_PRIVATE, !production),
    webhookRetrySchedule: env.WEBHOOK_RETRY_SCHEDULE || undefined,
    webhookAccountConcurrency: count('WEBHOOK_ACCOUNT_CONCURRENCY', env.WEBHOOK_ACCOUNT_CONCURRENCY, 10),
    authExpiryMs: duration('AUTH_EXPIRY', env.AUTH_EXPIRY || '7d'),
    paymentExpiryMs: duration('PAYMENT_EXPIRY', env.PAYMENT_EXPIRY || '24h'),
    authenticationTimeoutMs: duration('AUTHENTICATION_TIMEOUT', env.AUTHENTICATION_TIMEOUT || '1h'),
    providerTimeoutMs: Number(env.PROVIDER_TIMEOUT_MS || 10_000),
    workerMetricsPort,
    workerMetricsHost,
    metricsToken: env.METRICS_TOKEN || undefined,
    workerMaxCachedWorkflows: Number(env.WORKER_MAX_CACHED_WORKFLOWS || 100),
    workerWorkflowHeapMb: count('WORKER_WORKFLOW_HEAP_MB', env.WORKER_WORKFLOW_HEAP_MB, 1024),
    workerHeapMb: count('WORKER_HEAP_MB', env.WORKER_HEAP_MB, 256),
    stuckPaymentThresholdMs: duration('STUCK_PAYMENT_THRESHOLD', env.STUCK_PAYMENT_THRESHOLD || '10m'),
    rateLimit: { rps: count('RATE_LIMIT_RPS', env.RATE_LIMIT_RPS, 50), burst: count('RATE_LIMIT_BURST', env.RATE_LIMIT_BURST, 100) },
    providerWebhookLimit: {
      failuresPerMinute: count('PROVIDER_WEBHOOK_FAILURES_PER_MINUTE', env.PROVIDER_WEBHOOK_FAILURES_PER_MINUTE, 30),
      rps: count('PROVIDER_WEBHOOK_RPS', env.PROVIDER_WEBHOOK_RPS, 100),
    },
    authenticationReturnLimit: {
      perIpPerMinute: count('AUTHENTICATION_RETURN_IP_PER_MINUTE', env.AUTHENTICATION_RETURN_IP_PER_MINUTE, 60),
      perPaymentPerMinute: count('AUTHENTICATION_RETURN_PAYMENT_PER_MINUTE', env.AUTHENTICATION_RETURN_PAYMENT_PER_MINUTE, 10),
    },
    apiKeysPerAccountMax: atLeastOne('API_KEYS_PER_ACCOUNT_MAX', env.API_KEYS_PER_ACCOUNT_MAX, 50),
    checkoutDeclineLimits: {
      perCardPerHour: count('CHECKOUT_DECLINES_PER_CARD_PER_HOUR', env.CHECKOUT_DECLINES_PER_CARD_PER_HOUR, 5),
      perIpPer10Min: count('CHECKOUT_DECLINES_PER_IP_PER_10_MIN', env.CHECKOUT_DECLINES_PER_IP_PER_10_MIN, 20),
      perKeyPer10Min: count('CHECKOUT_DECLINES_PER_KEY_PER_10_MIN', env.CHECKOUT_DECLINES_PER_KEY_PER_10_MIN, 200),
    },
  };
}

/**
 * The secrets a process signs, seals and hashes with: the environment's, else (development only) the
 * generated ones. Production refuses any missing or weak (lib/production-secrets.ts); a malformed key
 * ring is refused everywhere.
 */
function configSecrets(env: NodeJS.ProcessEnv, production: boolean, dev: DevSecrets | undefined): Pick<Config, 'jwt' | 'vaultKeys' | 'apiKeyPepper'> {
  const pem = (value: string | undefined) => value?.replace(/\\n/g, '\n') || undefined;
  const jwt = {
    secret: env.JWT_SECRET || (env.JWT_PUBLIC_KEY || env.JWKS_URL ? undefined : dev?.jwtSecret),
    publicKey: pem(env.JWT_PUBLIC_KEY),
    jwksUrl: env.JWKS_URL || undefined,
    issuer: env.JWT_ISSUER || undefined,
    audience: env.JWT_AUDIENCE || undefined,
    systemSecret: env.SYSTEM_JWT_SECRET || (env.SYSTEM_JWT_PUBLIC_KEY ? undefined : dev?.systemJwtSecret),
    systemPublicKey: pem(env.SYSTEM_JWT_PUBLIC_KEY),
  };
  const vaultKeys = vaultKeyRing(env, dev?.vaultKey);
  const apiKeyPepper = env.API_KEY_PEPPER || dev?.apiKeyPepper;
  if (production) {
    const problems = productionSecretProblems(env, { jwt, vaultKeys, apiKeyPepper });
    // Says so when a NODE_ENV other than `production` is why the rules apply.
    const why = env.NODE_ENV === 'production' ? '' : ` (NODE_ENV=${env.NODE_ENV} runs as production)`;
    if (problems.length) throw new ConfigError(`${problems.join('; ')}${why}`);
  }
  checkVaultKeyRing(env, vaultKeys);
  return { jwt, vaultKeys: vaultKeys!, apiKeyPepper: apiKeyPepper! };
}

/** Where the API and the worker's metrics listen, and the address the world reaches the API at. */
function listeners(env: NodeJS.ProcessEnv): Pick<Config, 'port' | 'publicUrl' | 'workerMetricsPort' | 'workerMetricsHost'> {
  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`PORT is not a port: ${env.PORT}`);

  const workerMetricsPort = Number(env.WORKER_METRICS_PORT || 9464);
  if (!Number.isInteger(workerMetricsPort) || workerMetricsPort < 0 || workerMetricsPort > 65534) {
    throw new ConfigError(`WORKER_METRICS_PORT is not a port: ${env.WORKER_METRICS_PORT}`);
  }

  const workerMetricsHost = env.WORKER_METRICS_HOST || '127.0.0.1';
  if (!isIpAddress(workerMetricsHost)) {
    throw new ConfigError(`WORKER_METRICS_HOST must be an IP address (0.0.0.0 for every interface): ${workerMetricsHost}`);
  }

  const publicUrl = (env.PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/?#]+(\/[^?#]*)?$/.test(publicUrl)) throw new ConfigError('PUBLIC_URL must be an absolute http:// or https:// URL');
  return { port, publicUrl, workerMetricsPort, workerMetricsHost };
}

/** The Node flags a worker process is started with: its main thread's heap limit (WORKER_HEAP_MB). */
export function workerNodeArgs(config: Pick<Config, 'workerHeapMb'>): string[] {
  return config.workerHeapMb > 0 ? [`--max-old-space-size=${config.workerHeapMb}`] : [];
}
