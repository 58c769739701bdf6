/**
 * The house rules of src/, checked on every run so the floor plan cannot
 * drift back: no file over 400 lines, no function over 80, no folder with
 * more than 20 source files directly inside, no import circle. Each failure
 * names the place, so the fix starts there.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');
const MAX_FILE_LINES = 400;
const MAX_FUNCTION_LINES = 80;
const MAX_FILES_PER_FOLDER = 20;
const SOURCE = /\.(ts|mts|mjs)$/;

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path, out);
    else if (SOURCE.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const files = walk(SRC);
const parsed = new Map(files.map((f) => [f, ts.createSourceFile(f, readFileSync(f, 'utf8'), ts.ScriptTarget.Latest, true)]));
const rel = (f: string): string => relative(ROOT, f);

/** Every function-like node longer than the limit, as "file:line name (N lines)". */
function longFunctions(file: ts.SourceFile): string[] {
  const found: string[] = [];
  const lineOf = (pos: number): number => file.getLineAndCharacterOfPosition(pos).line + 1;
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const lines = lineOf(node.getEnd()) - lineOf(node.getStart(file)) + 1;
      if (lines > MAX_FUNCTION_LINES) {
        const name = node.name && ts.isIdentifier(node.name) ? node.name.text : '(anonymous)';
        found.push(`${rel(file.fileName)}:${lineOf(node.getStart(file))} ${name} (${lines} lines)`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** Relative imports (static, dynamic with a literal, `export … from`) resolved to files of src/. */
function importsOf(file: ts.SourceFile): string[] {
  const targets: string[] = [];
  const add = (spec: string): void => {
    if (!spec.startsWith('.')) return;
    const target = resolve(dirname(file.fileName), spec);
    if (parsed.has(target)) targets.push(target);
  };
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      add(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return targets;
}

/** One file path of each import circle found by depth-first search. */
function circles(): string[][] {
  const graph = new Map([...parsed].map(([f, sf]) => [f, importsOf(sf)]));
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (f: string): void => {
    state.set(f, 'open');
    stack.push(f);
    for (const t of graph.get(f) ?? []) {
      if (state.get(t) === 'open') found.push([...stack.slice(stack.indexOf(t)), t].map(rel));
      else if (!state.has(t)) visit(t);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of graph.keys()) if (!state.has(f)) visit(f);
  return found;
}

describe('house rules of src/', () => {
  it('finds the source it checks', () => {
    expect(files.length).toBeGreaterThan(100);
  });

  it(`has no file over ${MAX_FILE_LINES} lines`, () => {
    const long = files
      .map((f) => ({ f, lines: readFileSync(f, 'utf8').split('\n').length - 1 }))
      .filter(({ lines }) => lines > MAX_FILE_LINES)
      .map(({ f, lines }) => `${rel(f)} (${lines} lines)`);
    expect(long).toEqual([]);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    expect([...parsed.values()].flatMap(longFunctions)).toEqual([]);
  });

  it(`has no folder with more than ${MAX_FILES_PER_FOLDER} source files directly inside`, () => {
    const perFolder = new Map<string, number>();
    for (const f of files) perFolder.set(dirname(f), (perFolder.get(dirname(f)) ?? 0) + 1);
    const crowded = [...perFolder].filter(([, n]) => n > MAX_FILES_PER_FOLDER).map(([d, n]) => `${rel(d)} (${n} files)`);
    expect(crowded).toEqual([]);
  });

  it('has no import circle', () => {
    expect(circles()).toEqual([]);
  });
});
