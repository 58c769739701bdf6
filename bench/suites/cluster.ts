/**
 * Cluster mode (docs/cluster.md): stored echo turns per second
 * and one turn's latency through a one-node cluster and through a three-node
 * one, with the client on the pairs' owner and on another node (the extra
 * hop over NATS), and with clients on all three nodes addressing pairs of
 * every partition. Both clusters run side by side for the whole suite (each
 * on a database and a cluster name of its own) and are measured in turn,
 * round by round, alternating the order, so each ratio compares figures
 * taken under the same load. On a 2-core machine the three nodes, NATS,
 * PostgreSQL and the load generator share two cores: three nodes cannot be
 * faster than one here, and the ratios say what the extra hop and the
 * sharing cost, not what three machines would give.
 *
 * Needs NATS with JetStream (AGENTD_BENCH_NATS_URL, else AGENTD_TEST_NATS_URL,
 * else nats://127.0.0.1:4222) and PostgreSQL (AGENTD_BENCH_PG_URL, else
 * AGENTD_TEST_PG_URL, else postgres://postgres@127.0.0.1:5432/test: a role
 * that may CREATE DATABASE); without either it is skipped with the reason printed.
 */
import { randomBytes } from 'node:crypto';
import { createHistogram } from 'node:perf_hooks';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import pg from 'pg';
import { AgentdClient } from '../../src/client/index.ts';
import { assignPartitions, partitionOf } from '../../src/shared/partitions.ts';
import type { ClusterStats } from '../../src/shared/wire/ops.ts';
import type { BenchContext } from '../lib/context.ts';
import { median, spread } from '../lib/load.ts';
import { startAgentd, type Proc } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';

const NATS_URL = process.env.AGENTD_BENCH_NATS_URL ?? process.env.AGENTD_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';
const PG_URL = process.env.AGENTD_BENCH_PG_URL ?? process.env.AGENTD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const PARTITIONS = 64;
const LEASE_MS = 5_000;
const AGENT = 'assistant';
/** Concurrent turns per measurement (each on a pair of its own): 16 loops, one turn in flight each. */
const LOOPS = 16;

/** Null when both servers answer; otherwise why the suite is skipped. */
async function unavailable(): Promise<string | null> {
  try {
    const nc = await connect({ servers: NATS_URL, timeout: 3_000, reconnect: false });
    try {
      await (await jetstreamManager(nc)).getAccountInfo();
    } finally {
      await nc.close();
    }
  } catch (err) {
    return `no NATS server with JetStream at ${NATS_URL} (${(err as Error).message}); set AGENTD_BENCH_NATS_URL`;
  }
  const c = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 });
  try {
    await c.connect();
    await c.query('SELECT 1');
  } catch (err) {
    return `no PostgreSQL server at ${new URL(PG_URL).host} (${(err as Error).message}); set AGENTD_BENCH_PG_URL`;
  } finally {
    await c.end().catch(() => undefined);
  }
  return null;
}

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

interface Cluster {
  name: string;
  db: string;
  nodes: { name: string; proc: Proc; client: AgentdClient }[];
}

async function startCluster(ctx: BenchContext, names: string[]): Promise<Cluster> {
  const tag = randomBytes(5).toString('hex');
  const cluster: Cluster = { name: `agentd_bench_${tag}`, db: `agentd_bench_${tag}`, nodes: [] };
  await admin(`CREATE DATABASE ${cluster.db}`);
  const url = new URL(PG_URL);
  url.pathname = `/${cluster.db}`;
  for (const name of names) {
    const proc = await startAgentd(ctx.workers, { [AGENT]: { model: 'echo' } }, {
      store: url.toString(),
      cluster: { nats: NATS_URL, node: name, name: cluster.name, partitions: PARTITIONS, lease_ms: LEASE_MS },
    });
    cluster.nodes.push({ name, proc, client: await AgentdClient.connect({ path: proc.unix }) });
  }
  // Every node sees all of them and serves its share.
  const share = assignPartitions(PARTITIONS, names);
  const until = Date.now() + 60_000;
  for (;;) {
    const stats = await Promise.all(cluster.nodes.map(async (n) => (await n.client.stats()).cluster as ClusterStats));
    if (stats.every((s) => s.live_nodes.join() === [...names].sort().join() && s.served_partitions === share.filter((o) => o === s.node).length)) break;
    if (Date.now() > until) throw new Error(`cluster ${names.join(', ')}: partitions not spread in 60 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return cluster;
}

async function stopCluster(c: Cluster): Promise<void> {
  for (const n of c.nodes) await n.client.close().catch(() => undefined);
  await Promise.all(c.nodes.map((n) => n.proc.stop()));
  await admin(`DROP DATABASE IF EXISTS ${c.db} WITH (FORCE)`).catch(() => undefined);
  const nc = await connect({ servers: NATS_URL, reconnect: false });
  try {
    await (await jetstreamManager(nc)).streams.delete(`KV_${c.name}`).catch(() => undefined);
  } finally {
    await nc.close();
  }
}

/** `count` senders whose pairs the spread over `names` gives to `owner` (any owner when null). */
function senders(names: string[], owner: string | null, tag: string, count: number): string[] {
  const owners = assignPartitions(PARTITIONS, names);
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    const s = `${tag}-${i}`;
    if (owner === null || owners[partitionOf(AGENT, s, PARTITIONS)] === owner) out.push(s);
  }
  return out;
}

/** One stored echo turn; a failed or wrong one fails the suite (an error must not count as a fast turn). */
async function turn(c: AgentdClient, sender: string): Promise<void> {
  const r = await c.send(AGENT, 'hello', { sender });
  if (r.content !== 'hello') throw new Error(`turn of ${sender} answered ${JSON.stringify(r.content)}`);
}

/** Turns per second: loop i sends on clients[i % n] to pairs[i], one turn in flight each, counted over `ms` after `warmupMs`. */
async function rate(clients: AgentdClient[], pairs: string[], ms: number, warmupMs: number): Promise<number> {
  let counting = false;
  let stop = false;
  let count = 0;
  const loops = pairs.map(async (sender, i) => {
    while (!stop) {
      await turn(clients[i % clients.length]!, sender);
      if (counting) count++;
    }
  });
  await new Promise((r) => setTimeout(r, warmupMs));
  counting = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  counting = false;
  const seconds = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(loops);
  return count / seconds;
}

/** One turn at a time: p50 and p99 in microseconds. */
async function latency(client: AgentdClient, pairs: string[], n: number): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < 20; i++) await turn(client, pairs[i % pairs.length]!);
  const h = createHistogram();
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await turn(client, pairs[i % pairs.length]!);
    h.record(Number(process.hrtime.bigint() - t0) || 1);
  }
  return { p50: h.percentile(50) / 1000, p99: h.percentile(99) / 1000 };
}

export async function run(ctx: BenchContext): Promise<void> {
  const why = await unavailable();
  if (why !== null) {
    Report.progress(`cluster: skipped: ${why}`);
    return;
  }
  const THREE = ['a', 'b', 'c'];
  Report.progress(`cluster: starting a one-node cluster and a three-node cluster (${ctx.workers} workers each) on ${NATS_URL}`);
  const one = await startCluster(ctx, ['solo']);
  let three: Cluster | null = null;
  try {
    three = await startCluster(ctx, THREE);
    const [a, b, c] = three.nodes.map((n) => n.client) as [AgentdClient, AgentdClient, AgentdClient];
    const n = ctx.quick ? 300 : 500;
    const rates = new Map<string, number[]>();
    const p50s = new Map<string, number[]>();
    const p99s = new Map<string, number[]>();
    const push = (m: Map<string, number[]>, k: string, v: number): void => void m.set(k, [...(m.get(k) ?? []), v]);
    for (let round = 0; round < ctx.report.rounds; round++) {
      // Fresh pairs each round, so histories stay short and alike everywhere.
      const tag = `r${round}`;
      /** Rate and latency of `client` on fresh pairs: all of them the owner's (or any, owner null) in `nodes`. */
      const rateAndLatency = (key: string, client: AgentdClient, nodes: string[], owner: string | null) => async (): Promise<void> => {
        const pairs = senders(nodes, owner, `${tag}-${key}`, LOOPS);
        push(rates, key, await rate([client], pairs, ctx.sizes.rateMs, ctx.sizes.warmupMs));
        const l = await latency(client, pairs, n);
        push(p50s, key, l.p50);
        push(p99s, key, l.p99);
      };
      const cases: [string, () => Promise<void>][] = [
        ['one', rateAndLatency('one', one.nodes[0]!.client, ['solo'], null)],
        ['owner', rateAndLatency('owner', a, THREE, 'a')],
        // The client on b, every pair owned by a: each turn takes the hop.
        ['hop', rateAndLatency('hop', b, THREE, 'a')],
        ['spread', async () => {
          // Clients on every node, pairs of every partition: two in three turns take the hop.
          push(rates, 'spread', await rate([a, b, c], senders(THREE, null, `${tag}-all`, LOOPS), ctx.sizes.rateMs, ctx.sizes.warmupMs));
        }],
      ];
      for (const [, measure] of round % 2 === 0 ? cases : [...cases].reverse()) await measure();
      Report.progress(`cluster: round ${round + 1}/${ctx.report.rounds}`);
    }
    const add = (name: string, unit: string, m: Map<string, number[]>, k: string, anchor: string, anchorKey: string | null): void =>
      ctx.report.add({ suite: 'cluster', name, unit, value: median(m.get(k)!), anchor, anchor_value: anchorKey === null ? null : median(m.get(anchorKey)!), spread: spread(m.get(k)!) });
    add(`stored echo turns ${LOOPS}x1, 1-node cluster`, 'turns/s', rates, 'one', '', null);
    add(`stored echo turns ${LOOPS}x1, 3 nodes, client on the owner`, 'turns/s', rates, 'owner', '1-node cluster', 'one');
    add(`stored echo turns ${LOOPS}x1, 3 nodes, client on a non-owner (hop)`, 'turns/s', rates, 'hop', 'client on the owner', 'owner');
    add(`stored echo turns ${LOOPS}x1, 3 nodes, clients on all, all partitions`, 'turns/s', rates, 'spread', '1-node cluster', 'one');
    add('turn latency p50, 1-node cluster', 'us', p50s, 'one', '', null);
    add('turn latency p50, 3 nodes, client on the owner', 'us', p50s, 'owner', '1-node cluster', 'one');
    add('turn latency p50, 3 nodes, client on a non-owner (hop)', 'us', p50s, 'hop', 'client on the owner', 'owner');
    add('turn latency p99, 1-node cluster', 'us', p99s, 'one', '', null);
    add('turn latency p99, 3 nodes, client on the owner', 'us', p99s, 'owner', '1-node cluster', 'one');
    add('turn latency p99, 3 nodes, client on a non-owner (hop)', 'us', p99s, 'hop', 'client on the owner', 'owner');
  } finally {
    await stopCluster(one);
    if (three !== null) await stopCluster(three);
  }
}
