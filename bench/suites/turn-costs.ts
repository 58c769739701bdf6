/**
 * The cost table: where a stored one-word echo turn's CPU goes, stage by
 * stage, on every thread. Each scenario (one turn at a time; 8 connections
 * × 8 in flight) runs on a fresh daemon under `node --cpu-prof`; the
 * profiles of main and of every worker thread are split into stages
 * (bench/lib/cpu-profile.ts) and divided by the turns completed in the
 * measured window. A profile's sample intervals are wall time, which on a
 * crowded machine includes time a thread waited for a core; so the stages are
 * scaled to the daemon's own CPU time over the same window (/proc, all
 * threads): each stage row is its share of the profiles times CPU per turn.
 * The unscaled total stays in the table as "busy wall time".
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

interface Sample {
  /** CPU µs per turn per stage (profile shares of the window's /proc CPU). */
  stages: Map<string, number>;
  /** µs per turn the profiles saw the daemon's threads busy (wall time, all threads). */
  busyUs: number;
  /** µs per turn threads spent blocked on the shards' write lock (wall time, all threads). */
  lockWaitUs: number;
  turnsPerSecond: number;
  /** The daemon's CPU µs per turn in the window, all threads (profiler included). */
  procCpuUs: number;
}

/** One scenario on one fresh daemon: stage µs per turn, the rate, and /proc CPU per turn. */
async function measure(ctx: BenchContext, root: string | undefined, conns: number, inflight: number): Promise<Sample> {
  const profiles = mkdtempSync(join(tmpdir(), 'agentd-prof-'));
  const args = ['--cpu-prof', `--cpu-prof-dir=${profiles}`, `--cpu-prof-interval=${SAMPLE_US}`];
  const d = await startAgentd(ctx.workers, { assistant: { model: 'echo' } }, {}, undefined, args, root);
  try {
    const cs = await Promise.all(Array.from({ length: conns }, (_, i) => frameClient(d.unix, turnBody(`tc${i}`))));
    const r = await throughputDetail(cs, inflight, ctx.sizes.rateMs, ctx.sizes.warmupMs, () => processCpuSeconds(d.proc.pid!));
    for (const c of cs) c.close();
    await d.stop(); // the profiles are written as the threads exit
    const stages = stageTimes(profiles, r.window.fromUs, r.window.toUs);
    const waited = stages.get(LOCK_WAIT) ?? 0;
    stages.delete(LOCK_WAIT);
    const busy = [...stages.values()].reduce((a, b) => a + b, 0);
    const procCpuUs = (r.window.probe * 1e6) / r.window.count;
    for (const [k, v] of stages) stages.set(k, busy === 0 ? 0 : (v / busy) * procCpuUs);
    return { stages, busyUs: busy / r.window.count, lockWaitUs: waited / r.window.count, turnsPerSecond: r.rate, procCpuUs };
  } finally {
    await d.stop();
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
  row('all threads: CPU (/proc)', 'us/turn', (s) => s.procCpuUs);
  row('all threads: busy wall time (profiles, unscaled)', 'us/turn', (s) => s.busyUs);
  row(LOCK_WAIT, 'us/turn', (s) => s.lockWaitUs);
  row('turns/s (profiler on)', 'turns/s', (s) => s.turnsPerSecond);
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
