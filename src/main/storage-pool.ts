/**
 * Database work that main asks for (conversation lists, session search, and
 * the subscription table's writes) runs on a small piscina pool, so main
 * never blocks on the database. This is a plain task pool, the job piscina is
 * built for: any idle thread takes the next task, each with its own
 * connection; writes take the shards' write lock like any other writer.
 */
import { Piscina } from 'piscina';
import { workerScript } from './worker-script.ts';
import type { StorageTask } from '../shared/threads.ts';

export class StoragePool {
  readonly #pool: Piscina;
  readonly dbPath: string;
  readonly writeLock: SharedArrayBuffer;

  constructor(threads: number, dbPath: string, writeLock: SharedArrayBuffer, onError: (err: unknown) => void) {
    this.dbPath = dbPath;
    this.writeLock = writeLock;
    this.#pool = new Piscina({
      filename: workerScript('storage-tasks'),
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: Infinity,
      workerData: { dbPath, writeLock },
    });
    // A thread that fails outside a task is an 'error' event; unheard, it would crash the daemon.
    // piscina replaces the thread; the tasks it had fail with their own errors.
    this.#pool.on('error', onError);
  }

  run<T = unknown>(task: StorageTask): Promise<T> {
    return this.#pool.run(task) as Promise<T>;
  }

  /**
   * Checkpoints the WAL every `intervalMs` in the background (connections
   * never do it on commit), keeping it under `walMaxBytes` (see
   * boundedCheckpoint). One at a time: a tick that finds one running skips.
   */
  startCheckpoints(intervalMs: number, walMaxBytes: number, onError: (err: unknown) => void): void {
    this.#checkpoints = setInterval(() => {
      if (this.#checkpointing) return;
      this.#checkpointing = true;
      this.run({ op: 'bounded_checkpoint', walMaxBytes })
        .catch(onError)
        .finally(() => {
          this.#checkpointing = false;
        });
    }, intervalMs);
    this.#checkpoints.unref();
  }

  /**
   * Indexes committed messages for search off the turns' commits
   * (worker/search-index.ts): every `intervalMs`, `batch` messages per task,
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

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#indexer !== null) clearInterval(this.#indexer);
    if (this.#checkpoints !== null) clearInterval(this.#checkpoints);
    // The shards are gone by now: fold the WAL back into the database file.
    await this.run({ op: 'checkpoint', mode: 'TRUNCATE' }).catch(() => {});
    await this.#pool.destroy();
  }

  #checkpoints: NodeJS.Timeout | null = null;
  #checkpointing = false;
  #indexer: NodeJS.Timeout | null = null;
  #indexing = false;
  #closed = false;
}
