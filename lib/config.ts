import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import ms from 'ms';
import { randomSecret } from './secrets';

/** The repository root, found from this file whether it runs from source or from dist/. */
export const ROOT_DIR = (() => {
  let dir = __dirname;
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
  return dir;
})();

export interface Config {
  env: 'development' | 'test' | 'production';
  port: number;
  dataDir: string;
  databaseUrl?: string;
  temporal: {
    address?: string;
    namespace: string;
    apiKey?: string;
    tls?: { certPath?: string; keyPath?: string; caPath?: string; serverName?: string };
    uiUrl: string;
  };
  jwt: { secret?: string; publicKey?: string; jwksUrl?: string; issuer?: string; audience?: string };
  vaultKey: string;
  apiKeyPepper: string;
  simulatorUrl?: string;
  webhookAllowPrivate: boolean;
  webhookRetrySchedule?: string;
  /** AUTH_EXPIRY and PAYMENT_EXPIRY, in milliseconds. */
  authExpiryMs: number;
  paymentExpiryMs: number;
  /** How long a provider call may take before its outcome is unknown (and reconciled, never cascaded). */
  providerTimeoutMs: number;
  /** Workflows a worker keeps in memory per task queue; evicted ones are replayed from history when needed. */
  workerMaxCachedWorkflows: number;
  /** STUCK_PAYMENT_THRESHOLD: a payment PROCESSING longer than this is notified as stuck. */
  stuckPaymentThresholdMs: number;
  /** Per-credential request rate on /v1: RATE_LIMIT_RPS sustained, RATE_LIMIT_BURST on top; rps 0 = off. */
  rateLimit: { rps: number; burst: number };
}

export class ConfigError extends Error {}

/**
 * Development secrets are generated once into .data/secrets.json so that restarts keep working keys,
 * sessions and encrypted data. Production never gets them: it must be configured explicitly.
 */
function devSecrets(dataDir: string): { jwtSecret: string; vaultKey: string; apiKeyPepper: string } {
  const file = join(dataDir, 'secrets.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8'));
  mkdirSync(dataDir, { recursive: true });
  const secrets = { jwtSecret: randomSecret(32), vaultKey: randomSecret(32), apiKeyPepper: randomSecret(32) };
  writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  return secrets;
}

function count(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new ConfigError(`${name} must be a whole number ≥ 0: ${value}`);
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

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const mode = (env.NODE_ENV === 'production' || env.NODE_ENV === 'test' ? env.NODE_ENV : 'development') as Config['env'];
  const dataDir = resolve(ROOT_DIR, env.SB_DATA_DIR ?? '.data');
  const production = mode === 'production';
  const dev = production ? undefined : devSecrets(dataDir);

  const jwt = {
    secret: env.JWT_SECRET || (env.JWT_PUBLIC_KEY || env.JWKS_URL ? undefined : dev?.jwtSecret),
    publicKey: env.JWT_PUBLIC_KEY?.replace(/\\n/g, '\n') || undefined,
    jwksUrl: env.JWKS_URL || undefined,
    issuer: env.JWT_ISSUER || undefined,
    audience: env.JWT_AUDIENCE || undefined,
  };
  const vaultKey = env.VAULT_KEY || dev?.vaultKey;
  const apiKeyPepper = env.API_KEY_PEPPER || dev?.apiKeyPepper;
  if (production) {
    const missing = [
      !jwt.secret && !jwt.publicKey && !jwt.jwksUrl && 'JWT_SECRET / JWT_PUBLIC_KEY / JWKS_URL',
      !vaultKey && 'VAULT_KEY',
      !apiKeyPepper && 'API_KEY_PEPPER',
    ].filter(Boolean);
    if (missing.length) throw new ConfigError(`NODE_ENV=production needs ${missing.join(', ')}`);
  }
  if (Buffer.from(vaultKey!, 'base64').length !== 32) throw new ConfigError('VAULT_KEY must be 32 bytes, base64');

  const port = Number(env.PORT ?? 3000);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`PORT is not a port: ${env.PORT}`);

  return {
    env: mode,
    port,
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
    vaultKey: vaultKey!,
    apiKeyPepper: apiKeyPepper!,
    simulatorUrl: env.SIMULATOR_URL || undefined,
    webhookAllowPrivate: bool(env.WEBHOOK_ALLOW_PRIVATE, !production),
    webhookRetrySchedule: env.WEBHOOK_RETRY_SCHEDULE || undefined,
    authExpiryMs: duration('AUTH_EXPIRY', env.AUTH_EXPIRY || '7d'),
    paymentExpiryMs: duration('PAYMENT_EXPIRY', env.PAYMENT_EXPIRY || '24h'),
    providerTimeoutMs: Number(env.PROVIDER_TIMEOUT_MS || 10_000),
    workerMaxCachedWorkflows: Number(env.WORKER_MAX_CACHED_WORKFLOWS || 100),
    stuckPaymentThresholdMs: duration('STUCK_PAYMENT_THRESHOLD', env.STUCK_PAYMENT_THRESHOLD || '10m'),
    rateLimit: { rps: count('RATE_LIMIT_RPS', env.RATE_LIMIT_RPS, 50), burst: count('RATE_LIMIT_BURST', env.RATE_LIMIT_BURST, 100) },
  };
}
