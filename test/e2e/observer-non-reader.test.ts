/**
 * Observers that never read (many connections, each with several
 * `subscribe_events` streams) while other clients' turns run: an agent event
 * is encoded once and its big bodies shared by every observer's socket, each
 * connection's unsent events are bounded by `observer_backlog_bytes`, and a
 * connection past it that reads nothing is cut as a slow consumer. The
 * bystanders' turns finish, a healthy client's ping answers, and the memory
 * the daemon holds returns near its start once the non-readers are gone.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { collect, testClient, testDaemon, waitFor } from '../helpers/daemon.ts';
import { RawConn } from '../helpers/raw.ts';
import { heldBytes, memoryProbeEnv } from '../helpers/thread-memory.ts';
import { statusBytes } from '../helpers/resident-memory.ts';
import { end } from '../helpers/events.ts';

const MIB = 1024 * 1024;
const CONNECTIONS = 60;
const STREAMS = 8;
const TURNS = 5;
const WORDS = Array.from({ length: 2000 }, (_, i) => `word${i}`).join(' ');

/** A connection with STREAMS open event streams that reads nothing once they are in place. */
async function nonReader(socketPath: string): Promise<RawConn> {
  const raw = await RawConn.open(socketPath);
  onTestFinished(() => raw.close());
  for (let i = 1; i <= STREAMS; i++) raw.send(i, { subscribe_events: {} });
  raw.send(STREAMS + 1, { ping: {} });
  await raw.request(STREAMS + 1); // the streams before it are in place
  raw.socket.pause(); // never read again
  return raw;
}

describe('observers that never read', () => {
  it('are cut past observer_backlog_bytes while bystander turns finish, and their memory returns', { timeout: 240_000 }, async () => {
    const probe = memoryProbeEnv();
    const d = await testDaemon({ workers: 2, env: probe.env, config: { observer_backlog_bytes: 128 * 1024, agents: { assistant: { model: 'echo' } } } });
    const bystander = await testClient(d);
    const pinger = await testClient(d);
    await bystander.send('assistant', WORDS, { sender: 'warm' });
    const baseline = await heldBytes(probe.dir);
    const rssStart = statusBytes(d.proc.pid!, 'VmRSS');

    const raws = await Promise.all(Array.from({ length: CONNECTIONS }, () => nonReader(d.socketPath)));
    expect((await bystander.stats()).connections).toBe(2 + CONNECTIONS);
    const turns = Array.from({ length: TURNS }, (_, i) => collect(bystander.stream('assistant', WORDS, { sender: `b${i}` })));
    const pongs: Promise<void>[] = [];
    for (let i = 0; i < TURNS; i++) pongs.push(pinger.ping());
    for (const evs of await Promise.all(turns)) expect(end(evs).stop_reason).toBe('text');
    await Promise.all(pongs);
    const rssPeak = statusBytes(d.proc.pid!, 'VmRSS');

    // Every non-reader went past the bound and read nothing: each is cut, its streams with it.
    await waitFor(async () => (await pinger.stats()).connections === 2, 'the non-readers to be cut', 60_000);
    // A paused socket cannot see its end: the daemon's count of connections can. Their sockets go here too.
    for (const raw of raws) raw.close();
    expect((await pinger.stats()).shard_stalls).toBe(0);
    // A new observer still gets events: the hub forgot the cut ones, not everyone.
    const watcher = await testClient(d);
    const seen = (async () => {
      for await (const ev of watcher.events()) if (ev.type === 'done') return ev;
      return null;
    })();
    await watcher.ping();
    await bystander.send('assistant', 'after the cut', { sender: 'after' });
    expect((await seen)?.content).toBe('after the cut');
    await watcher.close();

    let held = Infinity;
    await waitFor(async () => (held = await heldBytes(probe.dir)) <= baseline + 8 * MIB, 'held memory to return near its start', 120_000).catch(() => {});
    console.log(`observer non-readers: held ${(baseline / MIB).toFixed(1)} -> ${(held / MIB).toFixed(1)} MiB; VmRSS ${(rssStart / MIB).toFixed(0)} -> ${(rssPeak / MIB).toFixed(0)} -> ${(statusBytes(d.proc.pid!, 'VmRSS') / MIB).toFixed(0)} MiB`);
    expect(held).toBeLessThanOrEqual(baseline + 8 * MIB);
  });
});
