/**
 * Test files running at the same time each belong to a vitest worker pool, and each pool has a Temporal
 * namespace and a Postgres database of its own (test/setup/global.ts makes them): a file never picks up
 * another's workflows, nor its worker's event dispatcher another's events.
 */
export const TEST_POOLS = 8;

/** This process's pool, 1 to TEST_POOLS. */
export function poolNumber(): number {
  return Number(process.env.VITEST_POOL_ID ?? 1) % TEST_POOLS || TEST_POOLS;
}

/** This pool's database on the suite's Postgres server, whose migrated template is at `suiteDatabaseUrl`. */
export function poolDatabaseUrl(suiteDatabaseUrl: string): string {
  const url = new URL(suiteDatabaseUrl);
  url.pathname = `${url.pathname}_${poolNumber()}`;
  return url.toString();
}
