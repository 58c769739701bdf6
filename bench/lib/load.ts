/**
 * The closed-loop load generator: a fixed number of requests in flight,
 * latencies in perf_hooks histograms (nanoseconds), rates from a count over
 * a fixed window after a warm-up.
 */
import { createHistogram } from 'node:perf_hooks';
import { readdirSync, readFileSync } from 'node:fs';
import type { BenchClient } from './clients.ts';

/** Linux reports process CPU in clock ticks of 1/100 s on every platform Node supports there. */
const CLOCK_TICKS = 100;

export interface LatencyResult {
  p50: number;
  p99: number;
  p999: number;
  /** Microseconds. */
  unit: 'us';
}

/** One request in flight: `n` sequential round trips after `warmup` unmeasured ones. */
export async function latency(client: BenchClient, n: number, warmup: number): Promise<LatencyResult> {
  await warmFor(client, warmup, Infinity);
  const h = createHistogram();
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await client.call();
    h.record(Number(process.hrtime.bigint() - t0) || 1);
  }
  return { p50: h.percentile(50) / 1000, p99: h.percentile(99) / 1000, p999: h.percentile(99.9) / 1000, unit: 'us' };
}

/** `n` unmeasured round trips one at a time, or fewer if `maxMs` runs out first. */
export async function warmFor(client: BenchClient, n: number, maxMs: number): Promise<void> {
  const until = Date.now() + maxMs;
  for (let made = 0; made < n && Date.now() < until; made++) await client.call();
}

/** `inflight` requests in flight on each client for `ms` after `warmupMs`; returns requests per second. */
export async function throughput(clients: BenchClient[], inflight: number, ms: number, warmupMs: number): Promise<number> {
  return (await throughputDetail(clients, inflight, ms, warmupMs)).rate;
}

/**
 * As throughput(), with the number of requests completed in all (warm-up included) for per-request costs,
 * and the measured window: its count and bounds in microseconds of the monotonic clock (the clock of `--cpu-prof`).
 */
export async function throughputDetail(
  clients: BenchClient[],
  inflight: number,
  ms: number,
  warmupMs: number,
  /** Read at the window's start and end (e.g. a process's CPU seconds); the difference comes back as window.probe. */
  probe: () => number = () => 0,
): Promise<{ rate: number; completed: number; window: { count: number; fromUs: number; toUs: number; probe: number } }> {
  let counting = false;
  let count = 0;
  let completed = 0;
  let stop = false;
  const loops: Promise<void>[] = [];
  for (const c of clients) {
    for (let k = 0; k < inflight; k++) {
      loops.push(
        (async () => {
          while (!stop) {
            await c.call();
            completed++;
            if (counting) count++;
          }
        })(),
      );
    }
  }
  // Handled from the start: a server that dies mid-window fails the run at its end, not as an unhandled rejection.
  const all = Promise.all(loops);
  all.catch(() => {});
  await new Promise((r) => setTimeout(r, warmupMs));
  counting = true;
  const p0 = probe();
  const t0 = process.hrtime.bigint();
  await new Promise((r) => setTimeout(r, ms));
  counting = false;
  const t1 = process.hrtime.bigint();
  const p1 = probe();
  const seconds = Number(t1 - t0) / 1e9;
  const rate = count / seconds;
  stop = true;
  await all;
  return { rate, completed, window: { count, fromUs: Number(t0 / 1000n), toUs: Number(t1 / 1000n), probe: p1 - p0 } };
}

/**
 * CPU seconds a process's threads have used so far (Linux /proc; 0 elsewhere).
 * Each live thread's schedstat counts nanoseconds, where /proc/PID/stat counts
 * ticks (10 ms): a window of a few tens of milliseconds would read in steps of
 * a third of itself. A thread that ends takes its count with it, so a window
 * is read right only while the process keeps its threads (the daemons and
 * anchors under bench do); without schedstat, the process's ticks.
 */
export function processCpuSeconds(pid: number): number {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  let ns = 0;
  let read = 0;
  for (const tid of tids) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'latin1').split(' ', 1)[0]);
      read++;
    } catch {
      // the thread ended between the listing and the read, or the kernel keeps no schedstat
    }
  }
  return read > 0 ? ns / 1e9 : processTickSeconds(pid);
}

/** CPU seconds from /proc/PID/stat, in ticks, threads that ended included. */
function processTickSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

/** Resident memory of a process in bytes (Linux /proc; 0 elsewhere). */
export function residentBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Spread as (max - min) / median, for the table. */
export function spread(xs: number[]): number {
  const m = median(xs);
  return m === 0 ? 0 : (Math.max(...xs) - Math.min(...xs)) / m;
}
