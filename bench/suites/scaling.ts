/**
 * Scaling across cores: echo turns per second when each turn is CPU-bound
 * (`cpu_us`), for workers = 1, 2, … up to the core count. Efficiency =
 * rate(N) / (N × rate(1)): 1.0 is perfect sharding. The load generator runs
 * on the same machine, so on few cores it competes with the shards.
 *
 * Then cheap turns: stored one-word echo turns per second (32 connections × 8
 * in flight) beside the same load with persistence off, at 1, 2, 4, 8 and 16
 * workers whatever the core count (contention for the one SQLite writer shows
 * with more shards than cores too; 1 worker says whether a lone shard would
 * do better committing on its own connection than through the writer thread). Stored turns must not fall as workers are
 * added, and the rate with persistence off must not fall from 8 to 16.
 */
import { availableParallelism } from 'node:os';
import { frameClient } from '../lib/clients.ts';
import { turnBody, type BenchContext } from '../lib/context.ts';
import { median, spread, throughput } from '../lib/load.ts';
import { startAgentd, type Proc } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';

const CPU_US = 2_000;
const ECHO_WORKERS = [1, 2, 4, 8, 16];

/** Daemons kept for the whole suite, one per configuration: started on first use, stopped at the end. */
class Daemons {
  readonly #live = new Map<string, Proc>();

  async get(key: string, start: () => Promise<Proc>): Promise<Proc> {
    let d = this.#live.get(key);
    if (d === undefined) {
      d = await start();
      this.#live.set(key, d);
    }
    return d;
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.#live.values()].map((d) => d.stop()));
    this.#live.clear();
  }
}

/**
 * Stored echo turns/s and persistence-off echo turns/s at each of
 * ECHO_WORKERS, interleaved round by round. With `--baseline DIR` the
 * baseline checkout's daemon runs the stored load too, right beside this
 * one's in every round (persistence off does not touch the store, so it runs
 * once), so a before/after ratio does not depend on when the machine was busy.
 * Each configuration's daemon starts once and serves every round (an idle
 * daemon costs the others nothing measurable; starting 30 cost most of the
 * suite's time), each round on pairs new to it.
 */
async function echoScaling(ctx: BenchContext, daemons: Daemons): Promise<void> {
  const rates = new Map<string, number[]>();
  const roots: (string | undefined)[] = ctx.baseline === undefined ? [undefined] : [undefined, ctx.baseline];
  const runs = [...roots.map((root) => ({ root, persist: true })), { root: undefined, persist: false }];
  for (let round = 0; round < ctx.report.rounds; round++) {
    for (const workers of round % 2 === 0 ? ECHO_WORKERS : [...ECHO_WORKERS].reverse()) {
      for (const { root, persist } of round % 2 === 0 ? runs : [...runs].reverse()) {
        const k = `${workers}:${persist}:${root ?? ''}`;
        const d = await daemons.get(k, () => startAgentd(workers, { assistant: { model: 'echo' } }, persist ? {} : { persist: false }, { root }));
        const cs = await Promise.all(Array.from({ length: 32 }, (_, i) => frameClient(d.unix, turnBody(`sc${round}-${i}`))));
        const r = await throughput(cs, 8, ctx.sizes.rateMs, ctx.sizes.warmupMs);
        for (const c of cs) c.close();
        rates.set(k, [...(rates.get(k) ?? []), r]);
      }
    }
    Report.progress(`scaling: echo turns, stored${ctx.baseline === undefined ? '' : ' (this checkout and the baseline)'} and persistence off, workers ${ECHO_WORKERS.join(', ')}: round ${round + 1}/${ctx.report.rounds}`);
  }
  for (const n of ECHO_WORKERS) {
    const stored = rates.get(`${n}:true:`)!;
    const off = rates.get(`${n}:false:`)!;
    ctx.report.add({ suite: 'scaling', name: `stored echo turns 32x8, ${n} workers`, unit: 'turns/s', value: median(stored), anchor: 'persist off', anchor_value: median(off), spread: spread(stored) });
    if (ctx.baseline === undefined) continue;
    const before = rates.get(`${n}:true:${ctx.baseline}`)!;
    ctx.report.add({ suite: 'scaling', name: `stored echo turns 32x8, ${n} workers, baseline checkout`, unit: 'turns/s', value: median(before), anchor: 'persist off', anchor_value: median(off), spread: spread(before) });
    ctx.report.add({ suite: 'scaling', name: `stored echo turns 32x8, ${n} workers, this checkout`, unit: 'turns/s', value: median(stored), anchor: 'baseline checkout', anchor_value: median(before), spread: spread(stored) });
  }
}

/** CPU-bound turns/s at each worker count up to the core count, against N times one worker's. */
async function cpuScaling(ctx: BenchContext, daemons: Daemons): Promise<void> {
  const cores = availableParallelism();
  const counts = [...new Set([1, 2, 4, 8, 16, cores].filter((n) => n <= cores))].sort((a, b) => a - b);
  const rates = new Map<number, number[]>();
  for (let round = 0; round < ctx.report.rounds; round++) {
    for (const workers of round % 2 === 0 ? counts : [...counts].reverse()) {
      const d = await daemons.get(`cpu:${workers}`, () => startAgentd(workers, { cpu: { model: 'echo', echo: { cpu_us: CPU_US } } }, { persist: false }));
      const cs = await Promise.all(Array.from({ length: 4 * workers }, (_, i) => frameClient(d.unix, () => ({ stream: { agent: 'cpu', content: 'work', sender: `s${i}` } }))));
      const r = await throughput(cs, 2, ctx.sizes.rateMs, ctx.sizes.warmupMs);
      for (const c of cs) c.close();
      rates.set(workers, [...(rates.get(workers) ?? []), r]);
    }
    Report.progress(`scaling: workers ${counts.join(', ')}: round ${round + 1}/${ctx.report.rounds}`);
  }
  const one = median(rates.get(1)!);
  for (const n of counts) {
    const r = median(rates.get(n)!);
    ctx.report.add({ suite: 'scaling', name: `cpu-bound echo turns, ${n} worker${n > 1 ? 's' : ''}`, unit: 'turns/s', value: r, anchor: n === 1 ? '' : `${n} x 1 worker`, anchor_value: n === 1 ? null : n * one, spread: spread(rates.get(n)!) });
  }
}

export async function run(ctx: BenchContext): Promise<void> {
  const daemons = new Daemons();
  try {
    await echoScaling(ctx, daemons);
    await daemons.stopAll(); // the CPU-bound rows count every core for themselves
    await cpuScaling(ctx, daemons);
  } finally {
    await daemons.stopAll();
  }
}
