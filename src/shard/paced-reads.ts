/**
 * Whole-conversation reads (`get_conversation_history` from storage) run one
 * per event-loop turn. With SQLite such a read is synchronous, and forty
 * pipelined reads of a big conversation done back to back held the shard's
 * loop for many seconds: its watchdog took it for stalled, and main got no
 * reply until all were encoded, so it could not see, and cut, a peer that
 * read none of them. Between two reads the loop runs: the heartbeat ticks,
 * the outbox hands the last reply to main, and once main has cut the
 * connection its reads still waiting are answered at once instead of run.
 */
export interface PacedRead {
  /** The connection the read answers. */
  conn: number;
  run(): void;
  /** Answers the request without reading (its connection closed). */
  drop(): void;
}

export class PacedReads {
  #waiting: PacedRead[] = [];
  /** A read ran in this event-loop turn: the next waits for the next turn. */
  #turnUsed = false;

  /** Runs `read` now if none ran in this event-loop turn, else after those before it, one per turn. */
  add(read: PacedRead): void {
    if (this.#turnUsed) {
      this.#waiting.push(read);
      return;
    }
    this.#turnUsed = true;
    setImmediate(this.#next);
    read.run();
  }

  /** Answers the closed connection's waiting reads without running them. */
  connClosed(conn: number): void {
    if (this.#waiting.length === 0) return;
    const keep: PacedRead[] = [];
    for (const read of this.#waiting) {
      if (read.conn === conn) read.drop();
      else keep.push(read);
    }
    this.#waiting = keep;
  }

  readonly #next = (): void => {
    const read = this.#waiting.shift();
    if (read === undefined) {
      this.#turnUsed = false;
      return;
    }
    setImmediate(this.#next);
    read.run();
  };
}
