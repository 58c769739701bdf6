/**
 * An async iterator fed by pushes (after nats.js queued_iterator): the
 * producer pushes, the single consumer awaits. Ending early with `break`
 * runs `onReturn`, so the owner can clean up (close a subscription, discard
 * the rest of a stream).
 */
export class QueuedIterator<T> implements AsyncIterableIterator<T> {
  #items: T[] = [];
  #done = false;
  #error: Error | null = null;
  #wake: (() => void) | null = null;
  #consumed = false;
  #onReturn: (() => void) | null;

  constructor(onReturn: (() => void) | null = null) {
    this.#onReturn = onReturn;
  }

  push(item: T): void {
    if (this.#done) return;
    this.#items.push(item);
    this.#notify();
  }

  /** Ends normally: queued items are still delivered. */
  end(): void {
    this.#done = true;
    this.#notify();
  }

  /** Ends with an error, thrown after the queued items. */
  fail(err: Error): void {
    if (this.#done) return;
    this.#error = err;
    this.#done = true;
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  async next(): Promise<IteratorResult<T>> {
    for (;;) {
      if (this.#items.length > 0) return { value: this.#items.shift()!, done: false };
      if (this.#done) {
        if (this.#error !== null) {
          const err = this.#error;
          this.#error = null;
          throw err;
        }
        return { value: undefined, done: true };
      }
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  async return(): Promise<IteratorResult<T>> {
    const wasDone = this.#done;
    this.#done = true;
    this.#items = [];
    if (!wasDone) this.#onReturn?.();
    this.#onReturn = null;
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    if (this.#consumed) throw new Error('this stream already has a consumer');
    this.#consumed = true;
    return this;
  }
}
