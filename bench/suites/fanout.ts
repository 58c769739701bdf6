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
import { startAgentd } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';

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
    const turn = await frameClient(d.unix, () => ({ stream: { agent: 'assistant', content: 'word '.repeat(WORDS), sender: 'broadcast', ephemeral: true } }));
    const events = WORDS + 3; // text_start, WORDS deltas, text_end, done
    for (const k of ctx.quick ? [1, 100, 500] : [1, 100, 1_000]) {
      const listeners: Listener[] = [];
      for (let i = 0; i < k; i++) listeners.push(await observer(d.unix, true));
      // A barrier, not a guess: every subscription is in before the first timed turn. One read
      // after the turn began would see only part of it, and its wait would never end.
      await untilObservers(d.unix, k);
      const subs: Listener[] = [];
      if (redis !== undefined) for (let i = 0; i < k; i++) subs.push(await redisSubscriber(redis.proc.unix, 'bench'));
      const ours: number[] = [];
      const theirs: number[] = [];
      // The servers' own CPU (all threads, /proc) over the timed windows: what each spends per delivery,
      // apart from the bench's clients, which read and count every delivery in both cases.
      let ourCpu = 0;
      let theirCpu = 0;
      let lagged = false;
      const payload = JSON.stringify({ agent: 'assistant', sender: 'broadcast', kind: 'text_delta', content: 'word ', timestamp: new Date().toISOString(), ephemeral: true });
      for (let r = 0; r < rounds; r++) {
        // A settled start: the settling turn's events are all out before the timed turn begins. Its
        // reply reaches the bench before its events reach every observer (main writes the reply
        // first), so its answer alone is no barrier: the timed window would also drain its events.
        for (const l of listeners) l.reset();
        await turn.call();
        await Promise.all(listeners.map((l) => l.waitFor(events)));
        for (const l of listeners) l.reset();
        let cpu0 = processCpuSeconds(d.proc.pid!);
        let t0 = process.hrtime.bigint();
        await turn.call();
        await Promise.all(listeners.map((l) => l.waitFor(events)));
        ours.push(Number(process.hrtime.bigint() - t0) / 1e3);
        ourCpu += processCpuSeconds(d.proc.pid!) - cpu0;
        lagged ||= listeners.some((l) => l.lagged());
        if (redis !== undefined) {
          for (const s of subs) s.reset();
          cpu0 = processCpuSeconds(redis.proc.proc.pid!);
          t0 = process.hrtime.bigint();
          const pub = await redisPublisher(redis.proc.unix, payload, events);
          await Promise.all(subs.map((s) => s.waitFor(events)));
          theirs.push(Number(process.hrtime.bigint() - t0) / 1e3);
          theirCpu += processCpuSeconds(redis.proc.proc.pid!) - cpu0;
          pub();
        }
      }
      const value = median(ours);
      const rate = (k * events) / (value / 1e6);
      const note = lagged ? 'some observer lagged' : 'no observer lagged';
      ctx.report.add({ suite: 'fanout', name: `${events} events to ${k} observers, to last delivery`, unit: 'us', value, anchor: redis ? 'redis PUBLISH' : '', anchor_value: redis ? median(theirs) : null, spread: spread(ours), note });
      ctx.report.add({ suite: 'fanout', name: `${events} events to ${k} observers, deliveries/s`, unit: 'msg/s', value: rate, anchor: redis ? 'redis PUBLISH' : '', anchor_value: redis ? (k * events) / (median(theirs) / 1e6) : null, spread: spread(ours), note });
      const perDelivery = (cpu: number): number => (cpu * 1e9) / (rounds * k * events);
      // /proc counts CPU in ticks (10 ms): only the big broadcast's windows are long enough to read.
      if (k >= 500) ctx.report.add({ suite: 'fanout', name: `${events} events to ${k} observers, server CPU per delivery`, unit: 'ns', value: perDelivery(ourCpu), anchor: redis ? 'redis PUBLISH' : '', anchor_value: redis ? perDelivery(theirCpu) : null, spread: 0, note });
      for (const l of [...listeners, ...subs]) l.close();
      Report.progress(`fanout: broadcast to ${k}: done`);
    }
    turn.close();
  } finally {
    await d.stop();
  }
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
