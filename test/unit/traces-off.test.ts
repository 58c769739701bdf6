/**
 * Traces are free while off: nothing the daemon loads at start imports the
 * OpenTelemetry SDK; only a dynamic import (when `otlp` is set) reaches it.
 * Walks the static, non-type-only imports from the daemon's entry point.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

/** Static value imports of a file: relative ones resolved, package ones as written. */
function staticImports(path: string): { files: string[]; packages: string[] } {
  const sf = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const files: string[] = [];
  const packages: string[] = [];
  for (const node of sf.statements) {
    if (!(ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) || node.moduleSpecifier === undefined || !ts.isStringLiteral(node.moduleSpecifier)) continue;
    const typeOnly = ts.isImportDeclaration(node) ? node.importClause?.isTypeOnly === true : node.isTypeOnly;
    if (typeOnly) continue;
    const spec = node.moduleSpecifier.text;
    if (spec.startsWith('.')) files.push(resolve(dirname(path), spec));
    else packages.push(spec);
  }
  return { files: files.filter((f) => existsSync(f)), packages };
}

function loadedAtStart(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (f: string): void => {
    if (files.has(f)) return;
    files.add(f);
    const { files: next, packages: pkgs } = staticImports(f);
    for (const p of pkgs) packages.add(p);
    for (const n of next) visit(n);
  };
  visit(entry);
  return { files, packages };
}

describe('traces off', () => {
  it('loads no OpenTelemetry code at start: the SDK is reached only by a dynamic import', () => {
    const { files, packages } = loadedAtStart(resolve(ROOT, 'src/cli/agentd.ts'));
    expect(files.has(resolve(ROOT, 'src/main/daemon.ts'))).toBe(true);
    expect(files.has(resolve(ROOT, 'src/main/traces/tracing.ts'))).toBe(true);
    expect([...files].map((f) => relative(ROOT, f))).not.toContain('src/main/traces/otel-tracing.ts');
    expect([...packages].filter((p) => p.startsWith('@opentelemetry/'))).toEqual([]);
    // And the tracing module does reach it, dynamically.
    expect(readFileSync(resolve(ROOT, 'src/main/traces/tracing.ts'), 'utf8')).toContain("await import('./otel-tracing.ts')");
  });
});
