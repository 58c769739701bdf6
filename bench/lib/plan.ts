/**
 * How long a bench run may take, and how it keeps to it: the rounds each
 * suite runs, the windows rates are counted over, and the time budget the
 * run reports against at the end.
 */
import { loadavg } from 'node:os';
import type { BenchContext } from './context.ts';

/** The whole of `npm run bench` on an idle 2-core machine; `--quick` gets its own. */
export const BUDGET_S = { full: 600, quick: 180 } as const;

/**
 * A suite still running after this long is abandoned: the processes it
 * started are ended and the run goes on to the next suite. A cap for a
 * suite that hangs (waiting for an event a loaded machine dropped, say),
 * generous enough that a slow suite on a crowded machine still finishes.
 */
export const SUITE_CAP_S = { full: 600, quick: 300 } as const;

/** Runs `suite`; resolves false when it outlived `capS` (it is then left to fail on its own, its processes ended). */
export async function withinCap(suite: () => Promise<void>, capS: number, onOver: () => void): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const over = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), capS * 1000)));
  const running = suite().then(() => true as const);
  try {
    const finished = await Promise.race([running, over]);
    if (!finished) {
      running.catch(() => undefined); // its clients fail once its processes end; that failure is expected now
      onOver();
    }
    return finished;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Rounds in a full run where 5 would cost too much: suites whose every round
 * starts fresh daemons, counts long windows or takes 8,000 samples a side
 * (latency). Their spreads stay within what a median of 3 alternating rounds
 * reads reliably; cheap suites keep 5. `--quick` runs 3 rounds everywhere.
 */
const FULL_ROUNDS: Record<string, number> = {
  turncost: 3,
  latency: 3,
  throughput: 3,
  scaling: 3,
  storage: 3,
  cluster: 3,
  floor: 3,
  http: 3,
  metrics: 3,
  openai: 3,
};

export function roundsFor(suite: string, quick: boolean): number {
  return quick ? 3 : (FULL_ROUNDS[suite] ?? 5);
}

/**
 * Rate windows. Rates here are thousands of requests a second, so a window
 * of 0.7 s counts thousands and its own sampling error is far below the
 * machine's noise, which the median of rounds answers, not longer windows.
 * The warm-up lets a fresh daemon's connections open and its first code
 * compile; it does not cover all of a fresh process's compilation, so a
 * suite whose ratio is a per-turn cost against a leaner process (floor)
 * warms both sides longer before counting. Latency takes 8,000 samples a
 * side: p999 still rests on eight.
 */
export function sizesFor(quick: boolean): BenchContext['sizes'] {
  return quick ? { latencyN: 2_000, rateMs: 500, warmupMs: 200 } : { latencyN: 8_000, rateMs: 700, warmupMs: 300 };
}

export interface SuiteTime {
  suite: string;
  seconds: number;
  /** The 1-minute load average when the suite ended: on a shared machine, why a suite ran long. */
  load: number;
}

export function suiteTime(suite: string, startedMs: number): SuiteTime {
  return { suite, seconds: Math.round((Date.now() - startedMs) / 100) / 10, load: Math.round(loadavg()[0]! * 10) / 10 };
}

/** The per-suite duration table and the total against the budget. */
export function durationTable(times: SuiteTime[], totalS: number, quick: boolean): string {
  const budget = quick ? BUDGET_S.quick : BUDGET_S.full;
  const lines = [
    '| suite | seconds | load average (1 min) at its end | rounds |',
    '|---|---|---|---|',
    ...times.map((t) => `| ${t.suite} | ${t.seconds.toFixed(1)} | ${t.load.toFixed(1)} | ${roundsFor(t.suite, quick)} |`),
  ];
  const verdict = totalS <= budget ? 'within' : 'OVER';
  lines.push('', `total ${totalS.toFixed(0)} s (startup and shutdown included): ${verdict} the ${budget} s budget of a${quick ? ' --quick' : ' full'} run on an idle 2-core machine; load average now ${loadavg().map((l) => l.toFixed(1)).join(', ')}`);
  return lines.join('\n');
}
