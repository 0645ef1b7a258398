import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import ts from 'typescript';

/**
 * `npm run lint:sizes`: no source file over 350 lines, no function over 80 lines of its own (docs/architecture.md#how-it-is-checked).
 * A function's own lines are its lines less those of the functions nested in it, so a factory
 * returning small methods stays small: each method is measured on its own.
 */
export const MAX_FILE_LINES = 350;
export const MAX_FUNCTION_LINES = 80;

export interface SizeProblem { file: string; line: number; what: string; lines: number; limit: number }

const ROOT = `${__dirname}/..`;

function isFunction(node: ts.Node): node is ts.FunctionLikeDeclaration {
  return ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node) || ts.isArrowFunction(node)
    || ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node) || ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node);
}

function lineSpan(source: ts.SourceFile, node: ts.Node): number {
  const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
  const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
  return end - start + 1;
}

function functionName(node: ts.FunctionLikeDeclaration): string {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) return parent.name.getText();
  return '(anonymous)';
}

/** The size problems of one file's text. */
export function sizeProblems(file: string, text: string): SizeProblem[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const problems: SizeProblem[] = [];
  const fileLines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (fileLines > MAX_FILE_LINES) problems.push({ file, line: 1, what: 'file', lines: fileLines, limit: MAX_FILE_LINES });
  /** Visits `node`; answers the lines of the outermost functions in it (what its enclosing function does not own). */
  const visit = (node: ts.Node): number => {
    if (isFunction(node)) {
      const total = lineSpan(source, node);
      let nested = 0;
      ts.forEachChild(node, (child) => { nested += visit(child); });
      const own = total - nested;
      if (own > MAX_FUNCTION_LINES) {
        problems.push({ file, line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1, what: `function ${functionName(node)}`, lines: own, limit: MAX_FUNCTION_LINES });
      }
      return total;
    }
    let inside = 0;
    ts.forEachChild(node, (child) => { inside += visit(child); });
    return inside;
  };
  visit(source);
  return problems;
}

function main(): void {
  const files = ts.sys.readDirectory(ROOT, ['.ts', '.tsx'], ['**/node_modules', '**/dist', 'test', '**/*.d.ts', '.data'], ['**/*']);
  const problems = files.flatMap((path) => sizeProblems(relative(ROOT, path), readFileSync(path, 'utf8')));
  for (const p of problems) console.log(`${p.file}:${p.line} ${p.what}: ${p.lines} lines (at most ${p.limit})`);
  if (problems.length) {
    console.log(`${problems.length} over the size limits`);
    process.exit(1);
  }
}

if (require.main === module) main();
