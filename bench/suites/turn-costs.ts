/**
 * The cost table: where a stored one-word echo turn's CPU goes, stage by
 * stage, on every thread. Each scenario (one turn at a time; 8 connections
 * × 8 in flight) runs on a fresh daemon under `node --cpu-prof`; the
 * profiles of main and of every worker thread are split into stages
 * (bench/lib/cpu-profile.ts) and divided by the turns completed in the
 * measured window. A profile's sample intervals are wall time, which on a
 * crowded machine includes time a thread waited for a core, and the profiler
 * itself costs CPU on every thread (most of all when turns are few); so each
 * scenario also runs on a second fresh daemon without the profiler, and each
 * stage row is its share of the profiles times that daemon's CPU per turn
 * (/proc, all threads, same window). The unscaled profile total stays in the
 * table as "busy wall time".
 *
 * With `--baseline DIR` (a built checkout of another commit) the same
 * scenarios run on its daemon in the same rounds, alternating, so every row
 * reads as after / before.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { frameClient } from '../lib/clients.ts';
import { turnBody, type BenchContext } from '../lib/context.ts';
import { LOCK_WAIT, stageTimes } from '../lib/cpu-profile.ts';
import { median, processCpuSeconds, spread, throughputDetail } from '../lib/load.ts';
import { startAgentd } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';

const SCENARIOS = [
  { name: 'alone (1x1)', conns: 1, inflight: 1 },
  { name: 'load (8x8)', conns: 8, inflight: 8 },
] as const;

/** Profiler sampling interval: fine enough for stages of a few microseconds per turn. */
const SAMPLE_US = 500;
/** The measured window of a full run: longer than other suites' rate windows, so stages of a few µs per turn still get samples. */
const WINDOW_MS = 2_000;

interface Sample {
  /** CPU µs per turn per stage (profile shares of the window's /proc CPU). */
  stages: Map<string, number>;
  /** µs per turn the profiles saw the daemon's threads busy (wall time, all threads). */
  busyUs: number;
  /** µs per turn threads spent blocked on the shards' write lock (wall time, all threads). */
  lockWaitUs: number;
  /** Profiler off. */
  turnsPerSecond: number;
  /** The daemon's CPU µs per turn in the window, all threads, profiler off. */
  procCpuUs: number;
  /** The same with the profiler on. */
  profiledCpuUs: number;
}

/** Turns/s and the daemon's CPU µs per turn over the measured window, on a fresh daemon started with `nodeArgs`. */
async function drive(ctx: BenchContext, root: string | undefined, conns: number, inflight: number, nodeArgs: string[]) {
  const d = await startAgentd(ctx.workers, { assistant: { model: 'echo' } }, {}, { nodeArgs, root });
  try {
    const cs = await Promise.all(Array.from({ length: conns }, (_, i) => frameClient(d.unix, turnBody(`tc${i}`))));
    const r = await throughputDetail(cs, inflight, ctx.quick ? ctx.sizes.rateMs : WINDOW_MS, ctx.sizes.warmupMs, () => processCpuSeconds(d.proc.pid!));
    for (const c of cs) c.close();
    return { window: r.window, rate: r.rate, cpuUs: (r.window.probe * 1e6) / r.window.count };
  } finally {
    await d.stop(); // a profiled daemon writes its profiles as its threads exit
  }
}

/** One scenario: stage shares from a profiled daemon, scaled to the CPU per turn of an unprofiled one. */
async function measure(ctx: BenchContext, root: string | undefined, conns: number, inflight: number): Promise<Sample> {
  const profiles = mkdtempSync(join(tmpdir(), 'agentd-prof-'));
  try {
    const profiled = await drive(ctx, root, conns, inflight, ['--cpu-prof', `--cpu-prof-dir=${profiles}`, `--cpu-prof-interval=${SAMPLE_US}`]);
    const plain = await drive(ctx, root, conns, inflight, []);
    const stages = stageTimes(profiles, profiled.window.fromUs, profiled.window.toUs);
    const waited = stages.get(LOCK_WAIT) ?? 0;
    stages.delete(LOCK_WAIT);
    const busy = [...stages.values()].reduce((a, b) => a + b, 0);
    for (const [k, v] of stages) stages.set(k, busy === 0 ? 0 : (v / busy) * plain.cpuUs);
    const n = profiled.window.count;
    return { stages, busyUs: busy / n, lockWaitUs: waited / n, turnsPerSecond: plain.rate, procCpuUs: plain.cpuUs, profiledCpuUs: profiled.cpuUs };
  } finally {
    rmSync(profiles, { recursive: true, force: true });
  }
}

function addRows(ctx: BenchContext, scenario: string, after: Sample[], before: Sample[] | null, lines: string[]): void {
  const anchor = before === null ? '' : 'baseline';
  const stageNames = [...new Set([...after, ...(before ?? [])].flatMap((s) => [...s.stages.keys()]))].sort();
  const row = (name: string, unit: string, pick: (s: Sample) => number): void => {
    const mine = after.map(pick);
    const theirs = before === null ? null : median(before.map(pick));
    ctx.report.add({ suite: 'turncost', name: `${scenario}: ${name}`, unit, value: median(mine), anchor, anchor_value: theirs, spread: spread(mine) });
    lines.push(`| ${scenario} | ${name} | ${median(mine).toFixed(1)} | ${theirs === null ? '' : theirs.toFixed(1)} |`);
  };
  for (const stage of stageNames) row(stage, 'us/turn', (s) => s.stages.get(stage) ?? 0);
  row('all threads: CPU (/proc, profiler off)', 'us/turn', (s) => s.procCpuUs);
  row('all threads: CPU (/proc, profiler on)', 'us/turn', (s) => s.profiledCpuUs);
  row('all threads: busy wall time (profiles, unscaled)', 'us/turn', (s) => s.busyUs);
  row(LOCK_WAIT, 'us/turn', (s) => s.lockWaitUs);
  row('turns/s (profiler off)', 'turns/s', (s) => s.turnsPerSecond);
}

export async function run(ctx: BenchContext): Promise<void> {
  const baseline = ctx.baseline;
  const lines = [`| scenario | stage (CPU µs per turn) | this checkout | ${baseline === undefined ? '' : `baseline ${baseline}`} |`, '|---|---|---|---|'];
  for (const sc of SCENARIOS) {
    const after: Sample[] = [];
    const before: Sample[] = [];
    for (let round = 0; round < ctx.report.rounds; round++) {
      // Alternate which daemon goes first, so drift in the machine's load falls on both.
      const order = round % 2 === 0 ? ['after', 'before'] : ['before', 'after'];
      for (const which of order) {
        if (which === 'after') after.push(await measure(ctx, undefined, sc.conns, sc.inflight));
        else if (baseline !== undefined) before.push(await measure(ctx, baseline, sc.conns, sc.inflight));
      }
      Report.progress(`turncost: ${sc.name}: round ${round + 1}/${ctx.report.rounds}`);
    }
    addRows(ctx, sc.name, after, baseline === undefined ? null : before, lines);
  }
  const out = resolve(import.meta.dirname, '../results');
  mkdirSync(out, { recursive: true });
  const file = join(out, `turn-costs-${ctx.workers}w.md`);
  const header = `Stored one-word echo turns, ${ctx.workers} workers, medians of ${ctx.report.rounds} rounds, ${new Date().toISOString()}\n\n`;
  writeFileSync(file, `${header}${lines.join('\n')}\n`);
  Report.progress(`turncost: wrote ${file}`);
}
