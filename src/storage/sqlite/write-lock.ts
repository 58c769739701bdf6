/**
 * One writer at a time, across threads, without SQLite's busy handler.
 *
 * SQLite allows a single writer; when two connections collide, the loser's
 * busy handler sleeps in steps of 1, 2, 5, 10… ms, so a collision costs
 * milliseconds. Every thread that writes SQLite takes this lock, a word in a
 * SharedArrayBuffer, around each write transaction instead: a waiter parks
 * in Atomics.wait and is woken the moment the holder releases, so a
 * collision costs microseconds. Turn commits, the bulk of the writes, come
 * from the turn writer (storage/sqlite/group-commit.ts) and from shards
 * committing a lone turn, which only try the lock (tryAcquire) and hand the
 * turn to the writer rather than wait; the rest are the storage threads'
 * upkeep and indexing and the shards' rare writes (summaries, deletes,
 * stalled turns).
 *
 * The word holds the owner's token (shard index + 1, or one of the tokens
 * below). If a shard or the writer dies while holding it, main releases it
 * on the dead thread's behalf.
 */
const FREE = 0;
/** Re-checks the word this often while waiting, in case a wake-up was missed. */
const WAIT_SLICE_MS = 50;

export function createWriteLockBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT);
}

/** The storage pool's threads share one token, outside the shards' (1..N). */
export const STORAGE_POOL_TOKEN = -1;

/** The turn writer thread's token (threads/writer/writer-thread.ts). */
export const WRITER_TOKEN = -2;

export function ownerToken(shardIndex: number): number {
  return shardIndex + 1;
}

export class WriteLock {
  readonly #word: Int32Array;
  readonly #token: number;

  constructor(buffer: SharedArrayBuffer, token: number) {
    this.#word = new Int32Array(buffer);
    this.#token = token;
  }

  acquire(): void {
    for (;;) {
      const seen = Atomics.compareExchange(this.#word, 0, FREE, this.#token);
      if (seen === FREE) return;
      Atomics.wait(this.#word, 0, seen, WAIT_SLICE_MS);
    }
  }

  /** Takes the lock if it is free, without waiting; whether it was taken. */
  tryAcquire(): boolean {
    return Atomics.compareExchange(this.#word, 0, FREE, this.#token) === FREE;
  }

  release(): void {
    Atomics.compareExchange(this.#word, 0, this.#token, FREE);
    Atomics.notify(this.#word, 0, 1);
  }

  /** Runs `fn` holding the lock. */
  with<T>(fn: () => T): T {
    this.acquire();
    try {
      return fn();
    } finally {
      this.release();
    }
  }

  /** Frees the lock if `token`'s owner (a dead shard) still holds it. Called by main. */
  static releaseFor(buffer: SharedArrayBuffer, token: number): void {
    const word = new Int32Array(buffer);
    if (Atomics.compareExchange(word, 0, token, FREE) === token) Atomics.notify(word, 0);
  }
}
