import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The workflow bundle preloads our workflow modules (worker/bundle-options.ts): each is evaluated once per
 * workflow thread and shared by every workflow the thread runs. A module-level variable would then be
 * one workflow's state seen by the next, and a replay could take another path than the run it replays.
 * So every module the workflows import keeps none: no top-level `let` or `var`, no mutable static field,
 * and no top-level Map or Set but the ones listed here with the reason they are safe. Pure: reads
 * files only (SB_NO_STACK=1 is enough).
 */

const ROOT = join(__dirname, '..', '..');

/** Top-level collections that may be shared, `file:name`, each with why sharing changes nothing a workflow does. */
const SHARED_COLLECTIONS: Record<string, string> = {
  'lib/money.ts:formats': 'a cache of currency formatters: an entry depends on its currency code alone',
  'lib/data-errors.ts:PERMANENT_CLASSES': 'a constant lookup, never written',
  'lib/data-errors.ts:TRANSIENT_CLASSES': 'a constant lookup, never written',
  'lib/data-errors.ts:TRANSIENT_STATES': 'a constant lookup, never written',
  'lib/data-errors.ts:NETWORK_CODES': 'a constant lookup, never written',
};

const COLLECTIONS = new Set(['Map', 'Set', 'WeakMap', 'WeakSet']);

function parse(file: string, text = readFileSync(join(ROOT, file), 'utf8')): ts.SourceFile {
  return ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
}

/** The project files a module imports at run time (type-only imports are erased, packages are not ours). */
function importsOf(source: ts.SourceFile): string[] {
  const found: string[] = [];
  for (const statement of source.statements) {
    const isImport = ts.isImportDeclaration(statement) && !statement.importClause?.isTypeOnly;
    const isReExport = ts.isExportDeclaration(statement) && !statement.isTypeOnly;
    const specifier = (isImport || isReExport) && statement.moduleSpecifier;
    if (!specifier || !ts.isStringLiteral(specifier) || !specifier.text.startsWith('.')) continue;
    const base = resolve(ROOT, dirname(source.fileName), specifier.text);
    const file = [`${base}.ts`, join(base, 'index.ts')].find((f) => existsSync(f));
    if (file) found.push(relative(ROOT, file));
  }
  return found;
}

/** Every project module the workflow bundle's entry reaches. */
function workflowModules(entry = 'workflows/index.ts'): string[] {
  const seen = new Set<string>();
  const queue = [entry];
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    queue.push(...importsOf(parse(file)));
  }
  return [...seen].sort();
}

const isNewCollection = (init: ts.Expression | undefined) =>
  !!init && ts.isNewExpression(init) && ts.isIdentifier(init.expression) && COLLECTIONS.has(init.expression.text);

const hasModifier = (node: ts.PropertyDeclaration, kind: ts.SyntaxKind) => !!ts.getModifiers(node)?.some((m) => m.kind === kind);

/** What in a module's top level would be state shared between workflows. */
function sharedState(source: ts.SourceFile): string[] {
  const found: string[] = [];
  for (const statement of source.statements) {
    if (ts.isVariableStatement(statement)) {
      const constant = (statement.declarationList.flags & ts.NodeFlags.Const) !== 0;
      for (const declaration of statement.declarationList.declarations) {
        const name = `${source.fileName}:${declaration.name.getText(source)}`;
        if (!constant) found.push(`${name} is a top-level let or var`);
        else if (isNewCollection(declaration.initializer) && !SHARED_COLLECTIONS[name]) found.push(`${name} is a top-level collection`);
      }
    }
    if (ts.isClassDeclaration(statement)) {
      for (const member of statement.members) {
        if (ts.isPropertyDeclaration(member) && hasModifier(member, ts.SyntaxKind.StaticKeyword) && !hasModifier(member, ts.SyntaxKind.ReadonlyKeyword)) {
          found.push(`${source.fileName}:${statement.name?.text}.${member.name.getText(source)} is a mutable static field`);
        }
      }
    }
  }
  return found;
}

describe('the workflow modules the bundle preloads', () => {
  const modules = workflowModules();

  it('are found from the bundle entry, the payment machine and the libraries it uses among them', () => {
    expect(modules).toEqual(expect.arrayContaining(['workflows/index.ts', 'workflows/payments/machine.ts', 'contracts/payments.ts', 'lib/money.ts']));
    // Type-only imports are not followed: workflows import no store.
    expect(modules.filter((m) => m.startsWith('db/') || m.startsWith('activities/'))).toEqual([]);
  });

  it('keep no state of their own', () => {
    expect(modules.flatMap((m) => sharedState(parse(m)))).toEqual([]);
  });

  it('have every listed shared collection still there (the list names nothing stale)', () => {
    const declared = modules.flatMap((m) => parse(m).statements.filter(ts.isVariableStatement)
      .flatMap((s) => s.declarationList.declarations.map((d) => `${m}:${d.name.getText()}`)));
    expect(declared).toEqual(expect.arrayContaining(Object.keys(SHARED_COLLECTIONS)));
  });

  it('would be refused a module-level variable, an unlisted collection or a mutable static', () => {
    const source = parse('workflows/example.ts', [
      'let count = 0;', 'const seen = new Map<string, number>();', 'const LIMIT = 3;',
      'class Tally { static total = 0; static readonly max = 1; }',
    ].join('\n'));
    expect(sharedState(source)).toEqual([
      'workflows/example.ts:count is a top-level let or var',
      'workflows/example.ts:seen is a top-level collection',
      'workflows/example.ts:Tally.total is a mutable static field',
    ]);
  });
});
