/**
 * Counts of what a shard's turns called, summed where they happen: one
 * tally per kind of call, provider or server, name and status, with its
 * count, seconds and a histogram's buckets. A shard sums its calls into
 * tallies and ships what accrued since its last frame batch (call-meter.ts);
 * main adds those into its own (call-metrics.ts) and renders them only
 * when scraped. So counting a call costs a map lookup and a few additions,
 * and nothing crosses threads per call.
 */

/** Seconds: a commit is a fraction of a millisecond; a model call may stream for minutes. */
export const SECONDS_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Turns per group commit. */
export const SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

export type TallyKind = 'model' | 'tool' | 'commit_batch' | 'evict' | 'compaction';
export type CallStatus = 'ok' | 'error' | 'cancelled';

export interface Tally {
  kind: TallyKind;
  /** model: the provider (`echo` for the built-in); tool: its MCP server, '' for a harness tool; compaction: what asked (auto, request); otherwise ''. */
  via: string;
  /** model: the model; tool: the tool's offered name; otherwise ''. */
  name: string;
  status: CallStatus;
  /** Calls (evict: conversations evicted). */
  n: number;
  seconds: number;
  /** Calls per SECONDS_BUCKETS bound, not cumulative; the last cell is past every bound. */
  buckets: Float64Array;
  /** model: tokens read and written. */
  inputTokens: number;
  outputTokens: number;
  /** commit_batch: turns committed, and commits per SIZE_BUCKETS bound (not cumulative, last cell past every bound). */
  size: number;
  sizes: Float64Array | null;
}

/** The cell of `value` in `bounds` (the last cell when it is past every bound). */
export function bucketOf(bounds: readonly number[], value: number): number {
  let lo = 0;
  let hi = bounds.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (value <= bounds[mid]!) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

function fresh(kind: TallyKind, via: string, name: string, status: CallStatus): Tally {
  return {
    kind, via, name, status, n: 0, seconds: 0, buckets: new Float64Array(SECONDS_BUCKETS.length + 1),
    inputTokens: 0, outputTokens: 0, size: 0, sizes: kind === 'commit_batch' ? new Float64Array(SIZE_BUCKETS.length + 1) : null,
  };
}

/** Tallies by kind, via, name and status. */
export class Tallies {
  readonly #byKey = new Map<string, Tally>();
  /**
   * The tally each kind used last: a shard's calls mostly repeat (one model,
   * one status), and comparing four strings is far cheaper than building and
   * hashing a key on every call.
   */
  readonly #last = new Map<TallyKind, Tally>();

  get size(): number {
    return this.#byKey.size;
  }

  /** The tally of one kind of call, made on first use. */
  get(kind: TallyKind, via: string, name: string, status: CallStatus): Tally {
    const last = this.#last.get(kind);
    if (last !== undefined && last.via === via && last.name === name && last.status === status) return last;
    const key = `${kind}\u0000${via}\u0000${name}\u0000${status}`;
    let t = this.#byKey.get(key);
    if (t === undefined) this.#byKey.set(key, (t = fresh(kind, via, name, status)));
    this.#last.set(kind, t);
    return t;
  }

  /** One call: its seconds, and for a model call its tokens. */
  add(kind: TallyKind, via: string, name: string, status: CallStatus, seconds: number, inputTokens = 0, outputTokens = 0): void {
    const t = this.get(kind, via, name, status);
    t.n++;
    t.seconds += seconds;
    t.buckets[bucketOf(SECONDS_BUCKETS, seconds)]!++;
    t.inputTokens += inputTokens;
    t.outputTokens += outputTokens;
  }

  /** Adds another thread's tally (what a shard shipped) into this one's. */
  merge(from: Tally): void {
    const t = this.get(from.kind, from.via, from.name, from.status);
    t.n += from.n;
    t.seconds += from.seconds;
    from.buckets.forEach((v, i) => (t.buckets[i]! += v));
    t.inputTokens += from.inputTokens;
    t.outputTokens += from.outputTokens;
    t.size += from.size;
    if (from.sizes !== null && t.sizes !== null) from.sizes.forEach((v, i) => (t.sizes![i]! += v));
  }

  values(): IterableIterator<Tally> {
    return this.#byKey.values();
  }

  /** Every tally, then none: what accrued since the last take. */
  take(): Tally[] {
    const out = [...this.#byKey.values()];
    this.#byKey.clear();
    this.#last.clear();
    return out;
  }
}
