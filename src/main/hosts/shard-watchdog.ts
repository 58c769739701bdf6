/**
 * Detects a shard whose event loop is stuck in synchronous work (a runaway
 * tool, a model burning CPU): such a shard answers no message, so it cannot
 * be asked. Instead each shard's timer bumps a shared counter (Heartbeat.BEAT)
 * and this timer on main checks that it moved; a shard whose counter has not
 * moved for `stallMs` is reported once. A slow main only delays the check: the
 * time is measured from the last change main saw, not from a missed deadline.
 */
import { Heartbeat } from '../../shared/threads/heartbeat.ts';

interface Watched {
  cells: Int32Array;
  beat: number;
  /** performance.now() when `beat` last changed. */
  changedAt: number;
}

export class ShardWatchdog {
  readonly #stallMs: number;
  readonly #onStall: (shard: number) => void;
  readonly #watched = new Map<number, Watched>();
  #timer: NodeJS.Timeout | null = null;

  constructor(stallMs: number, onStall: (shard: number) => void) {
    this.#stallMs = stallMs;
    this.#onStall = onStall;
  }

  /** How often shards beat and main checks: four chances to see a beat within one stall period. */
  get intervalMs(): number {
    return Math.max(10, Math.floor(this.#stallMs / 4));
  }

  /** Starts watching a shard that said `ready`. */
  watch(shard: number, cells: Int32Array): void {
    this.#watched.set(shard, { cells, beat: Atomics.load(cells, Heartbeat.BEAT), changedAt: performance.now() });
    if (this.#timer === null) {
      this.#timer = setInterval(() => this.#check(), this.intervalMs);
      this.#timer.unref();
    }
  }

  unwatch(shard: number): void {
    this.#watched.delete(shard);
  }

  stop(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#watched.clear();
  }

  #check(): void {
    const now = performance.now();
    for (const [shard, w] of this.#watched) {
      const beat = Atomics.load(w.cells, Heartbeat.BEAT);
      if (beat !== w.beat) {
        w.beat = beat;
        w.changedAt = now;
      } else if (now - w.changedAt >= this.#stallMs) {
        this.#watched.delete(shard);
        this.#onStall(shard);
      }
    }
  }
}
