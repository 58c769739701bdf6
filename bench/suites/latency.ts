/** Dispatch latency: `ping` round trips with one request in flight, over UDS and TCP. */
import { frameClient, redisPingClient } from '../lib/clients.ts';
import { PING, target, type BenchContext } from '../lib/context.ts';
import { latency } from '../lib/load.ts';

export async function run(ctx: BenchContext): Promise<void> {
  const n = ctx.sizes.latencyN;
  for (const transport of ['unix', 'tcp'] as const) {
    await ctx.report.compare(
      'latency',
      ['p50', 'p99', 'p999'].map((p) => ({ name: `ping ${transport} ${p}`, unit: 'us' })),
      ctx.systems,
      async (sys) => {
        const c = sys.name === 'redis' ? await redisPingClient(target(sys, transport)) : await frameClient(target(sys, transport), () => PING);
        const r = await latency(c, n, Math.min(1000, n / 4));
        c.close();
        return [r.p50, r.p99, r.p999];
      },
    );
  }
}
