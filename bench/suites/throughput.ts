/**
 * Pipelined `ping` and echo turns per second, beside the floor (and Redis)
 * under the same pipelining; and CPU per request, all threads, from each
 * process's own CPU time.
 */
import { frameClient, redisPingClient, type BenchClient } from '../lib/clients.ts';
import { PING, target, turnBody, type BenchContext, type System } from '../lib/context.ts';
import { processCpuSeconds, throughputDetail } from '../lib/load.ts';

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
