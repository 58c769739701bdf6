/**
 * Where harness code may come from: a harness module is named, not located.
 * `{"module": "notes"}` is `$AGENTD_HOME/harness/notes.mjs` (or `notes.js`),
 * and `"notes.mjs"` is that file exactly. The name never holds a path; the
 * file's real path (symlinks resolved) must lie inside the real harness
 * folder, so nothing outside what the operator installed can be loaded.
 *
 * Main checks asynchronously at create/update time, start-up checks the
 * config file synchronously, and the harness thread checks again before it
 * imports (the file may have changed in between).
 */
import { realpathSync, statSync } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';

/** The folder under $AGENTD_HOME that holds harness modules. */
export const HARNESS_DIR = 'harness';

const MODULE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;

/** A module name: 1-64 letters, digits, "-", "_", "."; no path separator, not starting with "." (so never ".."). */
export function isHarnessModuleName(name: string): boolean {
  return MODULE_NAME.test(name);
}

export const HARNESS_NAME_RULE =
  'must name a module in $AGENTD_HOME/harness: 1-64 letters, digits, "-", "_" or ".", not starting with "." and with no path ("notes" loads harness/notes.mjs or harness/notes.js)';

/** The file names `name` may stand for, in the order they are tried. */
function candidates(name: string): string[] {
  return /\.m?js$/.test(name) ? [name] : [`${name}.mjs`, `${name}.js`];
}

function inside(dirReal: string, real: string): boolean {
  return real.startsWith(dirReal + sep);
}

function notFound(name: string, dir: string): Error {
  return new Error(`harness module "${name}" is not in ${dir} (looked for ${candidates(name).join(', ')})`);
}

function outside(name: string, real: string, dir: string): Error {
  return new Error(`harness module "${name}" resolves to ${real}, outside ${dir}`);
}

const isMissing = (err: unknown): boolean => ['ENOENT', 'ENOTDIR', 'ELOOP'].includes((err as NodeJS.ErrnoException).code ?? '');

/** The real path of module `name` under `home`, or an Error saying why it cannot be loaded. */
export async function resolveHarnessModule(home: string, name: string): Promise<string> {
  if (!isHarnessModuleName(name)) throw new Error(`harness module ${JSON.stringify(name)} ${HARNESS_NAME_RULE}`);
  const dir = join(home, HARNESS_DIR);
  let dirReal: string;
  try {
    dirReal = await realpath(dir);
  } catch (err) {
    if (isMissing(err)) throw notFound(name, dir);
    throw err;
  }
  for (const file of candidates(name)) {
    let real: string;
    try {
      real = await realpath(join(dir, file));
    } catch (err) {
      if (isMissing(err)) continue;
      throw err;
    }
    if (!inside(dirReal, real)) throw outside(name, real, dir);
    if ((await stat(real)).isFile()) return real;
  }
  throw notFound(name, dir);
}

/** As `resolveHarnessModule`, blocking: only for start-up, before anything listens. */
export function resolveHarnessModuleSync(home: string, name: string): string {
  if (!isHarnessModuleName(name)) throw new Error(`harness module ${JSON.stringify(name)} ${HARNESS_NAME_RULE}`);
  const dir = join(home, HARNESS_DIR);
  let dirReal: string;
  try {
    dirReal = realpathSync(dir);
  } catch (err) {
    if (isMissing(err)) throw notFound(name, dir);
    throw err;
  }
  for (const file of candidates(name)) {
    let real: string;
    try {
      real = realpathSync(join(dir, file));
    } catch (err) {
      if (isMissing(err)) continue;
      throw err;
    }
    if (!inside(dirReal, real)) throw outside(name, real, dir);
    if (statSync(real).isFile()) return real;
  }
  throw notFound(name, dir);
}
