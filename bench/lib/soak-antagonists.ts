/**
 * The soak run's antagonists: the worst of what one client could do to the
 * daemon, repeated in the background at a steady pace while the checked load
 * runs, so the run shows the bounds hold over time and leave nothing behind.
 * Each is a loop like the drivers' (soak-drivers.ts): one cycle at a time,
 * counted in `done`; their own failures are counted but not judged (what a
 * cycle provokes is a refusal or a cut).
 *
 * - observerFlood: 16 connections with 8 `subscribe_events` each that never
 *   read, held for a few seconds (cut as slow consumers past
 *   observer_backlog_bytes), then closed;
 * - bigPublish: a 1 MiB `publish_event` (max_event_payload_bytes' default) to
 *   8 subscriptions, and one just past the cap (413); the fired conversation
 *   is deleted after each cycle, so it does not grow;
 * - historyNonReader: 80 pipelined `get_conversation_history` of a 1 MiB
 *   conversation on a connection that reads none (cut past hard_limit_bytes);
 * - searchAndLeave: 6 pipelined `search_sessions`, then the connection closes
 *   (the searches are cancelled);
 * - cpuRunaway: a 12-word turn of an agent with echo cpu_us 1,000,000 (the
 *   maximum), one at a time.
 */
import { setTimeout as pause } from 'node:timers/promises';
import { createConnection, type Socket } from 'node:net';
import { AgentdClient } from '../../src/client/index.ts';
import { encodeBody, encodeFrame } from '../../src/shared/codec.ts';
import type { Load } from './soak-drivers.ts';

/** The agents the antagonists use, added to the soak's. */
export const ANTAGONIST_AGENTS = {
  fan: { model: 'echo' },
  runaway: { model: 'echo', echo: { cpu_us: 1_000_000 } },
};

const MIB = 1024 * 1024;
const FAN_SUBSCRIPTIONS = 8;
const BIG_SOURCE = 'soak:big';

function count(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/** As the drivers' loop: runs `body` until the load stops, counting cycles and failures under `name`. */
async function loop(load: Load, name: string, body: (i: number) => Promise<void>): Promise<void> {
  for (let i = 0; load.running; i++) {
    try {
      await body(i);
      count(load.done, name);
    } catch {
      count(load.errors, name);
      await pause(500);
    }
  }
}

/** A raw connection that writes `frames` and never reads. */
function nonReader(path: string, frames: Buffer): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = createConnection(path);
    s.once('error', reject);
    s.once('connect', () => {
      s.on('error', () => {});
      s.pause();
      s.write(frames);
      resolve(s);
    });
  });
}

const pipelined = (count: number, body: unknown): Buffer => Buffer.concat(Array.from({ length: count }, (_, i) => encodeFrame(i + 1, 0, encodeBody(body))));

export function observerFlood(load: Load): Promise<void> {
  return loop(load, 'antagonist-observers', async () => {
    const sockets = await Promise.all(Array.from({ length: 16 }, () => nonReader(load.socketPath, pipelined(8, { subscribe_events: {} }))));
    await pause(5_000);
    for (const s of sockets) s.destroy();
  });
}

export async function bigPublish(load: Load, client: AgentdClient): Promise<void> {
  for (let i = 0; i < FAN_SUBSCRIPTIONS; i++) await client.subscribe(BIG_SOURCE, 'fan');
  const payload = `${'x'.repeat(1023)} `.repeat(1024);
  await loop(load, 'antagonist-publish', async () => {
    await client.publish(BIG_SOURCE, `${payload}!`).catch(() => {}); // past the cap: 413, nothing fires
    await client.publish(BIG_SOURCE, payload);
    for (;;) {
      const r = await client.request('list_active_conversations', { agent: 'fan' });
      const busy = (r.active_conversations as { conversations: { running: boolean; queued: number }[] }).conversations.some((c) => c.running || c.queued > 0);
      if (!busy) break;
      await pause(200);
    }
    await client.request('delete_conversation', { agent: 'fan', sender: `event:${BIG_SOURCE}` });
    await pause(2_000);
  });
}

export async function historyNonReader(load: Load, client: AgentdClient): Promise<void> {
  await client.send('assistant', 'h'.repeat(MIB / 2), { sender: 'antagonist-history' });
  await loop(load, 'antagonist-history', async () => {
    const s = await nonReader(load.socketPath, pipelined(80, { get_conversation_history: { agent: 'assistant', sender: 'antagonist-history' } }));
    await new Promise<void>((resolve) => {
      s.once('close', () => resolve());
      setTimeout(() => resolve(), 15_000).unref();
    });
    s.destroy();
    await pause(2_000);
  });
}

export function searchAndLeave(load: Load): Promise<void> {
  return loop(load, 'antagonist-search', async (i) => {
    const s = await nonReader(load.socketPath, pipelined(6, { search_sessions: { query: `soak turn ${i % 50}`, limit: 50 } }));
    await pause(300);
    s.destroy();
    await pause(1_000);
  });
}

export function cpuRunaway(load: Load, client: AgentdClient): Promise<void> {
  return loop(load, 'antagonist-runaway', async (i) => {
    await client.send('runaway', 'one two three four five six seven eight nine ten eleven twelve', { sender: `runaway-${i % 2}` });
    await pause(3_000);
  });
}
