/**
 * Database work that main asks for (start-up state, conversation lists,
 * session search, agent and subscription writes) runs on a small piscina
 * pool, so main never blocks on the database. This is a plain task pool, the
 * job piscina is built for: any idle thread takes the next task, each with
 * its own DaemonStorage (SQLite: a connection whose writes take the shards'
 * write lock; PostgreSQL: a client of the server). Session searches run on
 * threads of their own (search-lane.ts), so they never hold these.
 */
import type { Piscina } from 'piscina';
import type { SearchOptions, StorageInit, StorageTask } from '../../threads/storage/messages.ts';
import type { StoreLocation } from '../../shared/store-location.ts';
import { SearchLane, type SearchOwner } from './search-lane.ts';
import { closeStorageThreads, storageThreadPool } from './storage-threads.ts';

export class StoragePool {
  readonly #pool: Piscina;
  readonly #threads: number;
  readonly #searches: SearchLane;
  readonly store: StoreLocation;

  /** `threads` threads for searches (search-lane.ts), as many for everything else; a search ends past `searchTimeoutMs`. */
  constructor(threads: number, init: StorageInit, onError: (err: unknown) => void, searchTimeoutMs: number) {
    this.store = init.store;
    this.#threads = threads;
    this.#pool = storageThreadPool(threads, init, onError);
    this.#searches = new SearchLane(threads, init, searchTimeoutMs, onError);
  }

  /** Runs a session search on the search lane; `owner`'s disconnect cancels it. */
  search(options: SearchOptions, owner: SearchOwner): Promise<unknown> {
    return this.#searches.search(options, owner);
  }

  /** Cancels the searches of a connection that closed. */
  cancelSearches(owner: number): void {
    this.#searches.cancelFor(owner);
  }

  /** Search counters for get_stats. */
  stats(): ReturnType<SearchLane['stats']> {
    return this.#searches.stats();
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

  /** The shards are gone by now: searches are cancelled, every thread's store closes, within STORAGE_CLOSE_MS (storage-threads.ts). */
  async close(): Promise<void> {
    this.#stopTimers();
    if (this.#maintenance !== null) clearInterval(this.#maintenance);
    await Promise.all([this.#searches.close(), closeStorageThreads(this.#pool, this.#threads)]);
  }

  /** Stops the threads without touching the store (a start that failed: the store may be one to leave alone). */
  async destroy(): Promise<void> {
    this.#stopTimers();
    if (this.#maintenance !== null) clearInterval(this.#maintenance);
    await Promise.all([this.#searches.destroy(), this.#pool.destroy()]);
  }

  #maintenance: NodeJS.Timeout | null = null;
  #maintaining = false;
  #indexer: NodeJS.Timeout | null = null;
  #indexing = false;
  #closed = false;
}
