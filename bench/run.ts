/**
 * agentd's benchmark suite. Every figure is measured beside an anchor in the
 * same run, round by round, and reported as a ratio: this machine is shared
 * and noisy, so only side-by-side figures mean anything.
 *
 *   npm run bench [-- --quick] [-- --suite NAME[,NAME…]] [-- --workers N] [-- --baseline DIR]
 *
 * A full run keeps to a time budget (bench/lib/plan.ts: rounds per suite,
 * rate windows) and ends with each suite's duration and the total.
 *
 * --baseline DIR: a built checkout of another commit (`npm run build` there);
 * suites that compare before/after (turncost; scaling, for its stored echo
 * turns) run its daemon beside this one; runcost imports its shard sources
 * into this process (no build needed there).
 *
 * Anchors: the floor (a minimal Node length-prefix server, bench/floor-server.mjs),
 * Redis when `redis-server` is on the PATH, and per suite what it names.
 * Prints a table and writes bench/results/latest.json.
 */
import { availableParallelism, cpus, totalmem } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { writeResultsMarkdown } from './lib/results-markdown.ts';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { BenchContext, System } from './lib/context.ts';
import { runningProcesses, startAgentd, startFloor, startRedis, stopStartedSince } from './lib/processes.ts';
import { Report } from './lib/report.ts';
import { durationTable, roundsFor, sizesFor, SUITE_CAP_S, suiteTime, withinCap, type SuiteTime } from './lib/plan.ts';
import * as latency from './suites/latency.ts';
import * as throughput from './suites/throughput.ts';
import * as storage from './suites/storage.ts';
import * as scaling from './suites/scaling.ts';
import * as fanout from './suites/fanout.ts';
import * as memory from './suites/memory.ts';
import * as micro from './suites/micro.ts';
import * as costs from './suites/costs.ts';
import * as turncost from './suites/turn-costs.ts';
import * as runcost from './suites/run-costs.ts';
import * as agents from './suites/agents.ts';
import * as mcp from './suites/mcp.ts';
import * as cluster from './suites/cluster.ts';
import * as designFloor from './suites/design-floor.ts';
import * as http from './suites/http.ts';
import * as metricsCost from './suites/metrics-cost.ts';
import * as openai from './suites/openai.ts';

const SUITES: Record<string, (ctx: BenchContext) => Promise<void>> = {
  micro: micro.run,
  costs: costs.run,
  turncost: turncost.run,
  runcost: runcost.run,
  agents: agents.run,
  mcp: mcp.run,
  latency: latency.run,
  throughput: throughput.run,
  scaling: scaling.run,
  fanout: fanout.run,
  storage: storage.run,
  memory: memory.run,
  cluster: cluster.run,
  floor: designFloor.run,
  http: http.run,
  metrics: metricsCost.run,
  openai: openai.run,
};

const { values } = parseArgs({ options: { quick: { type: 'boolean' }, suite: { type: 'string' }, workers: { type: 'string' }, baseline: { type: 'string' } } });
const quick = values.quick === true;
const chosen = values.suite === undefined ? null : new Set(values.suite.split(',').map((s) => s.trim()));
const unknown = [...(chosen ?? [])].filter((s) => SUITES[s] === undefined);
if (unknown.length > 0) {
  console.error(`unknown suite${unknown.length > 1 ? 's' : ''} ${unknown.map((s) => `"${s}"`).join(', ')}; suites: ${Object.keys(SUITES).join(', ')}`);
  process.exit(2);
}
const workers = values.workers !== undefined ? Number(values.workers) : availableParallelism();
const report = new Report(quick ? 3 : 5);
const started = Date.now();

Report.progress(`starting agentd (${workers} workers) and the floor server${quick ? ', quick mode' : ''}`);
const agentd = await startAgentd(workers, { assistant: { model: 'echo' } });
const floor = await startFloor();
const redis = await startRedis();
if (redis === null) Report.progress('redis-server is not on the PATH: Redis rows are skipped');
const systems: System[] = [{ name: 'agentd', proc: agentd }, { name: 'floor', proc: floor }, ...(redis ? [{ name: 'redis' as const, proc: redis }] : [])];
const ctx: BenchContext = {
  report,
  quick,
  workers,
  systems,
  ...(values.baseline !== undefined ? { baseline: resolve(values.baseline) } : {}),
  sizes: sizesFor(quick),
};

const out = resolve(import.meta.dirname, 'results');
mkdirSync(out, { recursive: true });
const machine = { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? '', memory_gib: Math.round(totalmem() / 2 ** 30), node: process.version, platform: process.platform, workers, quick, redis: redis !== null, date: new Date().toISOString() };
const times: SuiteTime[] = [];
const abandoned: string[] = [];
/** Suites that failed (a server they started died, say): the run goes on without them, and exits 1 at the end. */
const failed: string[] = [];
const elapsedS = (): number => Math.round((Date.now() - started) / 1000);
/** Written after every suite, so a run cut short keeps what it measured, and how long each suite took. */
function writeResults(): string {
  const timing = {
    duration_s: elapsedS(),
    suite_durations: Object.fromEntries(times.map((t) => [t.suite, t.seconds])),
    suite_load_average: Object.fromEntries(times.map((t) => [t.suite, t.load])),
    suite_rounds: Object.fromEntries(times.map((t) => [t.suite, roundsFor(t.suite, quick)])),
  };
  const suitesDone = times.map((t) => t.suite).filter((s) => !abandoned.includes(s) && !failed.includes(s));
  writeFileSync(join(out, 'latest.json'), `${JSON.stringify({ machine: { ...machine, ...timing }, suites_done: suitesDone, suites_abandoned: abandoned, suites_failed: failed, results: report.rows.map(({ spread: _s, ...r }) => r) }, null, 2)}\n`);
  return writeResultsMarkdown(out);
}

try {
  for (const [name, run] of Object.entries(SUITES)) {
    if (chosen !== null && !chosen.has(name)) continue;
    const t0 = Date.now();
    report.rounds = roundsFor(name, quick);
    const cap = quick ? SUITE_CAP_S.quick : SUITE_CAP_S.full;
    const before = runningProcesses();
    const finished = await withinCap(() => run(ctx), cap, () => {
      const ended = stopStartedSince(before);
      Report.progress(`${name}: still running after ${cap} s: abandoned (its rows so far kept, ${ended} of its processes ended)`);
    }).catch((err: unknown) => {
      const ended = stopStartedSince(before);
      Report.progress(`${name}: failed: ${err instanceof Error ? err.message : String(err)} (its rows so far kept, ${ended} of its processes ended)`);
      failed.push(name);
      return null;
    });
    if (finished === false) abandoned.push(name);
    times.push(suiteTime(name, t0));
    writeResults();
    if (finished) Report.progress(`${name}: done in ${times.at(-1)!.seconds.toFixed(0)} s (${elapsedS()} s in all, load average ${times.at(-1)!.load}); results so far in ${join(out, 'latest.json')}`);
  }
} finally {
  await Promise.all([agentd.stop(), floor.stop(), redis?.stop()]);
  stopStartedSince(new Set()); // whatever an abandoned suite left running
}

process.stdout.write(`${report.table()}\n\nratio = agentd / anchor (lower is better for µs and bytes, higher for rates); spread = (max-min)/median of agentd over the suite's rounds (suite_rounds in latest.json)\n\n`);
process.stdout.write(`${durationTable(times, (Date.now() - started) / 1000, quick)}\n`);
Report.progress(`wrote ${join(out, 'latest.json')} and ${writeResults()}`);
if (failed.length > 0) {
  Report.progress(`failed: ${failed.join(', ')}`);
  process.exitCode = 1;
}
