/**
 * What the metrics (and the traces) cost a turn: the same stored one-word
 * echo turns (8 connections × 8 in flight) on three daemons started side by
 * side, with both off, the metrics on, and the traces on (exporting to a
 * local sink). All three stay up for the whole run and are driven one at a
 * time in many short windows, the order rotating each round, so drift in
 * the machine's load falls on every arm alike. Each window reports the
 * daemon's CPU per turn (all threads, the scheduler's count in /proc); each
 * arm's cost is the median, over rounds, of its CPU per turn divided by the
 * "off" daemon's in the same round, which cancels load that changes slower
 * than a round. On a crowded machine the middle half of those ratios is
 * wide: read the cost against it. An echo turn
 * is the cheapest there is, so this is the metrics' largest share of a turn;
 * a turn calling a real model costs the same counting and far more CPU
 * besides. At the end the "on" daemon is scraped, to check it counted every
 * turn it ran.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg } from 'node:os';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { frameClient, type BenchClient } from '../lib/clients.ts';
import { turnBody, type BenchContext } from '../lib/context.ts';
import { median, processCpuSeconds, spread, throughputDetail } from '../lib/load.ts';
import { startAgentd, type Proc } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';
import { Registry } from 'prom-client';
import { CallMeter } from '../../src/shard/call-meter.ts';
import { TurnMeter } from '../../src/main/metrics/turn-meter.ts';
import type { OpenTurn } from '../../src/main/turn-ledger.ts';

const CONNS = 8;
const INFLIGHT = 8;

interface Arm {
  name: string;
  config: Record<string, unknown>;
}

/** Where the "traces on" daemon exports: a local HTTP server that takes each export and discards it. */
const SINK = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
});

function arms(sinkUrl: string): Arm[] {
  return [
    { name: 'off', config: {} },
    { name: 'metrics on', config: { metrics: '127.0.0.1:0' } },
    { name: 'traces on', config: { otlp: sinkUrl } },
  ];
}

interface Sample {
  cpuUs: number;
  rate: number;
}

/** A daemon kept up for the whole run, with its clients connected. */
interface Live {
  arm: Arm;
  daemon: Proc;
  clients: BenchClient[];
  /** Turns completed in its measured windows. */
  measured: number;
}

async function startArm(ctx: BenchContext, arm: Arm): Promise<Live> {
  const daemon = await startAgentd(ctx.workers, { assistant: { model: 'echo' } }, arm.config);
  const clients = await Promise.all(Array.from({ length: CONNS }, (_, i) => frameClient(daemon.unix, turnBody(`mc${i}`))));
  return { arm, daemon, clients, measured: 0 };
}

/** One measured window on `live` after `warmupMs` of the same load (to fill its pipelines again). */
async function measure(live: Live, ms: number, warmupMs: number): Promise<Sample> {
  const r = await throughputDetail(live.clients, INFLIGHT, ms, warmupMs, () => processCpuSeconds(live.daemon.proc.pid!));
  live.measured += r.window.count;
  return { cpuUs: (r.window.probe * 1e6) / r.window.count, rate: r.rate };
}

/** The number after `name` in a scrape (summed over its label sets). */
function total(text: string, name: string): number {
  return text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `)).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** The scrape must show at least the window's turns counted, model calls and commits among them. */
async function checkCounted(socket: string, turns: number): Promise<void> {
  const port = readFileSync(join(socket, '..', 'metrics.port'), 'utf8').trim();
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  for (const name of ['agentd_turns_total', 'agentd_provider_calls_total', 'agentd_storage_commit_batch_turns_sum']) {
    if (total(text, name) < turns) throw new Error(`metrics bench: ${name} is ${total(text, name)}, below the ${turns} turns measured`);
  }
}

export async function run(ctx: BenchContext): Promise<void> {
  await new Promise<void>((r) => SINK.listen(0, '127.0.0.1', r));
  const ARMS = arms(`http://127.0.0.1:${(SINK.address() as AddressInfo).port}/v1/traces`);
  try {
    await measureArms(ctx, ARMS);
  } finally {
    SINK.close();
  }
}

async function measureArms(ctx: BenchContext, ARMS: Arm[]): Promise<void> {
  // Many short windows beat a few long ones on a loaded machine: the paired ratios need rounds, not length.
  const rounds = ctx.report.rounds * 6;
  const windowMs = ctx.sizes.rateMs / 2;
  const rewarmMs = ctx.sizes.warmupMs / 2;
  const samples = new Map<string, Sample[]>(ARMS.map((a) => [a.name, []]));
  const live: Live[] = [];
  try {
    for (const arm of ARMS) live.push(await startArm(ctx, arm));
    // Compile and fill caches before anything counts.
    for (const l of live) await measure(l, ctx.sizes.warmupMs, ctx.sizes.warmupMs);
    for (const l of live) l.measured = 0;
    for (let round = 0; round < rounds; round++) {
      // One daemon driven at a time, the order rotating, so drift in the machine's load falls on every arm.
      for (let i = 0; i < live.length; i++) {
        const l = live[(i + round) % live.length]!;
        samples.get(l.arm.name)!.push(await measure(l, windowMs, rewarmMs));
      }
      Report.progress(`metrics: round ${round + 1}/${rounds}`);
    }
    for (const l of live) if (l.arm.config.metrics !== undefined) await checkCounted(l.daemon.unix, l.measured);
  } finally {
    for (const l of live) {
      for (const c of l.clients) c.close();
      await l.daemon.stop();
    }
  }
  report(ctx, ARMS, samples, rounds);
}

/** Each arm's CPU per turn over the "off" daemon's in the same round: the median and quartiles of those ratios. */
function pairedRatios(xs: Sample[], off: Sample[]): { median: number; low: number; high: number } {
  const r = xs.map((s, i) => s.cpuUs / off[i]!.cpuUs).sort((a, b) => a - b);
  const at = (q: number): number => r[Math.min(r.length - 1, Math.round(q * (r.length - 1)))]!;
  return { median: median(r), low: at(0.25), high: at(0.75) };
}

function report(ctx: BenchContext, ARMS: Arm[], samples: Map<string, Sample[]>, rounds: number): void {
  const off = samples.get('off')!;
  const offCpu = median(off.map((s) => s.cpuUs));
  const lines = [
    `Stored one-word echo turns, ${CONNS} connections × ${INFLIGHT} in flight, ${ctx.workers} workers, three daemons up side by side, driven in turn: ${rounds} rounds of ${ctx.sizes.rateMs / 2} ms windows, rotating order, ${new Date().toISOString()}; load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores at the end`,
    '',
    '| daemon | CPU µs per turn (all threads, median) | spread | vs off (median of paired rounds) | middle half of paired rounds | turns/s |',
    '|---|---|---|---|---|---|',
  ];
  for (const arm of ARMS) {
    const xs = samples.get(arm.name)!;
    const cpu = median(xs.map((s) => s.cpuUs));
    const rate = median(xs.map((s) => s.rate));
    const paired = pairedRatios(xs, off);
    const pct = (r: number): string => `${((r - 1) * 100).toFixed(1)}%`;
    ctx.report.add({ suite: 'metrics', name: `CPU per turn, ${arm.name}`, unit: 'us/turn', value: cpu, anchor: arm.name === 'off' ? '' : 'off (paired rounds)', anchor_value: arm.name === 'off' ? null : cpu / paired.median, spread: spread(xs.map((s) => s.cpuUs)) });
    const isOff = arm.name === 'off';
    lines.push(`| ${arm.name} | ${cpu.toFixed(1)} | ${(spread(xs.map((s) => s.cpuUs)) * 100).toFixed(1)}% | ${isOff ? '' : pct(paired.median)} | ${isOff ? '' : `${pct(paired.low)} to ${pct(paired.high)}`} | ${rate.toFixed(0)} |`);
  }
  const book = bookkeepingUs();
  ctx.report.add({ suite: 'metrics', name: 'metrics bookkeeping per turn (in-process: shard tallies + main turn meter)', unit: 'us/turn', value: book, anchor: 'off CPU per turn', anchor_value: offCpu, spread: 0 });
  lines.push(
    '',
    `In-process, the metrics' own work per turn (what a turn adds with the metrics on: its model call and a quarter of a group commit summed on the shard, its end counted on main): ${book.toFixed(2)} µs, ${((book / offCpu) * 100).toFixed(2)}% of the CPU per turn with everything off above.`,
  );
  const out = resolve(import.meta.dirname, '../results');
  mkdirSync(out, { recursive: true });
  const file = join(out, 'metrics.md');
  writeFileSync(file, `${lines.join('\n')}\n`);
  Report.progress(`metrics: wrote ${file}`);
}

/**
 * The metrics' own work per turn, timed in this process (a figure the
 * machine's noise barely moves, unlike the daemons' above): the shard sums
 * the turn's model call (and a quarter of a group commit of 4) into its
 * tallies, and main counts the turn's end (TurnMeter). Median of 5 runs.
 */
function bookkeepingUs(): number {
  const meter = new CallMeter();
  meter.observe({ metrics: true, spans: false });
  const turns = new TurnMeter(new Registry());
  const req = { agent: 'assistant', guest: null } as unknown as OpenTurn['req'];
  const n = 200_000;
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const began = performance.now();
    for (let i = 0; i < n; i++) {
      const start = CallMeter.now();
      meter.model(i, 'echo', 'echo', 'ok', start, CallMeter.now() - start, 3, 1);
      if (i % 4 === 0) meter.commitBatch('ok', 0.2, 4);
      turns.turnEnded({ seq: i, shard: 0, req, started: true, openedAt: began, startedAt: began }, 0);
    }
    runs.push(((performance.now() - began) * 1000) / n);
  }
  return median(runs);
}
