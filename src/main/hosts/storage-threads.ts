/**
 * A piscina pool of storage threads (threads/storage/storage-tasks.ts), and
 * how one closes within a bound. StoragePool keeps two: one for searches,
 * one for everything else (search-lane.ts says why).
 */
import { Piscina } from 'piscina';
import { workerScript } from './worker-script.ts';
import type { StorageInit } from '../../threads/storage/messages.ts';

/**
 * A storage thread's young generation (V8's default grows to 48 MiB per
 * thread). Scoring a search's big candidate churns short-lived objects, and
 * the default let the young space grow to its maximum and stay: scoring one
 * 16 MiB message peaked 3.1x its size above where memory stood, 1.5x with
 * a 2 MiB semi-space (this setting), with search over 100k messages as fast
 * (p50 1.9-2.8 ms either way, in one process).
 */
const STORAGE_YOUNG_GENERATION_MB = 6;

/**
 * How long closing waits for the threads to close their stores before it
 * terminates them. Past it a thread is cut wherever it is: SQLite's WAL
 * keeps what was committed, and the next start recovers it. Searches are
 * cancelled before this wait starts, so a thread is never busy with one for
 * longer than one slice read.
 */
export const STORAGE_CLOSE_MS = 5_000;

export function storageThreadPool(threads: number, init: StorageInit, onError: (err: unknown) => void): Piscina {
  const pool = new Piscina({
    filename: workerScript('storage-tasks'),
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: Infinity,
    workerData: init,
    resourceLimits: { maxYoungGenerationSizeMb: STORAGE_YOUNG_GENERATION_MB },
  });
  // A thread that fails outside a task is an 'error' event; unheard, it would crash the daemon.
  // piscina replaces the thread; the tasks it had fail with their own errors.
  pool.on('error', onError);
  return pool;
}

/**
 * Every thread closes its store (SQLite: the WAL goes back into the
 * database file), then the pool ends; after STORAGE_CLOSE_MS the threads
 * are terminated whatever they are doing.
 */
export async function closeStorageThreads(pool: Piscina, threads: number): Promise<void> {
  const barrier = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
  const closes = Array.from({ length: threads }, () => pool.run({ op: 'close', barrier, threads }).catch(() => {}));
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, STORAGE_CLOSE_MS)));
  await Promise.race([Promise.all(closes), bound]);
  clearTimeout(timer);
  await pool.destroy();
}
