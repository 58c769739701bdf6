/**
 * A turn's cancellation: a reason once cancelled, and an AbortSignal made
 * only when something asks for one. Creating an AbortController costs a few
 * microseconds (measured: ~5% of a shard's time on echo turns), and most
 * turns never wait on a signal; those that do (timers, HTTP, tools) get a
 * real one, already aborted if the turn was cancelled first.
 */
export class Cancellation {
  #reason: Error | null = null;
  #controller: AbortController | null = null;

  get aborted(): boolean {
    return this.#reason !== null;
  }

  /** Why the turn was cancelled; empty while it was not. */
  get reason(): string {
    return this.#reason?.message ?? '';
  }

  cancel(reason: string): void {
    if (this.#reason !== null) return;
    this.#reason = new Error(reason);
    this.#controller?.abort(this.#reason);
  }

  throwIfAborted(): void {
    if (this.#reason !== null) throw this.#reason;
  }

  get signal(): AbortSignal {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#reason !== null) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }
}
