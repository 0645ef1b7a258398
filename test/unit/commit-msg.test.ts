import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// The commit-msg hook the repository installs (package.json "prepare"): subjects of at most 72 characters, and a body.
const HOOK = join(__dirname, '..', '..', '.githooks', 'commit-msg');
const dir = mkdtempSync(join(tmpdir(), 'commit-msg-'));

function check(message: string): { ok: boolean; stderr: string } {
  const file = join(dir, 'COMMIT_EDITMSG');
  writeFileSync(file, message);
  const run = spawnSync(process.execPath, [HOOK, file], { encoding: 'utf8' });
  return { ok: run.status === 0, stderr: run.stderr };
}

describe('the commit-msg hook', () => {
  it('takes a subject of up to 72 characters with a body after a blank line', () => {
    expect(check(`${'x'.repeat(72)}\n\nWhy, the numbers and the test.\n`).ok).toBe(true);
    expect(check('Subject\n\nBody\n# Please enter the commit message (a comment git strips)\n').ok).toBe(true);
    expect(check(`${'é'.repeat(72)}\n\nBody.\n`).ok).toBe(true); // characters, not bytes
  });

  it('takes the subjects git writes without a body: merges, fixup! and squash!', () => {
    expect(check("Merge branch 'main' of origin\n").ok).toBe(true);
    expect(check('fixup! Share webhook slots fairly across accounts\n').ok).toBe(true);
    expect(check('squash! Share webhook slots fairly across accounts\n').ok).toBe(true);
  });

  it('refuses a long subject, an empty one, a subject alone, and a body with no blank line before it', () => {
    expect(check(`${'x'.repeat(73)}\n\nBody.\n`)).toMatchObject({ ok: false, stderr: expect.stringContaining('73 characters; at most 72') });
    expect(check('Share webhook slots fairly across accounts\n')).toMatchObject({ ok: false, stderr: expect.stringContaining('body is missing') });
    expect(check('Share webhook slots fairly across accounts\n\n\n# only comments below\n')).toMatchObject({ ok: false, stderr: expect.stringContaining('body is missing') });
    expect(check('\n\nbody only\n')).toMatchObject({ ok: false, stderr: expect.stringContaining('empty') });
    expect(check('# only a comment\n')).toMatchObject({ ok: false });
    expect(check('Subject\nbody glued to it\n')).toMatchObject({ ok: false, stderr: expect.stringContaining('blank line') });
  });

  it('is what the repository installs', async () => {
    const pkg = (await import('../../package.json')).default as { scripts: Record<string, string> };
    expect(pkg.scripts.prepare).toContain('core.hooksPath .githooks');
  });
});
