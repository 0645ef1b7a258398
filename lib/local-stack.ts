/**
 * Where `npm start` puts the services it runs itself when nothing is configured: an embedded Postgres
 * and a local Temporal dev server. Tools that talk to a running `npm start` (the ops CLI) fall back to
 * the same places.
 */
export const LOCAL_TEMPORAL_PORT = 7233;
export const LOCAL_TEMPORAL_ADDRESS = `localhost:${LOCAL_TEMPORAL_PORT}`;
export const EMBEDDED_PG = { port: 54329, user: 'postgres', password: 'postgres', database: 'switchboard' } as const;
/**
 * Run as root, the embedded Postgres runs as the `postgres` OS user from a copy of its binaries here,
 * with its data here too when that user cannot reach the data dir (db/embedded.ts).
 */
export const EMBEDDED_PG_ROOT_HOME = '/var/lib/switchboard';

/** EMBEDDED_PG_PORT, else 54329. */
export function embeddedPgPort(env: NodeJS.ProcessEnv = process.env): number {
  return Number(env.EMBEDDED_PG_PORT || EMBEDDED_PG.port);
}

export function embeddedDatabaseUrl(port: number = EMBEDDED_PG.port, database: string = EMBEDDED_PG.database): string {
  return `postgres://${EMBEDDED_PG.user}:${EMBEDDED_PG.password}@127.0.0.1:${port}/${database}`;
}

/** DATABASE_URL and TEMPORAL_ADDRESS as configured, else those of a running `npm start`. */
export function localStackTargets(configured: { databaseUrl?: string; temporalAddress?: string }, env: NodeJS.ProcessEnv = process.env) {
  return {
    databaseUrl: configured.databaseUrl ?? embeddedDatabaseUrl(embeddedPgPort(env)),
    temporalAddress: configured.temporalAddress ?? LOCAL_TEMPORAL_ADDRESS,
  };
}
