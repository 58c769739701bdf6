/**
 * agentd beside the design floor (bench/design-floor/): a minimal server of
 * agentd's exact shape (decode on main, hash the pair to a worker, store in
 * SQLite with FTS5, encode with msgpackr, post the bytes back), driven by the
 * same load client in alternating rounds. The floor is the least this design
 * can do, so each ratio says how far agentd is from its own limit.
 *
 * Each candidate starts once and is warmed before any round counts: a fresh
 * process spends its first seconds compiling its hot code (V8's optimizing
 * compiler runs on background threads, and the process's CPU counts them),
 * and agentd has more code on a turn's path than the floor, so a window just
 * after start measures mostly compilation. The first window after start is
 * kept as its own row, so that cost stays visible. Then, round by round:
 *
 *   - 8 connections x 8 in flight over 4,096 pairs new to the round (history
 *     stays short), floor indexing in the turn's commit: turns/s and the
 *     process's CPU per turn;
 *   - one turn at a time on a pair new to the round, floor indexing after the
 *     reply: `end` p50 and CPU per turn;
 *   - four consecutive windows over 32 pairs new to the round, whose
 *     histories grow: last window's turns/s over the first's (1.0 = flat).
 */
import { frameClient, type BenchClient } from '../lib/clients.ts';
import type { BenchContext } from '../lib/context.ts';
import { median, processCpuSeconds, spread, throughputDetail } from '../lib/load.ts';
import { startAgentd, startDesignFloor, type Proc } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';

const ECHO = { assistant: { model: 'echo' } };
/** Load before any round counts: past the optimizing compiler's burst on both sides (a few seconds of turns). */
const WARM_MS = 3_000;

interface Candidate {
  name: string;
  proc: Proc;
}

interface Metric {
  name: string;
  unit: string;
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
async function alone(p: Proc, sender: string, n: number): Promise<number[]> {
  const c: BenchClient = await frameClient(p.unix, () => turn(sender));
  await c.call(); // the pair's first turn creates its conversation
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

/** Four back-to-back windows over 32 pairs new to the round; returns last / first turns/s and the first. */
async function growth(p: Proc, round: number, ms: number): Promise<number[]> {
  const rates: number[] = [];
  for (let w = 0; w < 4; w++) rates.push((await load(p, 8, 8, ms, 0, (slot, i) => `g${round}-${slot}-${i % 4}`))[0]!);
  return [rates[3]! / rates[0]!, rates[0]!];
}

/** `measure` on each candidate, round by round, the order alternating; one row per metric per anchor. */
async function rounds(ctx: BenchContext, metrics: Metric[], candidates: Candidate[], measure: (p: Proc, round: number) => Promise<number[]>, count = ctx.report.rounds): Promise<void> {
  const samples = new Map(candidates.map((c) => [c.name, metrics.map((): number[] => [])]));
  for (let round = 0; round < count; round++) {
    for (const c of round % 2 === 0 ? candidates : [...candidates].reverse()) {
      (await measure(c.proc, round)).forEach((v, k) => samples.get(c.name)![k]!.push(v));
    }
    Report.progress(`floor: ${metrics[0]!.name}: round ${round + 1}/${count}`);
  }
  record(ctx, metrics, samples, candidates);
}

function record(ctx: BenchContext, metrics: Metric[], samples: Map<string, number[][]>, [ours, ...anchors]: Candidate[]): void {
  metrics.forEach((m, k) => {
    const mine = samples.get(ours!.name)![k]!;
    for (const a of anchors) {
      ctx.report.add({ suite: 'floor', name: m.name, unit: m.unit, value: median(mine), anchor: a.name, anchor_value: median(samples.get(a.name)![k]!), spread: spread(mine) });
    }
  });
}

/** Starts the three processes; each one's first window after start is the fresh-process sample, then it warms. */
async function startAll(ctx: BenchContext, started: Proc[]): Promise<{ agentd: Candidate; inCommit: Candidate; afterReply: Candidate; fresh: Map<string, number[][]> }> {
  const { rateMs, warmupMs } = ctx.sizes;
  const specs = [
    ['agentd', () => startAgentd(ctx.workers, ECHO)],
    ['design floor (index in commit)', () => startDesignFloor(ctx.workers, 'commit')],
    ['design floor (index after reply)', () => startDesignFloor(ctx.workers, 'after')],
  ] as const;
  const fresh = new Map<string, number[][]>();
  const out: Candidate[] = [];
  for (const [name, start] of specs) {
    const proc = await start();
    started.push(proc);
    const [, cpu] = await load(proc, 8, 8, rateMs, warmupMs, (slot, i) => `fresh${slot}-${i % 512}`);
    fresh.set(name, [[cpu!]]);
    await load(proc, 8, 8, ctx.quick ? WARM_MS / 3 : WARM_MS, 0, (slot, i) => `warm${slot}-${i % 512}`);
    await alone(proc, 'warm-alone', 500);
    out.push({ name, proc });
  }
  return { agentd: out[0]!, inCommit: out[1]!, afterReply: out[2]!, fresh };
}

export async function run(ctx: BenchContext): Promise<void> {
  const started: Proc[] = [];
  try {
    const { agentd, inCommit, afterReply, fresh } = await startAll(ctx, started);
    record(ctx, [{ name: 'CPU per stored turn 8x8, first window after start (one sample)', unit: 'us' }], fresh, [agentd, inCommit]);
    await rounds(ctx, [{ name: 'stored turns 8x8 over 4,096 pairs', unit: 'turns/s' }, { name: 'CPU per stored turn 8x8', unit: 'us' }], [agentd, inCommit], (p, round) =>
      load(p, 8, 8, ctx.sizes.rateMs, ctx.sizes.warmupMs, (slot, i) => `r${round}-${slot}-${i % 512}`),
    );
    const n = ctx.quick ? 500 : 2_000;
    await rounds(ctx, [{ name: 'one turn alone, end p50', unit: 'us' }, { name: 'one turn alone, CPU per turn', unit: 'us' }], [agentd, afterReply], (p, round) => alone(p, `alone-${round}`, n));
    await rounds(
      ctx,
      [{ name: 'growing histories: last / first of 4 windows (32 pairs, 8x8)', unit: 'ratio' }, { name: 'growing histories: first window', unit: 'turns/s' }],
      [agentd, inCommit],
      (p, round) => growth(p, round, ctx.sizes.rateMs * 2),
      ctx.quick ? 1 : 3,
    );
  } finally {
    await Promise.all(started.map((p) => p.stop()));
  }
}
