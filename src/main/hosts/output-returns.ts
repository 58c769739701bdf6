/**
 * Hands a shard's sections buffers back to it once main has written them
 * (OutputBuffers in shared/threads/shard-messages.ts). Main allocates few
 * objects per byte it writes, so its young generation fills, and its
 * garbage is collected, rarely: without this, every batch of a long stream
 * waited in main as a dead buffer (about the size of the whole answer for
 * a 16 MiB echo stream).
 *
 * A buffer goes back only when every write of it has completed: a socket
 * write's callback runs once libuv is done with the bytes. A write that
 * never reports (a cluster-forwarded call, which queues views of the bytes)
 * keeps the buffer here, and the collector takes it as before.
 */
import type { Worker } from 'node:worker_threads';
import type { OutputBuffers } from '../../shared/threads/shard-messages.ts';

/** Where a shard's buffers are posted: its Worker. */
type ShardPort = Pick<Worker, 'postMessage'>;

/** Called once the bytes handed with it are written (or their connection is gone); calling it again does nothing. */
export type Written = () => void;

/** One sections buffer while its sections are written: counts the writes still holding it. */
export class OutputLease {
  /** The delivering loop's own hold, released by `done()` once every section is handed out. */
  #holds = 1;
  #done = false;
  readonly #onFree: () => void;

  constructor(onFree: () => void) {
    this.#onFree = onFree;
  }

  /** A hold for one write: the buffer is not handed back before it is released. */
  hold(): Written {
    this.#holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#release();
    };
  }

  /** Every section has been handed to its connection; calling it again does nothing. */
  done(): void {
    if (this.#done) return;
    this.#done = true;
    this.#release();
  }

  #release(): void {
    if (--this.#holds === 0) this.#onFree();
  }
}

/** Most buffers waiting to go back to one shard; beyond it they are left to the collector. */
const PENDING_LIMIT = 16;

/** Collects each shard's written buffers and posts them back together, once per event-loop turn. */
export class OutputReturns {
  readonly #pending = new Map<ShardPort, ArrayBuffer[]>();
  #scheduled = false;
  #returned = 0;
  readonly #flushNow = (): void => this.#flush();

  /** A lease on `buffer` from `worker`, whose batch the shard marked to come back (FrameBatch.sectionsReturn). */
  lease(worker: ShardPort, buffer: ArrayBuffer, isCurrent: () => boolean): OutputLease {
    return new OutputLease(() => {
      // A replaced shard's buffers are not sent to its successor: it never made them.
      if (isCurrent()) this.#add(worker, buffer);
    });
  }

  /** Buffers handed back to their shard since start (`get_stats` `output_buffers_returned`). */
  get returned(): number {
    return this.#returned;
  }

  #add(worker: ShardPort, buffer: ArrayBuffer): void {
    let list = this.#pending.get(worker);
    if (list === undefined) this.#pending.set(worker, (list = []));
    if (list.length >= PENDING_LIMIT) return;
    list.push(buffer);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flushNow);
    }
  }

  #flush(): void {
    this.#scheduled = false;
    const pending = [...this.#pending];
    this.#pending.clear();
    for (const [worker, buffers] of pending) {
      try {
        worker.postMessage({ type: 'output_buffers', buffers } satisfies OutputBuffers, buffers);
        this.#returned += buffers.length;
      } catch {
        // A post that cannot be made (DataCloneError: a buffer listed twice) is only a missed reuse: the shard allocates a new one.
      }
    }
  }
}
