import type { Db } from '../db/knex';
import type { Config } from '../lib/config';
import type { WebhookActivityContext } from './webhooks/context';

/** What every activity factory is built from (tests hand in real ones; nothing is module-mocked). */
export interface ActivityDeps {
  db: Db;
  config: Config;
  /** The webhook context the process's event dispatcher shares (its per-account slots); built when absent. */
  webhooks?: WebhookActivityContext;
}
