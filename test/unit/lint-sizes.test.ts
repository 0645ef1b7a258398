import { describe, expect, it } from 'vitest';
import { MAX_FILE_LINES, MAX_FUNCTION_LINES, sizeProblems } from '../../scripts/lint-sizes';

// scripts/lint-sizes.ts: files of at most 350 lines, functions of at most 80 lines of their own.
const body = (lines: number) => Array.from({ length: lines }, (_, i) => `  const v${i} = ${i};`).join('\n');

describe('the size rule', () => {
  it('counts a function\'s own lines: those of functions nested in it are theirs', () => {
    // A factory of 100 lines whose methods are small: fine.
    const factory = `export function make() {\n  return {\n${Array.from({ length: 10 }, (_, i) => `    m${i}() {\n${body(7)}\n    },`).join('\n')}\n  };\n}\n`;
    expect(sizeProblems('factory.ts', factory)).toEqual([]);
    // A function of 85 lines of its own: refused, named, with its own count.
    const long = `export function long() {\n${body(83)}\n}\n`;
    expect(sizeProblems('long.ts', long)).toEqual([{ file: 'long.ts', line: 1, what: 'function long', lines: 85, limit: MAX_FUNCTION_LINES }]);
    // An arrow function is named by its variable.
    expect(sizeProblems('arrow.ts', `const walk = () => {\n${body(83)}\n};\n`)[0].what).toBe('function walk');
  });

  it('refuses a file over 350 lines', () => {
    const text = Array.from({ length: MAX_FILE_LINES + 1 }, (_, i) => `export const c${i} = ${i};`).join('\n') + '\n';
    expect(sizeProblems('big.ts', text)).toEqual([{ file: 'big.ts', line: 1, what: 'file', lines: 351, limit: MAX_FILE_LINES }]);
    expect(sizeProblems('ok.ts', text.split('\n').slice(1).join('\n'))).toEqual([]);
  });
});
