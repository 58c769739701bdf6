/**
 * Merges a fast producer's text deltas into fewer frames. The first
 * SEPARATE_PER_BATCH deltas of a request in one outbox batch go out as they
 * are (a short answer keeps its per-word chunks); once a producer outruns
 * that within one batch — nothing can have been sent yet, so it is faster
 * than any socket — further deltas of the same kind are joined and go out as
 * one delta when something else is emitted, when 64 KiB are pending
 * (Utf8Scratch), or at the next event-loop turn. A 16 MiB echo stream is then a
 * few hundred frames rather than 8 million, each with its own object.
 */
import { Utf8Scratch } from '../utf8-scratch.ts';

export const SEPARATE_PER_BATCH = 64;

export class ChunkCoalescer {
  readonly #emit: (name: string, content: string) => void;
  readonly #batchNo: () => number;
  #batch = -1;
  #inBatch = 0;
  #pendingName = '';
  readonly #pending: Utf8Scratch;
  #scheduled = false;
  readonly #flushLater = (): void => {
    this.#scheduled = false;
    this.flush();
  };

  /** `batchNo` changes whenever the outbox hands a batch to main. */
  constructor(emit: (name: string, content: string) => void, batchNo: () => number) {
    this.#emit = emit;
    this.#batchNo = batchNo;
    this.#pending = new Utf8Scratch((joined) => this.#emit(this.#pendingName, joined));
  }

  add(name: string, content: string): void {
    if (this.#pending.bytes > 0 && name !== this.#pendingName) this.flush();
    const batch = this.#batchNo();
    if (batch !== this.#batch) {
      this.#batch = batch;
      this.#inBatch = 0;
    }
    if (this.#pending.bytes === 0 && this.#inBatch < SEPARATE_PER_BATCH) {
      this.#inBatch++;
      this.#emit(name, content);
      return;
    }
    this.#pendingName = name;
    this.#pending.add(content);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flushLater);
    }
  }

  /** Emits what is pending; called before any other event of the request. */
  flush(): void {
    this.#pending.take();
  }
}
