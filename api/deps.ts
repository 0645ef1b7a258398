import type { Client } from '@temporalio/client';
import type { Config } from '../lib/config';
import type { Db } from '../db/knex';
import type { Authenticator } from './auth/authenticate';

/** Everything the API needs, handed in by main.ts or by a test. */
export interface ApiDeps {
  db: Db;
  config: Config;
  auth: Authenticator;
  /** The Temporal client, connected on first use; rejects when Temporal is unreachable. */
  temporal(): Promise<Client>;
}
