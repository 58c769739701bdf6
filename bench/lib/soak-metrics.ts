/**
 * The soak run's measurements: turns and their latencies per interval (from
 * the load's side), the daemon's resident memory, main-thread heap, open file
 * descriptors and WAL size (from /proc, the probe file and the home), and
 * the trend rule that decides whether a series grew beyond its bound.
 */
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { residentBytes, median } from './load.ts';

/** Turns completed and their latencies, since the last snapshot. */
export class TurnMeter {
  #turns = 0;
  #latency: RecordableHistogram = createHistogram();

  /** One turn acknowledged `ns` nanoseconds after it was sent. */
  record(ns: bigint): void {
    this.#turns++;
    this.#latency.record(Number(ns) || 1);
  }

  /** Turns and p50 / p99 latency (ms) since the last call; starts a new interval. */
  take(): { turns: number; p50Ms: number | null; p99Ms: number | null } {
    const some = this.#turns > 0;
    const out = { turns: this.#turns, p50Ms: some ? this.#latency.percentile(50) / 1e6 : null, p99Ms: some ? this.#latency.percentile(99) / 1e6 : null };
    this.#turns = 0;
    this.#latency = createHistogram();
    return out;
  }
}

/** One interval's line. */
export interface Sample {
  /** Seconds since the load started, at the end of the interval. */
  at_s: number;
  turns_per_s: number;
  p99_ms: number | null;
  rss_bytes: number;
  /** The daemon's main-thread V8 heap in use (workers' heaps show in RSS only); null without the probe. */
  heap_bytes: number | null;
  open_fds: number | null;
  wal_bytes: number;
  /** From get_stats when the daemon reports it; null otherwise. */
  queued_turns: number | null;
  /** Diagnostics, not judged: the searcher's p50 `search_sessions` latency (its cost grows with the data it ranks), */
  search_p50_ms: number | null;
  /** the daemon's CPU (all threads) as a share of one core over the interval, */
  cpu_percent: number | null;
  /** and the machine's one-minute load average (other work on a shared machine moves every figure). */
  load_avg: number;
}

export function openFds(pid: number): number | null {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
}

export function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** The heap figure the probe preloaded into the daemon writes every second (bench/soak-probe.mjs). */
export function probedHeap(path: string): number | null {
  try {
    return (JSON.parse(readFileSync(path, 'utf8')) as { heapUsed: number }).heapUsed;
  } catch {
    return null;
  }
}

export { residentBytes };

/**
 * A bound on a series: the median of its last third may exceed the median of
 * its first third (the first interval, the warm-up, left out) by at most
 * `factor` × first + `slack`. For turns/s the direction is reversed: the last
 * third must keep at least `factor` × the first.
 */
export interface Bound {
  series: keyof Omit<Sample, 'at_s'>;
  factor: number;
  slack: number;
  /** 'up': fails when it grows beyond; 'down': fails when it falls below. */
  direction: 'up' | 'down';
  /** How the bound reads in the report. */
  text: string;
}

export interface TrendVerdict {
  series: string;
  first: number;
  last: number;
  limit: number;
  ok: boolean;
  bound: string;
}

/** Applies `bound` to the samples; null when the series has too few values (or none) to judge. */
export function judge(samples: Sample[], bound: Bound): TrendVerdict | null {
  const xs = samples.slice(1).map((s) => s[bound.series]).filter((x): x is number => typeof x === 'number');
  if (xs.length < 3) return null;
  const third = Math.max(1, Math.floor(xs.length / 3));
  const first = median(xs.slice(0, third));
  const last = median(xs.slice(-third));
  const limit = bound.direction === 'up' ? first * bound.factor + bound.slack : first * bound.factor - bound.slack;
  const ok = bound.direction === 'up' ? last <= limit : last >= limit;
  return { series: bound.series, first, last, limit, ok, bound: bound.text };
}
