import type { Db } from '../db/knex';
import type { Config } from '../lib/config';

/** What every activity factory is built from (tests hand in real ones; nothing is module-mocked). */
export interface ActivityDeps {
  db: Db;
  config: Config;
}
