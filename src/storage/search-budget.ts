/**
 * A search's budget (PROTOCOL §4.3): it ends at its deadline (the request's
 * arrival plus `search_timeout_ms`) or when main cancels it (its client
 * disconnected, or the daemon is closing), checked between the steps of
 * its work: candidate rows, message slices, windows. A storage thread runs
 * a search synchronously, so main cannot reach it but through memory both
 * threads see: one Int32 in a SharedArrayBuffer, set to 1 to cancel.
 */
import type { SearchOptions } from '../threads/storage/messages.ts';

export type SearchStopReason = 'timeout' | 'cancelled';

/** Thrown inside a search that ran out of its budget; the storage thread replies with its reason. */
export class SearchStopped extends Error {
  readonly reason: SearchStopReason;

  constructor(reason: SearchStopReason) {
    super(reason === 'timeout' ? 'the search ran past its budget' : 'the search was cancelled');
    this.name = 'SearchStopped';
    this.reason = reason;
  }
}

export class SearchBudget {
  readonly #deadline: number;
  readonly #cancel: Int32Array | null;

  constructor(deadline: number = Infinity, cancel: SharedArrayBuffer | null = null) {
    this.#deadline = deadline;
    this.#cancel = cancel === null ? null : new Int32Array(cancel);
  }

  /** The budget a search's options carry; none (unbounded) when they carry neither. */
  static of(o: Pick<SearchOptions, 'deadline' | 'cancel'>): SearchBudget {
    return new SearchBudget(o.deadline ?? Infinity, o.cancel ?? null);
  }

  /** Milliseconds left before the deadline (Infinity without one). */
  left(): number {
    return this.#deadline - Date.now();
  }

  /** Throws SearchStopped when the search was cancelled or its deadline passed. */
  check(): void {
    if (this.#cancel !== null && Atomics.load(this.#cancel, 0) !== 0) throw new SearchStopped('cancelled');
    if (Date.now() > this.#deadline) throw new SearchStopped('timeout');
  }
}

/** A budget that never runs out (searches outside a request: tests, tools). */
export const UNBOUNDED = new SearchBudget();

/** Sets a search's cancel flag (main's side of SearchBudget). */
export function cancelSearch(cancel: SharedArrayBuffer): void {
  Atomics.store(new Int32Array(cancel), 0, 1);
}
