/**
 * Database work that main asks for (start-up state, conversation lists,
 * session search, agent and subscription writes) runs on a small piscina
 * pool, so main never blocks on the database. This is a plain task pool, the
 * job piscina is built for: any idle thread takes the next task, each with
 * its own DaemonStorage (SQLite: a connection whose writes take the shards'
 * write lock; PostgreSQL: a client of the server).
 */
import { Piscina } from 'piscina';
import { workerScript } from './worker-script.ts';
import type { StorageInit, StorageTask } from '../../threads/storage/messages.ts';
import type { StoreLocation } from '../../shared/store-location.ts';

/**
 * A storage thread's young generation (V8's default grows to 48 MiB per
 * thread). Scoring a search's big candidate churns short-lived objects, and
 * the default let the young space grow to its maximum and stay: scoring one
 * 16 MiB message peaked 3.1x its size above where memory stood, 1.5x with
 * a 2 MiB semi-space (this setting), with search over 100k messages as fast
 * (p50 1.9-2.8 ms either way, in one process).
 */
const STORAGE_YOUNG_GENERATION_MB = 6;

export class StoragePool {
  readonly #pool: Piscina;
  readonly #threads: number;
  readonly store: StoreLocation;

  constructor(threads: number, init: StorageInit, onError: (err: unknown) => void) {
    this.store = init.store;
    this.#threads = threads;
    this.#pool = new Piscina({
      filename: workerScript('storage-tasks'),
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: Infinity,
      workerData: init,
      resourceLimits: { maxYoungGenerationSizeMb: STORAGE_YOUNG_GENERATION_MB },
    });
    // A thread that fails outside a task is an 'error' event; unheard, it would crash the daemon.
    // piscina replaces the thread; the tasks it had fail with their own errors.
    this.#pool.on('error', onError);
  }

  run<T = unknown>(task: StorageTask): Promise<T> {
    return this.#pool.run(task) as Promise<T>;
  }

  /**
   * Runs the store's upkeep every `intervalMs` in the background (SQLite:
   * connections never checkpoint on commit; this keeps the WAL under
   * `walMaxBytes`, see boundedCheckpoint). One at a time: a tick that finds
   * one running skips.
   */
  startMaintenance(intervalMs: number, walMaxBytes: number, onError: (err: unknown) => void): void {
    this.#maintenance = setInterval(() => {
      if (this.#maintaining) return;
      this.#maintaining = true;
      this.run({ op: 'maintain', walMaxBytes })
        .catch(onError)
        .finally(() => {
          this.#maintaining = false;
        });
    }, intervalMs);
    this.#maintenance.unref();
  }

  /**
   * Indexes committed messages for search off the turns' commits
   * (storage/sqlite/search-index.ts): every `intervalMs`, `batch` messages per task,
   * again at once while a batch comes back full, so start-up catches up.
   * One task at a time. A search indexes what is left before it reads.
   */
  startIndexing(intervalMs: number, batch: number, onError: (err: unknown) => void): void {
    const tick = (): void => {
      if (this.#indexing || this.#closed) return;
      this.#indexing = true;
      this.run<number>({ op: 'index_messages', limit: batch }).then(
        (n) => {
          this.#indexing = false;
          if (n === batch) tick();
        },
        (err: unknown) => {
          this.#indexing = false;
          // Closing destroys the pool under a running batch: nothing is lost, start-up indexes it.
          if (!this.#closed) onError(err);
        },
      );
    };
    this.#indexer = setInterval(tick, intervalMs);
    this.#indexer.unref();
    tick();
  }

  #stopTimers(): void {
    this.#closed = true;
    if (this.#indexer !== null) clearInterval(this.#indexer);
  }

  async close(): Promise<void> {
    this.#stopTimers();
    if (this.#maintenance !== null) clearInterval(this.#maintenance);
    // The shards are gone by now: every thread's store closes (SQLite: the WAL goes back into the database file).
    const barrier = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
    const closes = Array.from({ length: this.#threads }, () => this.run({ op: 'close', barrier, threads: this.#threads }).catch(() => {}));
    await Promise.all(closes);
    await this.#pool.destroy();
  }

  /** Stops the threads without touching the store (a start that failed: the store may be one to leave alone). */
  async destroy(): Promise<void> {
    this.#stopTimers();
    if (this.#maintenance !== null) clearInterval(this.#maintenance);
    await this.#pool.destroy();
  }

  #maintenance: NodeJS.Timeout | null = null;
  #maintaining = false;
  #indexer: NodeJS.Timeout | null = null;
  #indexing = false;
  #closed = false;
}
