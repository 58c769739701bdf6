/**
 * Session searches run on storage threads of their own, so a slow search
 * (big messages to score, many at once) never holds the threads that
 * answer list_conversations, subscriptions and agent writes: those keep
 * their threads whatever searches do. Each search carries a deadline (its
 * arrival plus `search_timeout_ms`, so time spent queued counts) and a
 * cancel flag, set when its client disconnects or the daemon closes; the
 * storage thread checks both between the steps of its work
 * (storage/search-budget.ts) and stops there.
 */
import type { Piscina } from 'piscina';
import { AgentdError, Code } from '../../shared/errors.ts';
import type { SearchOptions, StorageInit } from '../../threads/storage/messages.ts';
import { cancelSearch, type SearchStopReason } from '../../storage/search-budget.ts';
import { closeStorageThreads, storageThreadPool } from './storage-threads.ts';
import { mainMeter } from '../metrics/main-meter.ts';
import { SEARCH_CACHE_KIB } from '../../storage/sqlite/db.ts';

/** Who asked for a search, so that its disconnect cancels it; null for in-process callers, which never disconnect. */
export type SearchOwner = number | null;

export class SearchLane {
  readonly #pool: Piscina;
  readonly #threads: number;
  readonly #timeoutMs: number;
  /** Each search in progress (queued or running): its cancel flag and its owner. */
  readonly #inProgress = new Map<SharedArrayBuffer, SearchOwner>();
  #timedOut = 0;
  #cancelled = 0;

  constructor(threads: number, init: StorageInit, timeoutMs: number, onError: (err: unknown) => void) {
    this.#threads = threads;
    this.#timeoutMs = timeoutMs;
    // A search's reads are mostly pages every search shares: a bigger page cache keeps them (db.ts).
    this.#pool = storageThreadPool(threads, { ...init, pageCacheKib: SEARCH_CACHE_KIB }, onError);
  }

  /** The search's reply; 504 past its budget, 499 when cancelled. */
  async search(options: SearchOptions, owner: SearchOwner): Promise<unknown> {
    const cancel = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
    this.#inProgress.set(cancel, owner);
    const began = performance.now();
    try {
      const reply = (await this.#pool.run({ op: 'search_sessions', ...options, deadline: Date.now() + this.#timeoutMs, cancel })) as { search_stopped?: SearchStopReason };
      if (reply.search_stopped === undefined) return reply;
      if (reply.search_stopped === 'timeout') {
        this.#timedOut++;
        throw new AgentdError(Code.Timeout, `search_sessions ran past search_timeout_ms (${this.#timeoutMs} ms)`);
      }
      this.#cancelled++;
      throw new AgentdError(Code.Cancelled, 'search_sessions was cancelled: its client disconnected or the daemon is closing');
    } finally {
      this.#inProgress.delete(cancel);
      mainMeter.timings?.search((performance.now() - began) / 1000);
    }
  }

  /** Cancels the searches `owner` asked for (its connection closed). */
  cancelFor(owner: number): void {
    for (const [cancel, o] of this.#inProgress) if (o === owner) cancelSearch(cancel);
  }

  stats(): { searches_in_progress: number; searches_timed_out: number; searches_cancelled: number } {
    return { searches_in_progress: this.#inProgress.size, searches_timed_out: this.#timedOut, searches_cancelled: this.#cancelled };
  }

  /** Cancels every search, then closes the threads (within STORAGE_CLOSE_MS). */
  async close(): Promise<void> {
    for (const cancel of this.#inProgress.keys()) cancelSearch(cancel);
    await closeStorageThreads(this.#pool, this.#threads);
  }

  /** Stops the threads without touching the store. */
  async destroy(): Promise<void> {
    await this.#pool.destroy();
  }
}
