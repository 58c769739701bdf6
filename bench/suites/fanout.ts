/**
 * Fan-out. Publish: one `publish_event` firing 1, 100 or 10,000
 * subscriptions, timed from the publish to the last fired turn's `done` seen
 * by an observer. Broadcast: one turn's agent events written to 1, 100 or
 * 1,000 observers, timed to the last observer's last event, beside Redis
 * PUBLISH of as many messages to as many subscribers.
 */
import { createConnection } from 'node:net';
import { AgentdClient } from '../../src/client/index.ts';
import { frameClient, observer, redisSubscriber, type Listener } from '../lib/clients.ts';
import type { BenchContext } from '../lib/context.ts';
import { median, processCpuSeconds, spread } from '../lib/load.ts';
import { startAgentd, type Proc } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';

/** Broadcast rounds timed, at least (each a few tens of ms at 1,000 observers: the per-round CPU varies, the median steadies it). */
const BROADCAST_ROUNDS = 21;
/** Untimed broadcast rounds first, on both servers. */
const WARM_ROUNDS = 40;
/** Fired turns spread over this many target agents, so they run in parallel across shards. */
const TARGET_AGENTS = 100;
const WORDS = 50;

export async function run(ctx: BenchContext): Promise<void> {
  const rounds = ctx.report.rounds;
  const agents: Record<string, unknown> = { assistant: { model: 'echo' } };
  for (let i = 0; i < TARGET_AGENTS; i++) agents[`fan${i}`] = { model: 'echo' };
  const sizes = ctx.quick ? [1, 100, 2_000] : [1, 100, 10_000];
  // One publish is one chain: the default max_chain_turns (1000) would drop the larger fan-outs' turns, and the wait for them would never end.
  const d = await startAgentd(ctx.workers, agents, { max_chain_turns: Math.max(...sizes) });
  try {
    // --- publish fan-out
    const admin = await frameClient(d.unix, () => ({ ping: {} }));
    const watch = await observer(d.unix, false);
    for (const n of sizes) {
      const source = `fan.${n}`;
      const subscribe = await frameClient(d.unix, (i) => ({ subscribe_event: { source, target_agent: `fan${i % TARGET_AGENTS}` } }));
      for (let i = 0; i < n; i += 256) await Promise.all(Array.from({ length: Math.min(256, n - i) }, () => subscribe.call()));
      subscribe.close();
      const times: number[] = [];
      const rates: number[] = [];
      const publish = await frameClient(d.unix, () => ({ publish_event: { source, payload: 'deploy finished' } }));
      for (let r = 0; r < rounds; r++) {
        await admin.call(); // barrier: the daemon has caught up
        watch.reset();
        const t0 = process.hrtime.bigint();
        await publish.call();
        await watch.waitFor(n);
        const s = Number(process.hrtime.bigint() - t0) / 1e9;
        times.push(s * 1e6);
        rates.push(n / s);
      }
      publish.close();
      ctx.report.add({ suite: 'fanout', name: `publish to ${n} subscriptions, to last done`, unit: 'us', value: median(times), anchor: '', anchor_value: null, spread: spread(times) });
      ctx.report.add({ suite: 'fanout', name: `publish to ${n} subscriptions, fired turns/s`, unit: 'turns/s', value: median(rates), anchor: '', anchor_value: null, spread: spread(rates) });
      Report.progress(`fanout: publish to ${n}: done`);
    }
    watch.close();
    admin.close();

    // --- observer broadcast
    const redis = ctx.systems.find((s) => s.name === 'redis');
    for (const k of ctx.quick ? [1, 100, 500] : [1, 100, 1_000]) await broadcast(ctx, d, redis?.proc ?? null, k);
  } finally {
    await d.stop();
  }
}

/**
 * One turn's agent events to `k` observers, beside Redis PUBLISH of as many
 * messages to as many subscribers. Untimed rounds first: the JIT compiles the
 * broadcast path for a while on a fresh daemon, a one-off cost the timed
 * rounds should not count (Redis is warmed alike). Each timed round reads
 * both servers' own CPU (all threads, /proc): the bench's clients read and
 * count every delivery in both cases, so the servers' CPU is what differs.
 */
async function broadcast(ctx: BenchContext, d: Proc, redis: Proc | null, k: number): Promise<void> {
  const rounds = Math.max(ctx.report.rounds, ctx.quick ? 3 : BROADCAST_ROUNDS);
  const turn = await frameClient(d.unix, () => ({ stream: { agent: 'assistant', content: 'word '.repeat(WORDS), sender: 'broadcast', ephemeral: true } }));
  const events = WORDS + 3; // text_start, WORDS deltas, text_end, done
  const listeners: Listener[] = [];
  for (let i = 0; i < k; i++) listeners.push(await observer(d.unix, true));
  // A barrier, not a guess: every subscription is in before the first turn. One read
  // after the turn began would see only part of it, and its wait would never end.
  await untilObservers(d.unix, k);
  const subs: Listener[] = [];
  if (redis !== null) for (let i = 0; i < k; i++) subs.push(await redisSubscriber(redis.unix, 'bench'));
  const payload = JSON.stringify({ agent: 'assistant', sender: 'broadcast', kind: 'text_delta', content: 'word ', timestamp: new Date().toISOString(), ephemeral: true });
  // Every round starts settled: the turn's reply reaches the bench before its events reach every
  // observer (main writes the reply first), so the answer alone is no barrier; the last event is.
  const ours = async (): Promise<Sample> => {
    for (const l of listeners) l.reset();
    return timed(d, async () => {
      await turn.call();
      await Promise.all(listeners.map((l) => l.waitFor(events)));
    });
  };
  const theirs = async (): Promise<Sample> => {
    for (const s of subs) s.reset();
    let close = (): void => {};
    const sample = await timed(redis!, async () => {
      close = await redisPublisher(redis!.unix, payload, events);
      await Promise.all(subs.map((s) => s.waitFor(events)));
    });
    close();
    return sample;
  };
  for (let r = 0; r < (ctx.quick ? 3 : WARM_ROUNDS); r++) {
    await ours();
    if (redis !== null) await theirs();
  }
  const a: Sample[] = [];
  const b: Sample[] = [];
  let lagged = false;
  for (let r = 0; r < rounds; r++) {
    a.push(await ours());
    lagged ||= listeners.some((l) => l.lagged());
    if (redis !== null) b.push(await theirs());
  }
  reportBroadcast(ctx, k, events, a, redis === null ? null : b, lagged);
  for (const l of [...listeners, ...subs]) l.close();
  turn.close();
  Report.progress(`fanout: broadcast to ${k}: done`);
}

/** One timed window: wall time and the server's CPU, in µs. */
interface Sample {
  us: number;
  cpuUs: number;
}

async function timed(server: Proc, window: () => Promise<void>): Promise<Sample> {
  const cpu0 = processCpuSeconds(server.proc.pid!);
  const t0 = process.hrtime.bigint();
  await window();
  const us = Number(process.hrtime.bigint() - t0) / 1e3;
  return { us, cpuUs: (processCpuSeconds(server.proc.pid!) - cpu0) * 1e6 };
}

function reportBroadcast(ctx: BenchContext, k: number, events: number, ours: Sample[], theirs: Sample[] | null, lagged: boolean): void {
  const note = lagged ? 'some observer lagged' : 'no observer lagged';
  const anchor = theirs === null ? '' : 'redis PUBLISH';
  const row = (name: string, unit: string, of: (s: Sample) => number): void => {
    const mine = ours.map(of);
    ctx.report.add({ suite: 'fanout', name: `${events} events to ${k} observers, ${name}`, unit, value: median(mine), anchor, anchor_value: theirs === null ? null : median(theirs.map(of)), spread: spread(mine), note });
  };
  row('to last delivery', 'us', (s) => s.us);
  row('deliveries/s', 'msg/s', (s) => (k * events) / (s.us / 1e6));
  // The window holds the turn's own work too: only against a big broadcast is that a small part.
  if (k >= 500) row('server CPU per delivery', 'ns', (s) => (s.cpuUs * 1e3) / (k * events));
}

/** Waits until the daemon counts exactly `k` open subscribe_events streams. */
async function untilObservers(path: string, k: number): Promise<void> {
  const c = await AgentdClient.connect({ path });
  try {
    while (((await c.request('get_stats', {})).stats as { observers: number }).observers !== k) await new Promise((r) => setTimeout(r, 10));
  } finally {
    await c.close();
  }
}

/** Publishes `count` messages on one connection, pipelined; returns a closer. */
async function redisPublisher(target: string, payload: string, count: number): Promise<() => void> {
  const cmd = `*3\r\n$7\r\nPUBLISH\r\n$5\r\nbench\r\n$${Buffer.byteLength(payload)}\r\n${payload}\r\n`;
  const s = createConnection(target);
  await new Promise<void>((r) => s.once('connect', () => r()));
  s.write(cmd.repeat(count));
  return () => s.destroy();
}
