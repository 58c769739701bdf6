/**
 * Dispatch latency: `ping` round trips with one request in flight, over UDS
 * and TCP; and turn latency: a one-word `stream` to its first frame and to
 * its `end`, beside agentd's own ping and Redis PING in the same rounds;
 * and a daemon's start, from spawning it to its ready line, beside a bare
 * `node` process's start to exit.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createHistogram } from 'node:perf_hooks';
import { frameClient, redisPingClient, type BenchClient } from '../lib/clients.ts';
import { PING, target, type BenchContext, type System } from '../lib/context.ts';
import { latency } from '../lib/load.ts';
import { startAgentd } from '../lib/processes.ts';

export async function run(ctx: BenchContext): Promise<void> {
  const n = ctx.sizes.latencyN;
  const warm = Math.min(1000, n / 4);
  for (const transport of ['unix', 'tcp'] as const) {
    await ctx.report.compare(
      'latency',
      ['p50', 'p99', 'p999'].map((p) => ({ name: `ping ${transport} ${p}`, unit: 'us' })),
      ctx.systems,
      async (sys) => {
        const c = sys.name === 'redis' ? await redisPingClient(target(sys, transport)) : await frameClient(target(sys, transport), () => PING);
        const r = await latency(c, n, warm);
        c.close();
        return [r.p50, r.p99, r.p999];
      },
    );
  }

  // Turn latency: agentd's one-word echo turn against agentd's ping and Redis PING.
  const agentd = ctx.systems.find((s) => s.name === 'agentd')!;
  const redis = ctx.systems.find((s) => s.name === 'redis');
  type Sys = { name: string; make: () => Promise<BenchClient>; kind: 'turn' | 'ping' };
  const systems: Sys[] = [
    // A new sender every 100 turns: a short conversation, as most are (a turn re-reads its whole history).
    { name: 'agentd', kind: 'turn', make: () => frameClient(agentd.proc.unix, (i) => ({ stream: { agent: 'assistant', content: 'hello', sender: `latency-${Math.floor(i / 100)}` } })) },
    { name: 'agentd ping', kind: 'ping', make: () => frameClient(agentd.proc.unix, () => PING) },
    ...(redis ? [{ name: 'redis', kind: 'ping' as const, make: () => redisPingClient((redis as System).proc.unix) }] : []),
  ];
  const turns = Math.max(500, n / 4);
  await ctx.report.compare(
    'latency',
    [
      { name: 'one-word turn, first frame p50', unit: 'us' },
      { name: 'one-word turn, end p50', unit: 'us' },
      { name: 'one-word turn, end p99', unit: 'us' },
    ],
    systems,
    async (sys) => {
      const c = await sys.make();
      const first = createHistogram();
      const end = createHistogram();
      for (let i = 0; i < turns + 100; i++) {
        const t = await c.timed();
        if (i < 100) continue; // warm-up
        first.record(Number(t.first - t.sent) || 1);
        end.record(Number(t.last - t.sent) || 1);
      }
      c.close();
      return [first.percentile(50) / 1000, end.percentile(50) / 1000, end.percentile(99) / 1000];
    },
  );
  await startupLatency(ctx);
}

/** A fresh daemon (a new home, echo) from spawn to its ready line; stopping it is not counted. */
async function startupLatency(ctx: BenchContext): Promise<void> {
  const bare = 'node -e "" (start to exit)';
  await ctx.report.compare('latency', [{ name: `daemon start to ready, ${ctx.workers} workers`, unit: 'ms' }], [{ name: 'agentd' }, { name: bare }], async (sys) => {
    const t0 = performance.now();
    if (sys.name === bare) {
      await once(spawn(process.execPath, ['-e', ''], { stdio: 'ignore' }), 'exit');
      return [performance.now() - t0];
    }
    const d = await startAgentd(ctx.workers, { assistant: { model: 'echo' } });
    const ms = performance.now() - t0;
    await d.stop();
    return [ms];
  });
}
