/**
 * Requests in flight per connection, so that one client cannot pile up work
 * (and the replies it will be owed) without bound: a request counts from its
 * dispatch until its LAST frame has been handed to the connection's socket.
 * One counter per connection, touched once when a request starts and once
 * when it ends; never per frame.
 */
import { tooMany } from '../limits.ts';

/** What a stream's owner needs of the budget: an open stream counts as one request in flight. */
export type ConnectionBudget = Pick<InflightBudget, 'take' | 'release'>;

export class InflightBudget {
  readonly max: number;
  readonly #held = new Map<number, number>();

  constructor(max: number) {
    this.max = max;
  }

  /** Counts one more request for `conn`, or throws 429 (nothing counted) when it already holds `max`. */
  take(conn: number): void {
    const held = this.#held.get(conn) ?? 0;
    // Logged like every 429 (limit-log.ts), so operators see a client hitting it.
    if (held >= this.max) throw tooMany('requests in flight on this connection', this.max, 'max_inflight_per_connection');
    this.#held.set(conn, held + 1);
  }

  /** One of `conn`'s requests has had its LAST frame. */
  release(conn: number): void {
    const held = this.#held.get(conn);
    if (held === undefined) return;
    if (held <= 1) this.#held.delete(conn);
    else this.#held.set(conn, held - 1);
  }
}
