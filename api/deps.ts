import type { Client } from '@temporalio/client';
import type { Config } from '../lib/config';
import type { Db } from '../db/knex';
import type { ProcessLease } from '../db/process-lease';
import type { Authenticator } from './auth/authenticate';
import type { Vault } from '../lib/vault';
import type { LRUCache } from 'lru-cache';
import type { AccountRow } from './auth/access';
import type { DeclineLimits } from './middleware/decline-limits';

/** Everything the API needs, handed in by main.ts or by a test. */
export interface ApiDeps {
  db: Db;
  config: Config;
  auth: Authenticator;
  /** Encryption at rest (cards, CVCs, provider credentials). */
  vault: Vault;
  /** Account rows, cached for a few seconds (see Access). */
  accountCache: LRUCache<string, AccountRow>;
  /** This process's lease, which its Idempotency-Key claims name (db/process-lease.ts). */
  lease: ProcessLease;
  /** The Temporal client, connected on first use; rejects when Temporal is unreachable. */
  temporal(): Promise<Client>;
  /**
   * The decline budgets of client-side confirmations, shared through Postgres by every API process
   * (createDeclineLimits).
   */
  declineLimits: DeclineLimits;
}
