/**
 * Scaling across cores: echo turns per second when each turn is CPU-bound
 * (`cpu_us`), for workers = 1, 2, … up to the core count. Efficiency =
 * rate(N) / (N × rate(1)): 1.0 is perfect sharding. The load generator runs
 * on the same machine, so on few cores it competes with the shards.
 */
import { availableParallelism } from 'node:os';
import { frameClient } from '../lib/clients.ts';
import type { BenchContext } from '../lib/context.ts';
import { median, spread, throughput } from '../lib/load.ts';
import { startAgentd } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';

const CPU_US = 2_000;

export async function run(ctx: BenchContext): Promise<void> {
  const cores = availableParallelism();
  const counts = [...new Set([1, 2, 4, 8, 16, cores].filter((n) => n <= cores))].sort((a, b) => a - b);
  const rates = new Map<number, number[]>();
  for (let round = 0; round < ctx.report.rounds; round++) {
    for (const workers of round % 2 === 0 ? counts : [...counts].reverse()) {
      const d = await startAgentd(workers, { cpu: { model: 'echo', echo: { cpu_us: CPU_US } } }, { persist: false });
      try {
        const cs = await Promise.all(Array.from({ length: 4 * workers }, (_, i) => frameClient(d.unix, () => ({ stream: { agent: 'cpu', content: 'work', sender: `s${i}` } }))));
        const r = await throughput(cs, 2, ctx.sizes.rateMs, ctx.sizes.warmupMs);
        for (const c of cs) c.close();
        rates.set(workers, [...(rates.get(workers) ?? []), r]);
      } finally {
        await d.stop();
      }
    }
    Report.progress(`scaling: workers ${counts.join(', ')}: round ${round + 1}/${ctx.report.rounds}`);
  }
  const one = median(rates.get(1)!);
  for (const n of counts) {
    const r = median(rates.get(n)!);
    ctx.report.add({ suite: 'scaling', name: `cpu-bound echo turns, ${n} worker${n > 1 ? 's' : ''}`, unit: 'turns/s', value: r, anchor: n === 1 ? '' : `${n} x 1 worker`, anchor_value: n === 1 ? null : n * one, spread: spread(rates.get(n)!) });
  }
}
