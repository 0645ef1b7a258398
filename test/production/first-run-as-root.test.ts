import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres, EmbeddedPg } from '../../db/embedded';
import { ROOT_DIR } from '../../db/local-state';
import { freePort } from './support';

const isRoot = process.getuid?.() === 0;

async function query(url: string, sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * The most common first run on a new server: root, with the clone in a directory no other user may
 * enter (/root is mode 700). Postgres runs as the postgres OS user, which must reach its binaries and
 * its data without that directory being opened up.
 */
describe.runIf(isRoot)('the embedded Postgres started by root from a closed directory', () => {
  let closed: string;
  let home: string;
  let running: EmbeddedPg | undefined;

  beforeAll(() => {
    closed = mkdtempSync(join(tmpdir(), 'sb-first-run-'));
    chmodSync(closed, 0o700);
    // Stands in for /var/lib/switchboard: root's, open to read.
    home = mkdtempSync(join(tmpdir(), 'sb-first-run-home-'));
    chmodSync(home, 0o755);
  });
  afterAll(async () => {
    await running?.stop();
    for (const dir of [closed, home]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('starts, answers queries, keeps the directory closed, and keeps the data across a restart', async () => {
    const dataDir = join(closed, 'clone', '.data');
    // What a failed first run of the old code left behind: an empty data directory.
    mkdirSync(join(dataDir, 'pg'), { recursive: true });
    const port = await freePort();

    running = await startEmbeddedPostgres(dataDir, port, 'switchboard', { rootHome: home });
    const first = running;
    expect((await query(first.url, 'SELECT current_user AS who')).rows[0].who).toBe('postgres');
    await query(first.url, "CREATE TABLE first_run (note text); INSERT INTO first_run VALUES ('kept')");
    await first.stop();
    running = undefined;

    running = await startEmbeddedPostgres(dataDir, port, 'switchboard', { rootHome: home });
    expect(running.databaseDir).toBe(first.databaseDir);
    expect((await query(running.url, 'SELECT note FROM first_run')).rows).toEqual([{ note: 'kept' }]);

    expect(running.databaseDir.startsWith(join(home, 'pg'))).toBe(true);
    expect(readlinkSync(join(dataDir, 'pg'))).toBe(running.databaseDir);
    expect(statSync(closed).mode & 0o777).toBe(0o700);
    await running.stop();
    running = undefined;
  }, 120_000);
});

interface Outcome { code: number | null; stdout: string; stderr: string }

/** `npm start`'s script, with no DATABASE_URL (so the embedded Postgres) and a Temporal it never reaches. */
async function start(env: NodeJS.ProcessEnv): Promise<Outcome> {
  const base = { ...process.env };
  delete base.DATABASE_URL;
  delete base.EMBEDDED_PG_PORT;
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT_DIR, 'scripts', 'start.ts')], {
    cwd: ROOT_DIR,
    env: { ...base, NODE_ENV: 'development', TEMPORAL_ADDRESS: '127.0.0.1:1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
  proc.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
  const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
  return { code, stdout, stderr };
}

function expectOneLineWithoutStack({ code, stdout, stderr }: Outcome): string {
  expect(code, stdout + stderr).toBe(1);
  expect(stderr.trim().split('\n'), stderr).toHaveLength(1);
  expect(stdout + stderr).not.toMatch(/^\s+at /m);
  expect(stdout).not.toContain('Switchboard is running');
  return stderr.trim();
}

describe('npm start that cannot start', () => {
  let scratch: string;
  let blocker: Server | undefined;

  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'sb-start-failure-'));
    chmodSync(scratch, 0o755);
  });
  afterAll(async () => {
    await new Promise((resolve) => (blocker ? blocker.close(resolve) : resolve(undefined)));
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('says in one line that the embedded Postgres port is taken and how to choose another', async () => {
    const port = await freePort();
    blocker = createServer().listen(port); // every address, as another Postgres would
    await new Promise((resolve) => blocker!.once('listening', resolve));
    const line = expectOneLineWithoutStack(await start({ SB_DATA_DIR: join(scratch, 'data'), EMBEDDED_PG_PORT: String(port) }));
    expect(line).toContain(`port ${port} is already in use`);
    expect(line).toContain('set EMBEDDED_PG_PORT to a free port');
  }, 60_000);

  it('says in one line which data directory cannot be made and how to choose another', async () => {
    const file = join(scratch, 'a-file');
    writeFileSync(file, '');
    const line = expectOneLineWithoutStack(await start({ SB_DATA_DIR: join(file, 'data') }));
    expect(line).toContain(join(file, 'data'));
    expect(line).toContain('set SB_DATA_DIR to a directory it can write');
  }, 60_000);
});
