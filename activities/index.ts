import type { Db } from '../db/knex';
import type { Config } from '../lib/config';
import { apiKeyActivities } from './api-keys';
import { webhookActivities } from './webhooks';

export interface ActivityDeps {
  db: Db;
  config: Config;
}

/** Every activity, built from its dependencies (tests hand in real ones; nothing is module-mocked). */
export function createActivities(deps: ActivityDeps) {
  return {
    ...apiKeyActivities(deps.db),
    ...webhookActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
