import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../lib/config';
import type { Db } from '../db/knex';
import { hashApiKey } from '../lib/secrets';
import { createAccount, ensureWorkspace, findAccount } from '../db/accounts';
import { findApiKeyByHash, insertApiKey } from '../db/api-keys';
import { ensureUser } from '../db/memberships';
import { ALL_PERMISSIONS, toPermissionMap } from '../api/auth/permissions';
import { createFee } from '../db/fees-and-rules';
import { createProviderConfig, hasActiveProviderConfig } from '../db/provider-configs';
import { createPaymentProvider, findPaymentProviderByIdentifier, listProviderMethods } from '../db/providers';
import { catalogueEntry, defaultMethodsOf } from '../lib/providers/catalogue';
import { Vault } from '../lib/vault';

export const DEMO_USER = 'usr_demo';
export const DEMO_WORKSPACE = 'ws_demo';

export interface Demo {
  accountId: string;
  sandboxAccountId: string;
  /** A sandbox secret key, kept in .data/demo.json (development only) so restarts can print it again. */
  secretKey: string;
}

/**
 * The demo workspace: a production account and its sandbox, with a sandbox secret key. Created once;
 * later starts reuse it (and mint a new key only if the saved one was deleted or rotated).
 */
export async function seedDemo(db: Db, config: Config): Promise<Demo> {
  const file = join(config.dataDir, 'demo.json');
  await ensureWorkspace(db, DEMO_WORKSPACE, 'Demo workspace');
  await ensureUser(db, DEMO_USER);
  const permissions = toPermissionMap(ALL_PERMISSIONS);

  let demo: Demo | undefined = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : undefined;
  if (demo && !(await findAccount(db, demo.sandboxAccountId))) demo = undefined;
  if (!demo) {
    const base = { userId: DEMO_USER, workspaceId: DEMO_WORKSPACE, country: 'US', currency: 'USD', timezone: 'UTC', managedKeyPermissions: permissions };
    const prod = await createAccount(db, config.apiKeyPepper, { ...base, name: 'Demo Store', environment: 'production' });
    const sandbox = await createAccount(db, config.apiKeyPepper, {
      ...base, name: 'Demo Store (sandbox)', environment: 'sandbox', prodAccountId: prod.account.id,
    });
    const secret = sandbox.keys.find((k) => k.row.type === 'SECRET')!;
    demo = { accountId: prod.account.id, sandboxAccountId: sandbox.account.id, secretKey: secret.plaintext };
  }
  const key = await findApiKeyByHash(db, hashApiKey(demo.secretKey, config.apiKeyPepper));
  if (!key || key.deleted || key.status !== 'ACTIVE') {
    const fresh = await insertApiKey(db, config.apiKeyPepper, {
      accountId: demo.sandboxAccountId, environment: 'sandbox', type: 'SECRET', name: 'Demo key', managed: false, permissions,
    });
    demo.secretKey = fresh.plaintext;
  }
  await seedDemoRouting(db, config, demo.sandboxAccountId);
  writeFileSync(file, JSON.stringify(demo, null, 2), { mode: 0o600 });
  return demo;
}

/**
 * A `sandbox` provider in the sandbox environment and a provider config (with fees) for the demo
 * sandbox account, so that a demo payment confirms against the simulator out of the box.
 */
async function seedDemoRouting(db: Db, config: Config, accountId: string): Promise<void> {
  const env = 'sandbox' as const;
  if (await hasActiveProviderConfig(db, env, accountId)) return;
  const sandbox = catalogueEntry('sandbox');
  const existing = await findPaymentProviderByIdentifier(db, env, sandbox.identifier);
  const providerId = existing?.id ?? (await createPaymentProvider(db, env, {
    name: sandbox.displayName, identifier: sandbox.identifier, isGlobal: true, config: {}, schemas: { credentials: sandbox.credentialsSchema },
    methods: defaultMethodsOf(sandbox),
  })).provider.id;
  const providerConfig = await createProviderConfig(db, new Vault(config.vaultKeys), env, {
    accountId, providerId, name: 'Demo sandbox processor', credentials: { api_key: 'demo_sandbox_key' }, merchantCapabilities: {},
  });
  for (const method of await listProviderMethods(db, env, providerId)) {
    await createFee(db, env, {
      configId: providerConfig.id, methodId: method.id, installmentCount: 1, volumeFee: 2.9, fixedFee: 30, fixedFeeCurrency: 'USD',
    });
  }
}
