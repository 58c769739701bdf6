/**
 * Per-pair order while a conversation is settled with storage. While a
 * pair's conversation loads (or its deletion is written), requests for that
 * pair wait here and are handed back, in arrival order, once the work is
 * done: no request overtakes an earlier one of its pair, and a conversation
 * is never loaded twice at once. A pair in memory is never held, so the hot
 * path (a turn for a conversation in memory) never comes here.
 */
interface Held<M> {
  agent: string;
  waiting: M[];
  /** Settles once the pair was released (its waiting requests handed back). */
  released: Promise<void>;
}

export class PairGate<M> {
  readonly #held = new Map<string, Held<M>>();

  get size(): number {
    return this.#held.size;
  }

  /** The requests waiting on the pair `key` (push one to make it wait too), or undefined when the pair is not held. */
  waiting(key: string): M[] | undefined {
    return this.#held.get(key)?.waiting;
  }

  /**
   * Holds the pair `key` until `work` settles; then calls `release` with
   * the work's result and the requests that waited meanwhile, in order.
   */
  hold<T>(key: string, agent: string, work: Promise<T>, release: (result: PromiseSettledResult<T>, waiting: M[]) => void): void {
    const waiting: M[] = [];
    const released = work.then(
      (value): PromiseSettledResult<T> => ({ status: 'fulfilled', value }),
      (reason: unknown): PromiseSettledResult<T> => ({ status: 'rejected', reason }),
    ).then((result) => {
      this.#held.delete(key);
      release(result, waiting);
    });
    this.#held.set(key, { agent, waiting, released });
  }

  /** Settles once every pair of `agent` held now has been released; null when none is held. */
  releasedFor(agent: string): Promise<void> | null {
    if (this.#held.size === 0) return null;
    const pending = [...this.#held.values()].filter((h) => h.agent === agent).map((h) => h.released);
    return pending.length === 0 ? null : Promise.all(pending).then(() => {});
  }

  /** Every held pair's waiting requests. */
  queues(): IterableIterator<M[]> {
    return [...this.#held.values()].map((h) => h.waiting).values();
  }
}
