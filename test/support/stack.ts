import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import jwt from 'jsonwebtoken';
import supertest from 'supertest';
import { inject } from 'vitest';
import { NativeConnection, Worker } from '@temporalio/worker';
import { Config } from '../../lib/config';
import { loadConfig } from '../../db/local-state';
import { createDb, Db } from '../../db/knex';
import { createApp } from '../../api/app';
import { createApiDeps, createHttpServer } from '../../api/server';
import type { ApiDeps } from '../../api/deps';
import { createWorkers, type WorkerSetup } from '../../worker/worker';
import { poolDatabaseUrl, poolNumber } from '../setup/pools';

export const TEST_JWT_SECRET = 'test-jwt-secret-that-is-long-enough-for-hs256';
/** The system actor's own key: system tokens are accepted from it only (never from JWT_SECRET). */
export const TEST_SYSTEM_JWT_SECRET = 'test-system-jwt-secret-of-the-system-actor-only';

/** This test file's Temporal namespace (one per vitest worker pool, registered by the global setup). */
export function testNamespace(): string {
  return `sb-test-${poolNumber()}`;
}

export interface TestStack {
  config: Config;
  db: Db;
  deps: ApiDeps;
  server: Server;
  baseUrl: string;
  http: ReturnType<typeof supertest>;
  close(): Promise<void>;
}

/** The environment that points at this file's Postgres database and Temporal namespace (its pool's: test/setup/pools.ts). */
export function suiteEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    NODE_ENV: 'test',
    SB_DATA_DIR: join(__dirname, '..', '.tmp', 'data'),
    JWT_SECRET: TEST_JWT_SECRET,
    SYSTEM_JWT_SECRET: TEST_SYSTEM_JWT_SECRET,
    DATABASE_URL: poolDatabaseUrl(inject('databaseUrl')),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: testNamespace(),
  };
}

/** The real API on an ephemeral port, wired to the suite's Postgres database and Temporal server. */
export async function startStack(env: Record<string, string> = {}): Promise<TestStack> {
  const config = loadConfig({ ...suiteEnv(), WEBHOOK_ALLOW_PRIVATE: 'true', ...env });
  const db = createDb(config.databaseUrl!, { max: 10 });
  const deps = createApiDeps(db, config, config.temporal.address!);
  const server = createHttpServer(createApp(deps));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The world reaches this API at its ephemeral port (processors' notifications, customers' returns).
  if (!env.PUBLIC_URL) config.publicUrl = baseUrl;
  return {
    config,
    db,
    deps,
    server,
    baseUrl,
    http: supertest(baseUrl),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      const client = await deps.temporal().catch(() => undefined);
      await client?.connection.close();
      await deps.lease.close();
      await db.destroy();
    },
  };
}

export interface RunningWorker { workers: Worker[]; stop(): Promise<void> }

/** Real Temporal workers on the suite's server, running the pre-built workflow bundle. */
export async function startWorker(stack: TestStack, tuning?: WorkerSetup['tuning']): Promise<RunningWorker> {
  const connection = await NativeConnection.connect({ address: stack.config.temporal.address! });
  const worker = await createWorkers({
    db: stack.db,
    config: stack.config,
    connection,
    namespace: stack.config.temporal.namespace,
    workflowBundlePath: inject('workflowBundlePath'),
    tuning,
  });
  const running = worker.run();
  return {
    workers: worker.workers,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/**
 * The event dispatcher's claim (db/events.ts `claimDueEvents`). A test worker's dispatcher polls with it
 * once a second whether or not anything is due: a test counting a step's statements leaves it out.
 */
export const DISPATCHER_CLAIM = /^update "\w+"."events" set "fan_out_due" = .* for update skip locked\) returning "id"(, "\w+")*$/s;

let counter = 0;
/** A unique suffix for ids made up by a test (users, workspaces). */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}_${process.pid}${Date.now().toString(36)}${counter}`;
}

/** A user's token, signed with JWT_SECRET. */
export function signToken(claims: { sub: string; workspace_id: string; actor_type?: 'user' }, options: jwt.SignOptions = {}): string {
  return jwt.sign(claims, TEST_JWT_SECRET, { algorithm: 'HS256', expiresIn: 3600, ...options });
}

/**
 * A system actor's token (`actor_type: "system"`), signed with SYSTEM_JWT_SECRET: the only key the API takes
 * one from. Without workspace_id it is the platform's (the only one that may register payment providers).
 */
export function signSystemToken(claims: { sub: string; workspace_id?: string }, options: jwt.SignOptions = {}): string {
  return jwt.sign({ ...claims, actor_type: 'system' }, TEST_SYSTEM_JWT_SECRET, { algorithm: 'HS256', expiresIn: 3600, ...options });
}

export interface Merchant {
  userId: string;
  workspaceId: string;
  token: string;
  account: any;
  secretKey: string;
  publishableKey: string;
}

/** A new user with a new account (production unless sandbox is given), through the public API. */
export async function createMerchant(stack: TestStack, opts: { sandboxOf?: Merchant } = {}): Promise<Merchant> {
  const userId = opts.sandboxOf?.userId ?? unique('usr');
  const workspaceId = opts.sandboxOf?.workspaceId ?? unique('ws');
  const token = signToken({ sub: userId, workspace_id: workspaceId });
  const query = opts.sandboxOf ? `?sandbox_mode=true&prod_account_id=${opts.sandboxOf.account.id}` : '';
  const res = await stack.http.post(`/v1/accounts${query}`).set('Authorization', `Bearer ${token}`)
    .send({ name: opts.sandboxOf ? 'Sandbox' : 'Shop', country: 'US', currency: 'USD', timezone: 'America/New_York' });
  if (res.status !== 201) throw new Error(`creating a merchant failed: ${res.status} ${JSON.stringify(res.body)}`);
  const keys = res.body.data.api_keys as { type: string; key: string }[];
  return {
    userId,
    workspaceId,
    token,
    account: res.body.data,
    secretKey: keys.find((k) => k.type === 'SECRET')!.key,
    publishableKey: keys.find((k) => k.type === 'PUBLISHABLE')!.key,
  };
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** The environment of a child process (API or worker) wired to the same database, namespace and secrets as `stack`. */
export function stackProcessEnv(stack: TestStack, name: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    SB_PROCESS: name,
    SB_DATA_DIR: stack.config.dataDir,
    DATABASE_URL: stack.config.databaseUrl,
    TEMPORAL_ADDRESS: stack.config.temporal.address,
    TEMPORAL_NAMESPACE: stack.config.temporal.namespace,
    JWT_SECRET: TEST_JWT_SECRET,
    SYSTEM_JWT_SECRET: TEST_SYSTEM_JWT_SECRET,
    VAULT_KEYS: stack.config.vaultKeys,
    VAULT_KEY: undefined,
    API_KEY_PEPPER: stack.config.apiKeyPepper,
  };
}

/** A sandbox account (with the production account it belongs to), the environment where connectors may use local doubles. */
export async function sandboxMerchant(stack: TestStack): Promise<Merchant> {
  return createMerchant(stack, { sandboxOf: await createMerchant(stack) });
}
