/**
 * Keeps $AGENTD_HOME private whatever existed before: the process umask is
 * 0o077 from start-up, the home and run/ are 0700, and files agentd created
 * earlier (database, WAL, SHM, port file) are 0600. Anything found wider is
 * tightened, with a warning, because an earlier version or a careless mkdir
 * may have left conversations readable by every local user.
 */
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../shared/log.ts';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;
/** What SQLite keeps beside the database file in WAL mode. */
const DATABASE_SIDE_FILES = ['', '-wal', '-shm', '-journal'];

/** Sets `path` to `mode` if it is wider (any bit outside `mode`), saying so. */
export function tighten(path: string, mode: number, log: Logger): void {
  const current = statSync(path).mode & 0o777;
  if ((current & ~mode) === 0) return;
  chmodSync(path, mode);
  log.warn({ path, was: current.toString(8), now: mode.toString(8) }, 'tightened permissions: it was readable or writable by other users');
}

/** Creates `dir` (0700) or tightens it; refuses a shared sticky directory such as /tmp. */
export function privateDir(dir: string, log: Logger): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const st = statSync(dir);
  if (!st.isDirectory()) throw new Error(`${dir} is not a directory`);
  if ((st.mode & 0o1000) !== 0) {
    throw new Error(`${dir} is a shared directory (sticky bit set); give agentd a home of its own with --home`);
  }
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) {
    throw new Error(`${dir} belongs to uid ${st.uid}, not to this user (uid ${uid}); give agentd a home of its own with --home`);
  }
  tighten(dir, PRIVATE_DIR_MODE, log);
}

/**
 * Called first thing at start-up, before any file is created: every file made
 * after this is 0600 and every directory 0700 unless chmod says otherwise.
 */
export function preparePrivateHome(home: string, log: Logger): void {
  process.umask(0o077);
  privateDir(home, log);
  privateDir(join(home, 'run'), log);
}

/** The database and the files SQLite keeps beside it, when they exist from before. */
export function tightenDatabaseFiles(dbPath: string, log: Logger): void {
  for (const suffix of DATABASE_SIDE_FILES) {
    const path = dbPath + suffix;
    if (existsSync(path)) tighten(path, PRIVATE_FILE_MODE, log);
  }
}
