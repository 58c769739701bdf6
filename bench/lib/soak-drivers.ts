/**
 * The soak run's load: each driver is a loop that runs until `load.running`
 * turns false, then finishes its request in flight and returns. Every driver
 * is bounded (a fixed number of loops, each with one request in flight), so
 * the load is steady rather than growing.
 */
import { setTimeout as pause } from 'node:timers/promises';
import { createConnection, type Socket } from 'node:net';
import { AgentdClient, AgentdError } from '../../src/client/index.ts';
import { encodeBody, encodeFrame, FLAG_LAST, FrameDecoder } from '../../src/shared/codec.ts';
import type { TurnMeter } from './soak-metrics.ts';

/** Turns one sender runs before the loop moves to a fresh one: histories stay short, conversations get evicted. */
export const TURNS_PER_PAIR = 200;

/** What every driver shares. */
export interface Load {
  socketPath: string;
  running: boolean;
  meter: TurnMeter;
  /** The searcher's `search_sessions` latencies. */
  searches: TurnMeter;
  /** Acknowledged turns: "agent\u0000sender" -> contents whose `send` got its response. */
  acked: Map<string, string[]>;
  /** Failures of requests that should have succeeded, by driver. */
  errors: Map<string, number>;
  /** Requests of each driver completed, for the report. */
  done: Map<string, number>;
}

export const pairKey = (agent: string, sender: string): string => `${agent}\u0000${sender}`;

function count(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/** Runs `body` until the load stops; a failure is counted for `name`, logged once, and the loop goes on. */
async function loop(load: Load, name: string, body: (i: number) => Promise<void>): Promise<void> {
  for (let i = 0; load.running; i++) {
    try {
      await body(i);
      count(load.done, name);
    } catch (err) {
      if ((load.errors.get(name) ?? 0) === 0) process.stderr.write(`soak: ${name} failed: ${(err as Error).message}\n`);
      count(load.errors, name);
      await pause(100);
    }
  }
}

/** `send` turns on rotating pairs; each acknowledged one is recorded for the final check. */
export function sender(load: Load, client: AgentdClient, slot: string): Promise<void> {
  return loop(load, 'send', async (i) => {
    const who = `${slot}-${Math.floor(i / TURNS_PER_PAIR)}`;
    const content = `soak ${slot} turn ${i} of a steady load`;
    const t0 = process.hrtime.bigint();
    await client.send('assistant', content, { sender: who });
    load.meter.record(process.hrtime.bigint() - t0);
    const key = pairKey('assistant', who);
    let list = load.acked.get(key);
    if (list === undefined) load.acked.set(key, (list = []));
    list.push(content);
  });
}

/** Streamed turns on rotating pairs, read to the end. */
export function streamer(load: Load, client: AgentdClient, slot: string): Promise<void> {
  return loop(load, 'stream', async (i) => {
    const t0 = process.hrtime.bigint();
    let ended = false;
    for await (const ev of client.stream('assistant', `streamed words for the soak, number ${i}`, { sender: `${slot}-${Math.floor(i / TURNS_PER_PAIR)}` })) {
      if (ev.type === 'end') ended = true;
    }
    if (!ended) throw new Error('a stream ended without `end`');
    load.meter.record(process.hrtime.bigint() - t0);
  });
}

/** Streams a turn of the slow agent and kills it at its first chunk (a 499 or a cancelled end is the expected outcome). */
export function killer(load: Load, client: AgentdClient, other: AgentdClient): Promise<void> {
  return loop(load, 'kill', async (i) => {
    const who = `kill-${i % 8}`;
    let killed = false;
    try {
      for await (const ev of client.stream('slow', 'one two three four five six seven eight', { sender: who })) {
        if (ev.type === 'chunk' && !killed) {
          killed = true;
          await other.kill('slow', who);
        }
      }
    } catch (err) {
      if (!(err instanceof AgentdError && err.code === 499)) throw err;
    }
  });
}

/** Opens a connection, starts a slow turn, and drops the connection at its first frame. */
export function disconnecter(load: Load): Promise<void> {
  return loop(load, 'disconnect', async (i) => {
    const c = await AgentdClient.connect({ path: load.socketPath });
    try {
      for await (const ev of c.stream('slow', 'a turn whose client goes away', { sender: `gone-${i % 8}` })) {
        if (ev.type === 'chunk') break;
      }
    } finally {
      await c.close(); // destroys the socket: the turn is still running
    }
  });
}

/** A few turns then `compact`, on rotating pairs of its own (compaction rewrites history, so these are not checked). */
export function compactor(load: Load, client: AgentdClient): Promise<void> {
  return loop(load, 'compact', async (i) => {
    const who = `compact-${Math.floor(i / 4)}`;
    for (let k = 0; k < 5; k++) await client.send('assistant', `words to compact ${i} ${k}`, { sender: who });
    await client.request('compact', { agent: 'assistant', sender: who });
    await pause(200);
  });
}

export function searcher(load: Load, client: AgentdClient): Promise<void> {
  const queries = ['soak', 'steady load', 'streamed', 'compact', 'nothing-matches-this'];
  return loop(load, 'search', async (i) => {
    const t0 = process.hrtime.bigint();
    await client.request('search_sessions', { query: queries[i % queries.length]!, limit: 5 });
    load.searches.record(process.hrtime.bigint() - t0);
    await pause(100);
  });
}

/** Publishes on `soak:tick` (subscribed to by `assistant`) twice a second. */
export function publisher(load: Load, client: AgentdClient): Promise<void> {
  return loop(load, 'publish', async (i) => {
    await client.publish('soak:tick', `tick ${i}`);
    await pause(500);
  });
}

/** The runaway agent `hot` (high echo cpu_us and delay_ms): one turn at a time. */
export function runaway(load: Load, client: AgentdClient): Promise<void> {
  return loop(load, 'hot', async (i) => {
    await client.send('hot', 'burn burn', { sender: `hot-${i % 4}` });
  });
}

/**
 * Sends one request on a raw socket and calls `onFrame` for each reply frame.
 * With `readEveryMs`, it reads slowly: one socket read, then paused until the
 * next tick of that period.
 */
function rawRequest(path: string, body: unknown, onFrame: (last: boolean) => void, readEveryMs: number | null): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = createConnection(path);
    s.once('error', reject);
    s.once('connect', () => {
      s.on('error', () => {});
      const decoder = new FrameDecoder({ onFrame: (_id, flags) => onFrame((flags & FLAG_LAST) !== 0), onOversize: () => s.destroy() }, 1 << 30);
      s.on('data', (c: Buffer) => {
        decoder.push(c);
        if (readEveryMs !== null) s.pause();
      });
      if (readEveryMs !== null) {
        const timer = setInterval(() => s.resume(), readEveryMs);
        s.once('close', () => clearInterval(timer));
      }
      s.write(encodeFrame(1, 0, encodeBody(body)));
      resolve(s);
    });
  });
}

async function untilStopped(load: Load): Promise<void> {
  while (load.running) await pause(200);
}

/** An observer of every agent event reading at full speed (`fast`) or one read every 250 ms, whose events the daemon must drop, not queue. */
export async function observer(load: Load, fast: boolean): Promise<void> {
  const name = fast ? 'observed' : 'observed-slowly';
  const s = await rawRequest(load.socketPath, { subscribe_events: {} }, () => count(load.done, name), fast ? null : 250);
  await untilStopped(load);
  s.destroy();
}

/**
 * Streams a long turn and reads it one socket read every 20 ms, turn after
 * turn. It moves to a new pair every 50 turns, as the other drivers do: one
 * pair fed 4,000-word turns forever is a conversation that grows forever
 * (every turn adds ~46 KB the model sees again), which no memory budget can
 * bound short of compaction.
 */
export function slowStreamReader(load: Load): Promise<void> {
  const words = Array.from({ length: 4_000 }, (_, i) => `w${i}`).join(' ');
  return loop(load, 'slow-reader', async (i) => {
    let done!: () => void;
    const ended = new Promise<void>((r) => (done = r));
    const body = { stream: { agent: 'assistant', content: words, sender: `slow-${Math.floor(i / 50)}` } };
    const s = await rawRequest(load.socketPath, body, (last) => last && done(), 20);
    s.once('close', () => done());
    await ended;
    s.destroy();
  });
}
