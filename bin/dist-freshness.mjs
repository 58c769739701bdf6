// Whether dist/ was compiled from the current src/: every src/**/*.ts has its
// dist/src/**/*.js, written no earlier than the source was last changed.
// Comparing modification times takes milliseconds, where even an incremental
// `tsc -b` spends seconds loading the program to find nothing to do.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function* sources(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield path;
  }
}

/** The first source (relative to `root`) whose compiled file is missing or older; null when dist/ is fresh. */
export function staleSource(root) {
  for (const file of sources(join(root, 'src'))) {
    const rel = file.slice(root.length).replace(/^\//, '');
    const built = join(root, 'dist', rel.replace(/\.ts$/, '.js'));
    let builtAt;
    try {
      builtAt = statSync(built).mtimeMs;
    } catch {
      return rel;
    }
    if (statSync(file).mtimeMs > builtAt) return rel;
  }
  return null;
}
