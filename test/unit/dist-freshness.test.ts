/** bin/dist-freshness.mjs: when a checkout may run dist/ (and npm start may skip tsc). */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MODULE = '../../bin/dist-freshness.mjs';
const { staleSource } = (await import(MODULE)) as { staleSource: (root: string) => string | null };

let root: string;
afterEach(() => rmSync(root, { recursive: true, force: true }));

function file(path: string, mtimeSecs: number): void {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), '');
  utimesSync(join(root, path), mtimeSecs, mtimeSecs);
}

describe('staleSource', () => {
  it('is null only when every source has a compiled file at least as new', () => {
    root = mkdtempSync(join(tmpdir(), 'freshness-'));
    file('src/cli/a.ts', 1_000);
    file('src/types.d.ts', 5_000); // declarations compile to nothing
    expect(staleSource(root)).toBe('src/cli/a.ts'); // never built
    file('dist/src/cli/a.js', 2_000);
    expect(staleSource(root)).toBeNull();
    file('src/cli/a.ts', 3_000); // edited after the build
    expect(staleSource(root)).toBe('src/cli/a.ts');
    file('dist/src/cli/a.js', 3_000);
    expect(staleSource(root)).toBeNull();
  });
});
