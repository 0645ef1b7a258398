import type { Client } from '@temporalio/client';
import type { Config } from '../lib/config';
import { connectClient } from '../workflows/client';
import type { Db } from '../db/knex';
import { createAuthenticator } from './auth/authenticate';
import type { ApiDeps } from './deps';
import { Vault } from '../lib/vault';
import { LRUCache } from 'lru-cache';

/** API dependencies from config: the Temporal client connects on first use and reconnects after a failure. */
export function createApiDeps(db: Db, config: Config, temporalAddress: string): ApiDeps {
  let client: Promise<Client> | undefined;
  return {
    db,
    config,
    auth: createAuthenticator(db, config),
    vault: new Vault(config.vaultKey),
    accountCache: new LRUCache({ max: 10_000, ttl: 5_000 }),
    temporal() {
      client ??= connectClient(config, temporalAddress).catch((err) => {
        client = undefined;
        throw err;
      });
      return client;
    },
  };
}
