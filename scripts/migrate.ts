import { loadConfig } from '../db/local-state';
import { createDb, migrate } from '../db/knex';
import { migrationSource } from '../db/migrations';

/** `node dist/scripts/migrate.js` (the `migrate` command of the image): applies every pending migration, then exits. */
async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required');
  const db = createDb(config.databaseUrl, { max: 1 });
  try {
    await migrate(db);
    const [, pending] = await db.migrate.list({ tableName: 'knex_migrations', schemaName: 'public', migrationSource });
    console.log(`migrations applied (${pending.length} pending)`);
  } finally {
    await db.destroy();
  }
}

main().catch((err) => {
  console.error('migrations failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});
