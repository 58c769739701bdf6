/**
 * The shard's inbox. Main's messages arrive in batches, and one batch can
 * hold tens of thousands of turns (pipelined publishes, each fanned out to
 * every subscription). Handled whole, such a batch holds the event loop for
 * seconds, and everything behind it waits: a `list_active_conversations`
 * then timed out. Messages are handled in their order of arrival, for at most
 * SLICE_MS per event-loop turn; what arrives meanwhile is read between
 * slices. A question that reads the shard's state and orders against nothing
 * (`active_query`) is answered as soon as it arrives.
 */
import { Fifo } from './fifo.ts';

/** How long the messages of one event-loop turn may take before the shard reads its port again (at least one is handled). */
export const SLICE_MS = 10;

export class Inbox<M> {
  readonly #queue = new Fifo<M>();
  readonly #handle: (msg: M) => void;
  readonly #answersAtOnce: (msg: M) => boolean;
  #scheduled = false;
  readonly #next = (): void => {
    this.#scheduled = false;
    this.#drain();
  };

  /** `handle` takes each message in order; `answersAtOnce` picks those that may skip the queue. */
  constructor(handle: (msg: M) => void, answersAtOnce: (msg: M) => boolean) {
    this.#handle = handle;
    this.#answersAtOnce = answersAtOnce;
  }

  /** Messages waiting for their slice. */
  get waiting(): number {
    return this.#queue.size;
  }

  /** A batch from main: the first slice is handled now (a small batch waits for nothing), the rest in later event-loop turns. */
  take(batch: readonly M[]): void {
    for (const msg of batch) {
      if (this.#answersAtOnce(msg)) this.#handle(msg);
      else this.#queue.push(msg);
    }
    if (!this.#scheduled) this.#drain();
  }

  #drain(): void {
    const until = performance.now() + SLICE_MS;
    do {
      const msg = this.#queue.shift();
      if (msg === undefined) return;
      this.#handle(msg);
    } while (performance.now() < until);
    if (this.#queue.size > 0) {
      this.#scheduled = true;
      setImmediate(this.#next);
    }
  }
}
