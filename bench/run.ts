/**
 * agentd's benchmark suite. Every figure is measured beside an anchor in the
 * same run, round by round, and reported as a ratio: this machine is shared
 * and noisy, so only side-by-side figures mean anything.
 *
 *   npm run bench [-- --quick] [-- --suite latency|throughput]
 *
 * Anchors: the floor (a minimal Node length-prefix server, bench/floor-server.mjs)
 * and Redis when `redis-server` is on the PATH. Writes bench/results/latest.json.
 */
import { availableParallelism, cpus, totalmem } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { frameClient, redisPingClient, type BenchClient } from './lib/clients.ts';
import { latency, median, spread, throughput } from './lib/load.ts';
import { startAgentd, startFloor, startRedis, type Proc } from './lib/processes.ts';

const { values } = parseArgs({ options: { quick: { type: 'boolean' }, suite: { type: 'string' }, workers: { type: 'string' } } });
const quick = values.quick === true;
const SUITES = ['latency', 'throughput'] as const;
const only = values.suite;
if (only !== undefined && !(SUITES as readonly string[]).includes(only)) {
  console.error(`unknown suite "${only}"; suites: ${SUITES.join(', ')}`);
  process.exit(2);
}
const want = (s: (typeof SUITES)[number]): boolean => only === undefined || only === s;

const ROUNDS = quick ? 3 : 5;
const LAT_N = quick ? 2_000 : 10_000;
const RATE_MS = quick ? 700 : 2_000;
const WARM_MS = quick ? 200 : 500;
const workers = values.workers !== undefined ? Number(values.workers) : availableParallelism();

interface Row {
  suite: string;
  name: string;
  unit: string;
  value: number;
  anchor: string;
  anchor_value: number | null;
  ratio: number | null;
  spread: number;
}
const rows: Row[] = [];
const progress = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

type Target = string | { host: string; port: number };
type System = { name: string; proc: Proc | null };

const PING = { ping: {} };
/** Turn bodies: one word, a distinct sender per in-flight slot (rotated so histories stay short). */
function turnBody(slot: string): (i: number) => unknown {
  let n = 0;
  return () => ({ stream: { agent: 'assistant', content: 'hello', sender: `${slot}-${Math.floor(n++ / 100)}` } });
}

async function clientsFor(sys: string, target: Target, count: number, body: (slot: string) => (i: number) => unknown): Promise<BenchClient[]> {
  const out: BenchClient[] = [];
  for (let i = 0; i < count; i++) out.push(sys === 'redis' ? await redisPingClient(target) : await frameClient(target, body(`c${i}`)));
  return out;
}

/** Runs `measure` for each system, round by round, and records medians against the anchors. */
async function compare(
  suite: string,
  metrics: { name: string; unit: string }[],
  systems: System[],
  measure: (sys: System, round: number) => Promise<number[]>,
): Promise<void> {
  const samples = new Map<string, number[][]>(systems.map((s) => [s.name, metrics.map(() => [])]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const sys of round % 2 === 0 ? systems : [...systems].reverse()) {
      const values = await measure(sys, round);
      values.forEach((v, k) => samples.get(sys.name)![k]!.push(v));
    }
    progress(`${suite}: ${metrics.map((m) => m.name).join(', ')}: round ${round + 1}/${ROUNDS}`);
  }
  metrics.forEach((m, k) => {
    const ours = samples.get('agentd')![k]!;
    const value = median(ours);
    const anchors = systems.filter((s) => s.name !== 'agentd');
    for (const a of anchors) {
      const av = median(samples.get(a.name)![k]!);
      rows.push({ suite, name: m.name, unit: m.unit, value, anchor: a.name, anchor_value: av, ratio: value / av, spread: spread(ours) });
    }
    if (anchors.length === 0) rows.push({ suite, name: m.name, unit: m.unit, value, anchor: '', anchor_value: null, ratio: null, spread: spread(ours) });
  });
}

async function main(): Promise<void> {
  progress(`starting agentd (${workers} workers), the floor server${quick ? ', quick mode' : ''}`);
  const agentd = await startAgentd(workers, { assistant: { model: 'echo' } });
  const floor = await startFloor();
  const redis = await startRedis();
  if (redis === null) progress('redis-server is not on the PATH: Redis rows are skipped');
  const systems: System[] = [{ name: 'agentd', proc: agentd }, { name: 'floor', proc: floor }, ...(redis ? [{ name: 'redis', proc: redis }] : [])];
  const target = (s: System, t: 'unix' | 'tcp'): Target => (t === 'unix' ? s.proc!.unix : s.proc!.tcp!);

  try {
    if (want('latency')) {
      for (const transport of ['unix', 'tcp'] as const) {
        await compare(
          'latency',
          ['p50', 'p99', 'p999'].map((p) => ({ name: `ping ${transport} ${p}`, unit: 'us' })),
          systems,
          async (sys) => {
            const [c] = await clientsFor(sys.name, target(sys, transport), 1, () => () => PING);
            const r = await latency(c!, LAT_N, Math.min(1000, LAT_N / 4));
            c!.close();
            return [r.p50, r.p99, r.p999];
          },
        );
      }
    }

    if (want('throughput')) {
      for (const [conns, inflight] of [[1, 64], [16, 8]] as const) {
        await compare('throughput', [{ name: `ping pipelined ${conns}x${inflight}`, unit: 'req/s' }], systems, async (sys) => {
          const cs = await clientsFor(sys.name, target(sys, 'unix'), conns, () => () => PING);
          const rate = await throughput(cs, inflight, RATE_MS, WARM_MS);
          for (const c of cs) c.close();
          return [rate];
        });
      }
      // Echo turns against the floor answering the same requests: what sharding, the
      // agent loop and six frames per turn cost over the cheapest possible reply.
      const turnSystems = systems.filter((s) => s.name !== 'redis');
      for (const [conns, inflight] of [[1, 64], [32, 8]] as const) {
        await compare('throughput', [{ name: `echo turns ${conns}x${inflight}`, unit: 'turns/s' }], turnSystems, async (sys) => {
          const cs = await clientsFor(sys.name, target(sys, 'unix'), conns, (slot) => turnBody(slot));
          const rate = await throughput(cs, inflight, RATE_MS, WARM_MS);
          for (const c of cs) c.close();
          return [rate];
        });
      }
    }
  } finally {
    await Promise.all([agentd.stop(), floor.stop(), redis?.stop()]);
  }

  const fmt = (v: number | null): string => (v === null ? '' : v >= 100 ? v.toFixed(0) : v.toFixed(1));
  const table = [
    '| suite | measure | unit | agentd | anchor | anchor value | ratio | spread |',
    '|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.suite} | ${r.name} | ${r.unit} | ${fmt(r.value)} | ${r.anchor || '—'} | ${fmt(r.anchor_value)} | ${r.ratio === null ? '' : r.ratio.toFixed(2)} | ${(r.spread * 100).toFixed(0)}% |`),
  ].join('\n');
  process.stdout.write(`${table}\n\nratio = agentd / anchor (lower is better for us, higher for req/s and turns/s); spread = (max-min)/median of agentd over ${ROUNDS} rounds\n`);

  const out = resolve(import.meta.dirname, 'results');
  mkdirSync(out, { recursive: true });
  const machine = { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? '', memory_gib: Math.round(totalmem() / 2 ** 30), node: process.version, platform: process.platform, workers, quick, redis: redis !== null, date: new Date().toISOString() };
  writeFileSync(join(out, 'latest.json'), `${JSON.stringify({ machine, results: rows.map(({ spread: _s, ...r }) => r) }, null, 2)}\n`);
  progress(`wrote ${join(out, 'latest.json')}`);
}

await main();
