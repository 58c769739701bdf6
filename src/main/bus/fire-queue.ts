/**
 * Fired turns waiting to be started. One publish fires every subscription of
 * its source, and pipelined publishes to many subscriptions add up: 500 of
 * them to 200 subscriptions are 100,000 turns. Started in one synchronous
 * run, they held main for seconds and reached each shard as one message of
 * tens of thousands of turns, so a `list_active_conversations` sent
 * meanwhile timed out. Here fires wait in one queue, in order, and they start
 * for at most SLICE_MS per event-loop turn: main answers other clients between
 * slices, and what it asks a shard between them travels ahead of the later
 * fires. An idle queue starts the first slice at once, so a lone publish
 * fires before it yields, as it always did.
 */

/** How long the fires of one event-loop turn may take (at least one starts). */
export const SLICE_MS = 10;

/** One publish's fires: `fire` starts one (false if it could not); `done` hears how many started. */
export interface FireBatch<T> {
  fires: readonly T[];
  fire(item: T): boolean;
  done(started: number): void;
}

interface Pending<T> {
  batch: FireBatch<T>;
  next: number;
  started: number;
}

export class FireQueue {
  #queue: Pending<unknown>[] = [];
  #head = 0;
  #scheduled = false;
  #draining = false;
  readonly #drainLater = (): void => {
    this.#scheduled = false;
    this.#drain();
  };

  /** Fires not started yet, over all publishes. */
  get waiting(): number {
    let n = 0;
    for (let i = this.#head; i < this.#queue.length; i++) n += this.#queue[i]!.batch.fires.length - this.#queue[i]!.next;
    return n;
  }

  add<T>(batch: FireBatch<T>): void {
    if (batch.fires.length === 0) return batch.done(0);
    this.#queue.push({ batch, next: 0, started: 0 } as Pending<unknown>);
    if (!this.#scheduled && !this.#draining) this.#drain();
  }

  #drain(): void {
    this.#draining = true;
    try {
      this.#slice();
    } finally {
      this.#draining = false;
    }
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
      return;
    }
    this.#scheduled = true;
    setImmediate(this.#drainLater);
  }

  #slice(): void {
    const until = performance.now() + SLICE_MS;
    let more = true;
    while (more && this.#head < this.#queue.length) {
      const p = this.#queue[this.#head]!;
      const { fires, fire } = p.batch;
      while (more && p.next < fires.length) {
        if (fire(fires[p.next++])) p.started++;
        more = performance.now() < until;
      }
      if (p.next < fires.length) break;
      this.#queue[this.#head++] = undefined as unknown as Pending<unknown>; // let it be collected
      p.batch.done(p.started);
    }
  }
}
