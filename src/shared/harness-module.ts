/**
 * Where harness code may come from: a harness module is named, not located.
 * `{"module": "notes"}` is `$AGENTD_HOME/harness/notes.mjs` (or `notes.js`),
 * and `"notes.mjs"` is that file exactly. The name never holds a path; the
 * file's real path (symlinks resolved) must lie inside the real harness
 * folder, so nothing outside what the operator installed can be loaded.
 *
 * The folder and the module must belong to the daemon's user (or root) and
 * be writable by no one else: a folder another user can write to would let
 * that user plant code the daemon runs.
 *
 * Main checks asynchronously at create/update time, start-up checks the
 * config file synchronously, and the harness thread checks again before it
 * imports (the file may have changed in between).
 */
import { realpathSync, statSync, type Stats } from 'node:fs';
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

/** Refuses a folder or file that another user owns or that group or others may write. */
function assertTrusted(what: string, path: string, st: Stats): void {
  const me = process.getuid?.() ?? 0;
  if (st.uid !== me && st.uid !== 0) throw new Error(`${what} ${path} is owned by uid ${st.uid}, not by the daemon's user or root`);
  if ((st.mode & 0o022) !== 0) throw new Error(`${what} ${path} is writable by group or others (mode ${(st.mode & 0o777).toString(8)})`);
}

/** The checks on one candidate, given what the file system said: its real path if it may be loaded. */
function vet(name: string, dir: string, dirReal: string, real: string, st: Stats): string | null {
  if (!inside(dirReal, real)) throw outside(name, real, dir);
  if (!st.isFile()) return null;
  assertTrusted(`harness module "${name}"`, real, st);
  return real;
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
  assertTrusted('the harness folder', dirReal, await stat(dirReal));
  for (const file of candidates(name)) {
    let real: string;
    try {
      real = await realpath(join(dir, file));
    } catch (err) {
      if (isMissing(err)) continue;
      throw err;
    }
    const ok = vet(name, dir, dirReal, real, await stat(real));
    if (ok !== null) return ok;
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
  assertTrusted('the harness folder', dirReal, statSync(dirReal));
  for (const file of candidates(name)) {
    let real: string;
    try {
      real = realpathSync(join(dir, file));
    } catch (err) {
      if (isMissing(err)) continue;
      throw err;
    }
    const ok = vet(name, dir, dirReal, real, statSync(real));
    if (ok !== null) return ok;
  }
  throw notFound(name, dir);
}
