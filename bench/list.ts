import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import { Pool } from 'undici';
import type { Knex } from 'knex';
import { envTable, type Environment } from '../db/environments';
import { cpuMs, driveFor, round } from './measure';

/**
 * The list scenario: `GET /v1/payments?status=…&limit=100` in an account with a million payments
 * (docs/performance-log.md#list-at-1000000-payments). Payments are written straight into the table in bulk
 * (no workflows: a list reads rows only), then eight connections walk the list status by status, each
 * following its pages' last ids (`starting_after`), so deep pages are measured as well as first ones.
 * Environment: BENCH_LIST_PAYMENTS (default 1,000,000), BENCH_LIST_SECONDS (per run, default 10),
 * BENCH_LIST_WALK=page to walk with page numbers instead (the offset pagination legacy clients use), or
 * =first to read only first pages (each of which also counts its matches), BENCH_LIST_CONNECTIONS (default 8).
 */
const LIST_PAYMENTS = Number(process.env.BENCH_LIST_PAYMENTS ?? 1_000_000);
const LIST_SECONDS = Number(process.env.BENCH_LIST_SECONDS ?? 10);
const WALK = (['page', 'first'] as const).find((w) => w === process.env.BENCH_LIST_WALK) ?? 'cursor';
const CONNECTIONS = Number(process.env.BENCH_LIST_CONNECTIONS ?? 8);
const LIMIT = 100;
/** Pages a connection follows before it starts over with the next status. */
const WALK_PAGES = 20;
/** Walked in turn: the big statuses and a rare one (a rare status's rows are spread over the whole year). */
const WALKED_STATUSES = ['SUCCEEDED', 'FAILED', 'CREATED', 'CANCELED'];
const SEED_BATCH = 100_000;

export interface ListScenarioInput {
  db: Knex;
  databaseUrl: string;
  api: string;
  /** The API's process: its CPU per page is reported beside the latencies. */
  apiPid: number;
  key: string;
  account: { id: string; workspace_id: string };
  log: (line: string) => void;
  runs: number;
}

export interface ListScenarioResult {
  payments: number;
  runs: Array<{ p50_ms: number; p99_ms: number; rps: number; first_page_p99_ms: number; first_page_share: number; api_cpu_us_per_page: number }>;
}

/** Cumulative shares of the statuses seeded, roughly a live account's. */
const STATUS_SPREAD: [status: string, upTo: number][] = [
  ['SUCCEEDED', 0.70], ['FAILED', 0.85], ['CREATED', 0.95], ['CANCELED', 0.97], ['REFUNDED', 0.985],
  ['PARTIALLY_REFUNDED', 0.99], ['AUTHORIZED', 0.995], ['PROCESSING', 1],
];

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** SQL for the 10 time characters of a ULID (lib/ids.ts) from a bigint of epoch milliseconds. */
function ulidTimeSql(ms: string): string {
  return Array.from({ length: 10 }, (_, k) => `substr('${CROCKFORD}', ((${ms} >> ${5 * (9 - k)}) & 31)::int + 1, 1)`).join(' || ');
}

/**
 * Writes `count` payments into the account, 100,000 per statement, created over the past year with ids
 * shaped like real ones (`pay_` + a ULID of their creation time), then vacuums and analyzes the table
 * so the planner and index-only scans see it as a settled production table would be.
 */
export async function seedPayments(
  db: Knex, opts: { env: Environment; accountId: string; workspaceId?: string; count: number; log: (line: string) => void },
): Promise<void> {
  const table = envTable(opts.env, 'payments');
  const status = `CASE ${STATUS_SPREAD.map(([s, upTo]) => `WHEN r < ${upTo} THEN '${s}'`).join(' ')} END`;
  const started = performance.now();
  for (let done = 0; done < opts.count; done += SEED_BATCH) {
    const n = Math.min(SEED_BATCH, opts.count - done);
    await db.raw(`
      INSERT INTO ${table} (id, account_id, amount, currency, status, amount_received, created_at, updated_at)
      SELECT 'pay_' || ${ulidTimeSql('ms')} || upper(substr(md5(random()::text || g::text), 1, 16)),
             ?, amount, currency, status, CASE WHEN status IN ('SUCCEEDED', 'REFUNDED', 'PARTIALLY_REFUNDED') THEN amount ELSE 0 END,
             ts, ts
      FROM (
        SELECT g, ts, (extract(epoch FROM ts) * 1000)::bigint AS ms, ${status} AS status,
               (100 + floor(random() * 99900))::bigint AS amount,
               (ARRAY['USD', 'EUR', 'GBP', 'BRL'])[1 + floor(random() * 4)::int] AS currency
        FROM (
          SELECT g, date_trunc('milliseconds', now() - random() * interval '365 days') AS ts, random() AS r
          FROM generate_series(1, ?) AS g
        ) raw
      ) s`, [opts.accountId, n]);
    opts.log(`bench: list: seeded ${done + n} payments`);
  }
  // VACUUM, not only ANALYZE: it sets the visibility map, as autovacuum would have on a table this old.
  await db.raw(`VACUUM (ANALYZE) ${table}`);
  opts.log(`bench: list: ${opts.count} payments seeded in ${round((performance.now() - started) / 1000)} s`);
}

/** Where one connection is in its walk: the status it walks, and its page in it (and the last id read). */
interface Walk { status: number; page: number; cursor?: string }

/** The next list request of a walk. */
function listPath(w: Walk): string {
  const query = `status=${WALKED_STATUSES[w.status % WALKED_STATUSES.length]}&limit=${LIMIT}`;
  if (WALK === 'page') return `/v1/payments?${query}&page=${w.page}`;
  return `/v1/payments?${query}${w.cursor ? `&starting_after=${w.cursor}` : ''}`;
}

const PAYMENT_ID = /"id":"(pay_[0-9A-Za-z]+)"/g;

/**
 * Follows the page just read, or starts over with the next status once it ends or WALK_PAGES were read.
 * The body is searched, not parsed: the load driver should spend as little CPU as it can beside the API.
 */
function advance(w: Walk, body: string): void {
  const ids = [...body.matchAll(PAYMENT_ID)];
  const more = WALK === 'page' ? ids.length === LIMIT : body.includes('"has_more":true');
  if (more && w.page < WALK_PAGES && WALK !== 'first') {
    w.page += 1;
    w.cursor = ids[ids.length - 1][1];
  } else {
    w.status += 1;
    w.page = 1;
    w.cursor = undefined;
  }
}

/** What a list walk measured: each request's latency (ns), and the first pages' on their own. */
export interface ListWalk { operations: number; elapsedMs: number; all: RecordableHistogram; firstPages: RecordableHistogram }

/**
 * `connections` walks side by side for `ms`, each on its own keep-alive connection and its own status to
 * start with; `sent` sees each request's path. The walk's state is the loop's own: autocannon, which drove
 * this before, starts a request's context afresh after each pass through its request list, so every
 * request it sent was a walk's first page (docs/performance-log.md#list-at-1000000-payments).
 */
export async function walkList(api: string, key: string, ms: number, connections = CONNECTIONS, sent?: (path: string) => void): Promise<ListWalk> {
  const pool = new Pool(api, { connections, pipelining: 1 });
  const headers = { authorization: `Bearer ${key}` };
  const all = createHistogram();
  const firstPages = createHistogram();
  try {
    const { operations, elapsedMs } = await driveFor(ms, connections, (loop) => {
      const walk: Walk = { status: loop, page: 1 };
      return async () => {
        const path = listPath(walk);
        sent?.(path);
        const t0 = process.hrtime.bigint();
        const { statusCode, body } = await pool.request({ method: 'GET', path, headers });
        const text = await body.text();
        const took = process.hrtime.bigint() - t0;
        if (statusCode !== 200) throw new Error(`list: ${statusCode} ${text.slice(0, 200)}`);
        all.record(took);
        if (walk.page === 1) firstPages.record(took);
        advance(walk, text);
      };
    });
    return { operations, elapsedMs, all, firstPages };
  } finally {
    await pool.close();
  }
}

async function measureList(api: string, apiPid: number, key: string, seconds: number) {
  const cpuBefore = cpuMs(apiPid);
  const { operations, elapsedMs, all, firstPages } = await walkList(api, key, seconds * 1000);
  const ms = (h: RecordableHistogram, p: number) => round(h.percentile(p) / 1e6);
  return {
    p50_ms: ms(all, 50), p99_ms: ms(all, 99), rps: round(operations / (elapsedMs / 1000)),
    // A walk's first page also counts its matches (up to COUNTED_UP_TO, db/page.ts); the others seek by cursor.
    first_page_p99_ms: ms(firstPages, 99), first_page_share: round(firstPages.count / all.count),
    // What the p99 mostly is: eight connections queue on the API's one event loop, each page this long.
    api_cpu_us_per_page: round(((cpuMs(apiPid) - cpuBefore) * 1000) / operations),
  };
}

/** Seeds the payments into `account` (production), warms up for a few seconds, then measures `runs` times. */
export async function runListScenario(input: ListScenarioInput): Promise<ListScenarioResult> {
  await seedPayments(input.db, {
    env: 'production', accountId: input.account.id, workspaceId: input.account.workspace_id, count: LIST_PAYMENTS, log: input.log,
  });
  await measureList(input.api, input.apiPid, input.key, Math.min(3, LIST_SECONDS));
  const runs: ListScenarioResult['runs'] = [];
  for (let i = 0; i < input.runs; i++) {
    const run = await measureList(input.api, input.apiPid, input.key, LIST_SECONDS);
    input.log(`bench: list run ${i + 1}: p50 ${run.p50_ms} ms, p99 ${run.p99_ms} ms, ${run.rps} req/s, first pages ${run.first_page_share} of them (p99 ${run.first_page_p99_ms} ms), API ${run.api_cpu_us_per_page} µs CPU per page (${WALK} walk)`);
    runs.push(run);
  }
  return { payments: LIST_PAYMENTS, runs };
}
