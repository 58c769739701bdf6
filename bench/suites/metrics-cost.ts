/**
 * What the metrics (and the traces) cost a turn: the same stored one-word
 * echo turns (8 connections × 8 in flight) on fresh daemons with both off,
 * the metrics on, and the traces on (exporting to a local sink), in
 * alternating rounds, reporting each one's CPU per turn (all threads,
 * /proc, over the measured window) and the ratio on/off. An echo turn is the
 * cheapest there is, so this is the metrics' largest share of a turn; a turn
 * calling a real model costs the same counting and far more CPU besides.
 * Once a round, the "on" daemon is scraped after its window, to check it
 * counted the turns it ran.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg } from 'node:os';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { frameClient } from '../lib/clients.ts';
import { turnBody, type BenchContext } from '../lib/context.ts';
import { median, processCpuSeconds, spread, throughputDetail } from '../lib/load.ts';
import { startAgentd } from '../lib/processes.ts';
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

/** The number after `name` in a scrape (summed over its label sets). */
function total(text: string, name: string): number {
  return text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `)).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

async function drive(ctx: BenchContext, arm: Arm): Promise<Sample> {
  const d = await startAgentd(ctx.workers, { assistant: { model: 'echo' } }, arm.config);
  try {
    const cs = await Promise.all(Array.from({ length: CONNS }, (_, i) => frameClient(d.unix, turnBody(`mc${i}`))));
    const r = await throughputDetail(cs, INFLIGHT, ctx.sizes.rateMs, ctx.sizes.warmupMs, () => processCpuSeconds(d.proc.pid!));
    for (const c of cs) c.close();
    if (arm.config.metrics !== undefined) await checkCounted(d.unix, r.window.count);
    return { cpuUs: (r.window.probe * 1e6) / r.window.count, rate: r.rate };
  } finally {
    await d.stop();
  }
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
  const samples = new Map<string, Sample[]>(ARMS.map((a) => [a.name, []]));
  for (let round = 0; round < ctx.report.rounds; round++) {
    // Rotate which goes first, so drift in the machine's load falls on every arm.
    const order = ARMS.map((_, i) => ARMS[(i + round) % ARMS.length]!);
    for (const arm of order) samples.get(arm.name)!.push(await drive(ctx, arm));
    Report.progress(`metrics: round ${round + 1}/${ctx.report.rounds}`);
  }
  const off = samples.get('off')!;
  const offCpu = median(off.map((s) => s.cpuUs));
  const lines = [
    `Stored one-word echo turns, ${CONNS} connections × ${INFLIGHT} in flight, ${ctx.workers} workers, medians of ${ctx.report.rounds} rounds (rotating order), ${new Date().toISOString()}; load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores at the end`,
    '',
    '| daemon | CPU µs per turn (all threads) | spread | vs off | turns/s |',
    '|---|---|---|---|---|',
  ];
  for (const arm of ARMS) {
    const xs = samples.get(arm.name)!;
    const cpu = median(xs.map((s) => s.cpuUs));
    const rate = median(xs.map((s) => s.rate));
    ctx.report.add({ suite: 'metrics', name: `CPU per turn, ${arm.name}`, unit: 'us/turn', value: cpu, anchor: arm.name === 'off' ? '' : 'off', anchor_value: arm.name === 'off' ? null : offCpu, spread: spread(xs.map((s) => s.cpuUs)) });
    lines.push(`| ${arm.name} | ${cpu.toFixed(1)} | ${(spread(xs.map((s) => s.cpuUs)) * 100).toFixed(1)}% | ${arm.name === 'off' ? '' : `${((cpu / offCpu - 1) * 100).toFixed(1)}%`} | ${rate.toFixed(0)} |`);
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
