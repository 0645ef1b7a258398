import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The repository stands alone: its contract lives in docs/ (and the API reference is the OpenAPI
 * document the API serves), so neither code nor docs may cite documents kept outside the repository,
 * and every reference into docs/ must lead somewhere. Pure: reads files only (SB_NO_STACK=1 is enough).
 */

const ROOT = join(__dirname, '..', '..');

// Spelled in pieces so that this file does not cite what it forbids.
const OUTSIDE = ['DES' + 'IGN', 'SP' + 'EC'];
const CITATIONS: RegExp[] = [
  new RegExp(`\\b(${OUTSIDE.join('|')})\\b`), // either name, upper case, whether with §, .md, 's or a colon
  new RegExp(`\\bthe ${'sp' + 'ec'}(ification)?\\b`, 'i'), // and the phrase, in any case
];

const TEXT_FILE = /\.(ts|tsx|mts|cts|js|mjs|cjs|md|yml|yaml|sh)$/;
const NAMED_FILES = new Set(['Dockerfile', '.env.example', '.ci/run', 'package.json']);
// Vendored or recorded material, not ours to word.
const SKIPPED = [/^test\/fixtures\//, /^test\/histories\//];

/** Tracked files, plus new ones not yet committed (but not ignored), that still exist. */
function projectFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' });
  return [...new Set(out.split('\0').filter(Boolean))]
    .filter((f) => TEXT_FILE.test(f) || NAMED_FILES.has(f))
    .filter((f) => !SKIPPED.some((re) => re.test(f)))
    .filter((f) => existsSync(join(ROOT, f)))
    .sort();
}

const FILES = projectFiles();
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens, -1/-2 for repeats. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = heading[1].toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** Where a reference to `target` (a page, optionally with `#heading`) written in `from` fails to lead, or null. */
function brokenReference(from: string, target: string, base: string): string | null {
  const [path, anchor] = target.split('#', 2);
  const file = normalize(join(base, path));
  if (!existsSync(join(ROOT, file))) return `${from}: ${target} — no file ${file}`;
  if (anchor && !anchorsOf(read(file)).has(anchor.toLowerCase())) return `${from}: ${target} — no heading #${anchor} in ${file}`;
  return null;
}

describe('the project stands alone', () => {
  it('finds the files it checks', () => {
    expect(FILES).toContain('README.md');
    expect(FILES).toContain('docs/README.md');
    expect(FILES.filter((f) => f.endsWith('.ts')).length).toBeGreaterThan(50);
  });

  it('cites no document kept outside the repository, in code, tests or docs', () => {
    const hits: string[] = [];
    for (const file of FILES) {
      read(file).split('\n').forEach((line, i) => {
        if (CITATIONS.some((re) => re.test(line))) hits.push(`${file}:${i + 1}: ${line.trim().slice(0, 160)}`);
      });
    }
    expect(hits, 'point these at docs/ (or drop the citation)').toEqual([]);
  });

  it('has a docs index that names the API reference and every page', () => {
    const index = read('docs/README.md');
    expect(index).toContain('/v1/openapi.json');
    const pages = FILES.filter((f) => /^docs\/[^/]+\.md$/.test(f) && f !== 'docs/README.md');
    expect(pages.length).toBeGreaterThan(5);
    expect(pages.filter((page) => !index.includes(`](${page.slice('docs/'.length)})`)), 'pages missing from docs/README.md').toEqual([]);
  });

  it('links between docs pages lead to a page and heading that exist', () => {
    const broken: string[] = [];
    for (const file of FILES.filter((f) => f.endsWith('.md'))) {
      for (const [, target] of read(file).matchAll(/\]\(([^)\s]+\.md(?:#[^)\s]*)?)\)/g)) {
        if (/^[a-z]+:/i.test(target)) continue;
        const problem = brokenReference(file, target, dirname(file));
        if (problem) broken.push(problem);
      }
    }
    expect(broken).toEqual([]);
  });

  it('references from code into docs/ lead to a page and heading that exist', () => {
    const broken: string[] = [];
    for (const file of FILES.filter((f) => !f.endsWith('.md'))) {
      for (const [, target] of read(file).matchAll(/\b(docs\/[\w.-]+\.md(?:#[\w-]+)?)/g)) {
        const problem = brokenReference(file, target, '.');
        if (problem) broken.push(problem);
      }
    }
    expect(broken).toEqual([]);
  });
});
