/**
 * agentd beside the design floor (bench/design-floor/): a minimal server of
 * agentd's exact shape (decode on main, hash the pair to a worker, store in
 * SQLite with FTS5, encode with msgpackr, post the bytes back), driven by the
 * same load client in alternating rounds. The floor is the least this design
 * can do, so each ratio says how far agentd is from its own limit.
 *
 *   - 8 connections x 8 in flight over 4,096 pairs (history stays short), floor
 *     indexing in the turn's commit: turns/s and the process's CPU per turn;
 *   - one turn at a time on one pair, floor indexing after the reply: `end`
 *     p50 and CPU per turn;
 *   - four consecutive windows over 32 pairs whose histories grow, on a fresh
 *     daemon each round: last window's turns/s over the first's (1.0 = flat).
 */
import { frameClient, type BenchClient } from '../lib/clients.ts';
import type { BenchContext } from '../lib/context.ts';
import { median, processCpuSeconds, spread, throughputDetail } from '../lib/load.ts';
import { startAgentd, startDesignFloor, type Proc } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';

const ECHO = { assistant: { model: 'echo' } };

type Start = () => Promise<Proc>;
interface Candidate {
  name: string;
  start: Start;
}

const turn = (sender: string) => ({ stream: { agent: 'assistant', content: 'hello', sender } });

/** Turns/s and CPU µs per turn with `conns` x `inflight` in flight; senders from `sender(slot, i)`. */
async function load(p: Proc, conns: number, inflight: number, ms: number, warmupMs: number, sender: (slot: number, i: number) => string): Promise<number[]> {
  const cs = await Promise.all(Array.from({ length: conns }, (_, slot) => frameClient(p.unix, (i) => turn(sender(slot, i)))));
  const r = await throughputDetail(cs, inflight, ms, warmupMs, () => processCpuSeconds(p.proc.pid!));
  for (const c of cs) c.close();
  return [r.rate, (r.window.probe * 1e6) / r.window.count];
}

/** One turn at a time on one pair: `end` p50 in µs and CPU µs per turn. */
async function alone(p: Proc, n: number): Promise<number[]> {
  const c: BenchClient = await frameClient(p.unix, () => turn('alone'));
  for (let i = 0; i < Math.min(200, n); i++) await c.call();
  const times: number[] = [];
  const cpu0 = processCpuSeconds(p.proc.pid!);
  for (let i = 0; i < n; i++) {
    const t = await c.timed();
    times.push(Number(t.last - t.sent) / 1000);
  }
  const cpu = processCpuSeconds(p.proc.pid!) - cpu0;
  c.close();
  return [median(times), (cpu * 1e6) / n];
}

/** Runs `measure` on a fresh process of each candidate, round by round, order alternating. */
async function fresh(ctx: BenchContext, suite: string, metrics: { name: string; unit: string }[], candidates: Candidate[], measure: (p: Proc) => Promise<number[]>, rounds = ctx.report.rounds): Promise<void> {
  const samples = new Map(candidates.map((c) => [c.name, metrics.map((): number[] => [])]));
  for (let round = 0; round < rounds; round++) {
    for (const c of round % 2 === 0 ? candidates : [...candidates].reverse()) {
      const p = await c.start();
      try {
        (await measure(p)).forEach((v, k) => samples.get(c.name)![k]!.push(v));
      } finally {
        await p.stop();
      }
    }
    Report.progress(`${suite}: ${metrics[0]!.name}: round ${round + 1}/${rounds}`);
  }
  const [ours, ...anchors] = candidates;
  metrics.forEach((m, k) => {
    const mine = samples.get(ours!.name)![k]!;
    for (const a of anchors) {
      ctx.report.add({ suite, name: m.name, unit: m.unit, value: median(mine), anchor: a.name, anchor_value: median(samples.get(a.name)![k]!), spread: spread(mine) });
    }
  });
}

/** Four back-to-back windows on one fresh process; returns last / first turns/s. */
async function growth(p: Proc, ms: number): Promise<number[]> {
  const rates: number[] = [];
  for (let w = 0; w < 4; w++) rates.push((await load(p, 8, 8, ms, w === 0 ? 200 : 0, (slot, i) => `g${slot}-${i % 4}`))[0]!);
  return [rates[3]! / rates[0]!, rates[0]!];
}

export async function run(ctx: BenchContext): Promise<void> {
  const { rateMs, warmupMs } = ctx.sizes;
  const agentd: Candidate = { name: 'agentd', start: () => startAgentd(ctx.workers, ECHO) };
  const inCommit: Candidate = { name: 'design floor (index in commit)', start: () => startDesignFloor(ctx.workers, 'commit') };
  const afterReply: Candidate = { name: 'design floor (index after reply)', start: () => startDesignFloor(ctx.workers, 'after') };

  await fresh(ctx, 'floor', [{ name: 'stored turns 8x8 over 4,096 pairs', unit: 'turns/s' }, { name: 'CPU per stored turn 8x8', unit: 'us' }], [agentd, inCommit], (p) =>
    load(p, 8, 8, rateMs, warmupMs, (slot, i) => `p${slot}-${i % 512}`),
  );
  const n = ctx.quick ? 500 : 2_000;
  await fresh(ctx, 'floor', [{ name: 'one turn alone, end p50', unit: 'us' }, { name: 'one turn alone, CPU per turn', unit: 'us' }], [agentd, afterReply], (p) => alone(p, n));
  await fresh(
    ctx,
    'floor',
    [{ name: 'growing histories: last / first of 4 windows (32 pairs, 8x8)', unit: 'ratio' }, { name: 'growing histories: first window', unit: 'turns/s' }],
    [agentd, inCommit],
    (p) => growth(p, rateMs * 2),
    ctx.quick ? 1 : 3,
  );
}
