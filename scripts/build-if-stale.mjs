#!/usr/bin/env node
// `npm start`: compiles src/ into dist/ only when a source changed since the
// last build (see bin/dist-freshness.mjs), so a start without edits skips tsc.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { staleSource } from '../bin/dist-freshness.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const stale = staleSource(ROOT);
if (stale !== null) {
  process.stderr.write(`building dist/ (${stale} changed)\n`);
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  process.exitCode = r.status ?? 1;
}
