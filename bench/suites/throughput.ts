/**
 * Pipelined `ping` and echo turns per second, beside the floor (and Redis)
 * under the same pipelining; and CPU per request, all threads, from each
 * process's own CPU time; and echo turns under the daemon's malloc settings
 * against glibc's defaults.
 */
import { frameClient, redisPingClient, type BenchClient } from '../lib/clients.ts';
import { PING, target, turnBody, type BenchContext, type System } from '../lib/context.ts';
import { processCpuSeconds, throughputDetail } from '../lib/load.ts';
import { startAgentd } from '../lib/processes.ts';

async function clients(sys: System, count: number, body: (slot: string) => (i: number) => unknown): Promise<BenchClient[]> {
  const out: BenchClient[] = [];
  for (let i = 0; i < count; i++) out.push(sys.name === 'redis' ? await redisPingClient(sys.proc.unix) : await frameClient(target(sys, 'unix'), body(`c${i}`)));
  return out;
}

export async function run(ctx: BenchContext): Promise<void> {
  const { rateMs, warmupMs } = ctx.sizes;
  /** [requests/s, CPU µs per request] */
  const rate = async (sys: System, conns: number, inflight: number, body: (slot: string) => (i: number) => unknown): Promise<number[]> => {
    const cs = await clients(sys, conns, body);
    const cpu0 = processCpuSeconds(sys.proc.proc.pid!);
    const r = await throughputDetail(cs, inflight, rateMs, warmupMs);
    const cpu = processCpuSeconds(sys.proc.proc.pid!) - cpu0;
    for (const c of cs) c.close();
    return [r.rate, (cpu * 1e6) / r.completed];
  };
  const ping = () => () => PING;
  for (const [conns, inflight] of [[1, 64], [16, 8]] as const) {
    await ctx.report.compare(
      'throughput',
      [{ name: `ping pipelined ${conns}x${inflight}`, unit: 'req/s' }, { name: `ping pipelined ${conns}x${inflight}, CPU per request`, unit: 'us' }],
      ctx.systems,
      (sys) => rate(sys, conns, inflight, ping),
    );
  }
  // Echo turns against the floor answering the same requests with one frame: what
  // sharding, the agent loop, storage and six frames per turn cost over the cheapest reply.
  const noRedis = ctx.systems.filter((s) => s.name !== 'redis');
  for (const [conns, inflight] of [[1, 64], [32, 8]] as const) {
    await ctx.report.compare('throughput', [{ name: `echo turns ${conns}x${inflight}`, unit: 'turns/s' }], noRedis, async (sys) =>
      (await rate(sys, conns, inflight, (slot) => turnBody(slot))).slice(0, 1),
    );
  }
  // The daemon under its malloc settings (bin/malloc-defaults.sh) against the same build under
  // glibc's defaults: what the settings that bound a big request's memory cost on ordinary turns.
  // Two fresh daemons, each warmed by one unmeasured run, so neither has a head start.
  const echo = { assistant: { model: 'echo' } };
  const pair = [
    { name: 'agentd', sys: { name: 'agentd' as const, proc: await startAgentd(ctx.workers, echo) } },
    { name: 'agentd under glibc malloc defaults', sys: { name: 'agentd' as const, proc: await startAgentd(ctx.workers, echo, {}, { malloc: 'glibc' }) } },
  ];
  try {
    const turns = (p: (typeof pair)[number]): Promise<number[]> => rate(p.sys, 32, 8, (slot) => turnBody(slot));
    for (const p of pair) await turns(p);
    await ctx.report.compare('throughput', [{ name: 'echo turns 32x8, malloc settings', unit: 'turns/s' }, { name: 'CPU per echo turn 32x8, malloc settings', unit: 'us' }], pair, turns);
  } finally {
    await Promise.all(pair.map((p) => p.sys.proc.stop()));
  }
  // Against Redis PING at the same load (8 connections x 8 in flight): rate and CPU per request.
  const redis = ctx.systems.find((s) => s.name === 'redis');
  const agentd = ctx.systems.find((s) => s.name === 'agentd')!;
  if (redis !== undefined) {
    await ctx.report.compare(
      'throughput',
      [{ name: 'echo turns 8x8 (anchor: PING 8x8)', unit: 'req/s' }, { name: 'CPU per echo turn 8x8 (anchor: per PING)', unit: 'us' }],
      [agentd, redis],
      (sys) => (sys.name === 'redis' ? rate(sys, 8, 8, ping) : rate(sys, 8, 8, (slot) => turnBody(slot))),
    );
  }
}
