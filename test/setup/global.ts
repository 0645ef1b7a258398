import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowBundleOptions } from '../../worker/bundle-options';
import { createDb, migrate } from '../../db/knex';
import { startEmbeddedPostgres } from '../../db/embedded';
import { startLocalTemporal } from '../../scripts/local-temporal';
import { ensureTemporalCli } from '../../scripts/temporal-cli';
import { TEST_POOLS } from './pools';

const TMP = join(__dirname, '..', '.tmp');

/**
 * The whole suite runs against a real Postgres (a fresh database per run, on DATABASE_URL's server,
 * or an embedded one when none is configured) and a real, ephemeral Temporal dev server, run from the
 * Temporal CLI that `npm start` would use (installed into the data dir on a first run; see
 * scripts/temporal-cli.ts). Its path goes into TEMPORAL_CLI_PATH, which the test files inherit.
 */
export default async function setup(project: { provide<K extends keyof ProvidedContext>(key: K, value: ProvidedContext[K]): void }) {
  mkdirSync(TMP, { recursive: true });
  const stops: (() => Promise<unknown>)[] = [];

  const [databaseUrl, temporal, bundlePath] = await Promise.all([
    (async () => {
      let serverUrl = process.env.DATABASE_URL;
      if (!serverUrl) {
        const pg = await startEmbeddedPostgres(join(TMP, 'embedded'), Number(process.env.SB_TEST_PG_PORT ?? 54330), 'postgres');
        stops.push(pg.stop);
        serverUrl = pg.url;
      }
      const name = `switchboard_test_${Date.now()}_${process.pid}`;
      const admin = createDb(serverUrl, { max: 1 });
      await admin.raw(`CREATE DATABASE "${name}"`);
      const url = new URL(serverUrl);
      url.pathname = `/${name}`;
      const db = createDb(url.toString(), { max: 2 });
      await migrate(db);
      await db.destroy();
      // One database per vitest worker pool as well, copies of the migrated one: a worker's event
      // dispatcher takes every due event of its database, and must see only its own files' events.
      for (let pool = 1; pool <= TEST_POOLS; pool++) await admin.raw(`CREATE DATABASE ?? TEMPLATE ??`, [`${name}_${pool}`, name]);
      stops.push(async () => {
        for (let pool = 1; pool <= TEST_POOLS; pool++) await admin.raw(`DROP DATABASE IF EXISTS ?? WITH (FORCE)`, [`${name}_${pool}`]);
        await admin.raw(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        await admin.destroy();
      });
      return url.toString();
    })(),
    // One namespace per vitest worker pool: test files running at the same time never pick up each
    // other's workflows, whose activities would run against another file's simulator and settings.
    (async () => {
      const executable = await ensureTemporalCli('temporal', { log: (line) => process.stdout.write(`${line}\n`) });
      if (executable.type === 'existing-path') process.env.TEMPORAL_CLI_PATH = executable.path;
      return startLocalTemporal({ executable, extraNamespaces: Array.from({ length: TEST_POOLS }, (_, i) => `sb-test-${i + 1}`) });
    })(),
    (async () => {
      const { code } = await bundleWorkflowCode(workflowBundleOptions(join(__dirname, '..', '..', 'workflows', 'index.ts')));
      const path = join(TMP, `workflow-bundle-${process.pid}.js`);
      writeFileSync(path, code);
      stops.push(async () => rmSync(path, { force: true }));
      return path;
    })(),
  ]);
  stops.push(temporal.stop);

  project.provide('databaseUrl', databaseUrl);
  project.provide('temporalAddress', temporal.address);
  project.provide('workflowBundlePath', bundlePath);

  return async () => {
    for (const stop of stops.reverse()) await stop().catch(() => {});
  };
}

interface ProvidedContext {
    databaseUrl: string;
    temporalAddress: string;
    workflowBundlePath: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    temporalAddress: string;
    workflowBundlePath: string;
  }
}
