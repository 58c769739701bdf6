/**
 * A first-in-first-out queue on one array and a head index: O(1) push and
 * shift without Array#shift's O(n) move, compacted once the dead prefix is
 * both large and more than half of the array (after undici's queue).
 */
const COMPACT_AFTER = 1024;

export class Fifo<T> {
  #items: (T | undefined)[] = [];
  #head = 0;

  get size(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  peek(): T | undefined {
    return this.#items[this.#head];
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head++] = undefined; // let it be collected
    if (this.#head === this.#items.length) {
      this.#items.length = 0;
      this.#head = 0;
    } else if (this.#head >= COMPACT_AFTER && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** Removes every item matching `pred`, keeping the others in order; returns the removed ones in order. */
  removeWhere(pred: (item: T) => boolean): T[] {
    const kept: T[] = [];
    const removed: T[] = [];
    for (let i = this.#head; i < this.#items.length; i++) {
      const item = this.#items[i] as T;
      (pred(item) ? removed : kept).push(item);
    }
    if (removed.length > 0) {
      this.#items = kept;
      this.#head = 0;
    }
    return removed;
  }

  /** Removes and returns everything, in order. */
  drain(): T[] {
    const all = this.#items.slice(this.#head) as T[];
    this.#items = [];
    this.#head = 0;
    return all;
  }

  *[Symbol.iterator](): Iterator<T> {
    for (let i = this.#head; i < this.#items.length; i++) yield this.#items[i] as T;
  }
}
