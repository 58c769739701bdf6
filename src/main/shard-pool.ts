/**
 * The shard pool: N worker threads, each owning the pairs that hash to it.
 *
 * This is raw worker_threads rather than piscina on purpose. A shard is not a
 * task runner: it is a long-lived, stateful thread with a two-way ordered
 * stream (turns and cancels down, batched frames up, many per request).
 * piscina's task round trip would add its per-task cost to every turn, its
 * abort kills a whole thread, and a frame channel beside it would still be
 * needed; what piscina would give us (respawn, sticky routing) is the few
 * lines below. See the closing note of issue 2.
 *
 * Main → shard messages produced in one synchronous run (one socket read,
 * usually) are batched into one postMessage per shard. Every request sent to
 * a shard is tracked until its LAST frame comes back, so that if the shard
 * dies each one still gets its final frame and nothing is left hanging.
 */
import { Worker } from 'node:worker_threads';
import { workerScript } from './worker-script.ts';
import { Code } from '../shared/errors.ts';
import { frameOf, FLAG_LAST } from '../shared/codec.ts';
import { shardOf } from '../shared/hash.ts';
import { StopReason, zeroUsage } from '../shared/protocol.ts';
import {
  SECTION_HEADER_BYTES,
  type ActiveConversation,
  type FromShard,
  type FrameBatch,
  type ShardInit,
  type ShardQuery,
  type ToShard,
  type TurnFinished,
} from '../shared/threads.ts';
import type { Logger } from '../shared/log.ts';
import { ownerToken, WriteLock } from '../shared/write-lock.ts';

/** A request whose LAST frame has not come back from its shard yet. */
interface Inflight {
  conn: number;
  req: number;
  /** `stream` needs `start`+`end` if its shard dies; the others one error. */
  kind: 'stream' | 'rr';
  agent: string;
  started: boolean;
}

interface PendingQuery {
  resolve(result: ActiveConversation[]): void;
}

interface ShardThread {
  index: number;
  worker: Worker;
  outbound: ToShard[];
  inflight: Map<string, Inflight>;
  queries: Map<number, PendingQuery>;
  generation: number;
}

export interface ShardPoolOptions {
  count: number;
  /** The start-up message of shard `index`; called again for a replacement. */
  init(index: number): ShardInit;
  /** The shards' write lock, released here on behalf of a shard that dies holding it. */
  writeLock: SharedArrayBuffer;
  /** Writes ready-encoded frames to connection `conn` (dropped if it is gone). */
  deliver(conn: number, frames: Uint8Array): void;
  /** A batch of encoded `agent_event` bodies, with the agent of each, for the observers. */
  agentEvents(agents: readonly string[], bodies: readonly Uint8Array[]): void;
  /** A turn finished: the bus publishes `agent:<name>:done`. */
  finished(record: TurnFinished): void;
  log: Logger;
}

const QUERY_TIMEOUT_MS = 5_000;
/** Purging waits for cancelled turns to reach their next await point. */
const PURGE_TIMEOUT_MS = 30_000;

const key = (conn: number, req: number): string => `${conn}:${req}`;

export class ShardPool {
  readonly count: number;
  readonly #opts: ShardPoolOptions;
  readonly #shards: ShardThread[] = [];
  #flushQueued = false;
  #closing = false;
  #nextQid = 1;
  #inflightCount = 0;
  #idleWaiters: (() => void)[] = [];
  readonly #flush = (): void => this.#flushAll();

  constructor(opts: ShardPoolOptions) {
    this.count = opts.count;
    this.#opts = opts;
  }

  /** Starts every shard and resolves when all have said `ready`. */
  async start(): Promise<void> {
    const ready: Promise<void>[] = [];
    for (let i = 0; i < this.count; i++) {
      const shard: ShardThread = { index: i, worker: null!, outbound: [], inflight: new Map(), queries: new Map(), generation: 0 };
      this.#shards.push(shard);
      ready.push(this.#spawn(shard));
    }
    await Promise.all(ready);
  }

  shardFor(agent: string, sender: string): number {
    return shardOf(agent, sender, this.count);
  }

  /** Requests that went to a shard and have not had their LAST frame yet. */
  get inflight(): number {
    return this.#inflightCount;
  }

  /** Sends a request to a shard and tracks it until its LAST frame. */
  request(shard: number, msg: ToShard & { conn: number; req: number; agent: string }, kind: Inflight['kind']): void {
    const s = this.#shards[shard]!;
    s.inflight.set(key(msg.conn, msg.req), { conn: msg.conn, req: msg.req, kind, agent: msg.agent, started: false });
    this.#inflightCount++;
    this.#enqueue(s, msg);
  }

  /** Sends a message that expects no reply (a bus-fired turn) to one shard. */
  send(shard: number, msg: ToShard): void {
    this.#enqueue(this.#shards[shard]!, msg);
  }

  /** Sends a message that expects no reply to every shard. */
  broadcast(msg: ToShard): void {
    for (const s of this.#shards) this.#enqueue(s, msg);
  }

  /** Asks every shard for its active conversations. */
  async activeConversations(agent: string | null, sender: string | null): Promise<ActiveConversation[]> {
    return (await this.#askAll((qid) => ({ t: 'query', qid, q: 'active', agent, sender }), QUERY_TIMEOUT_MS)).flat();
  }

  /** Has every shard cancel and forget a deleted agent's conversations; resolves once all have. */
  async purgeAgent(agent: string): Promise<void> {
    await this.#askAll((qid) => ({ t: 'query', qid, q: 'purge_agent', agent }), PURGE_TIMEOUT_MS);
  }

  /** Sends a query to every shard and gathers the answers; a dead shard answers empty. */
  #askAll(build: (qid: number) => ShardQuery, timeoutMs: number): Promise<ActiveConversation[][]> {
    return Promise.all(
      this.#shards.map(
        (s) =>
          new Promise<ActiveConversation[]>((resolve, reject) => {
            const qid = this.#nextQid++;
            const timer = setTimeout(() => {
              s.queries.delete(qid);
              reject(new Error(`shard ${s.index} did not answer within ${timeoutMs} ms`));
            }, timeoutMs);
            timer.unref();
            s.queries.set(qid, {
              resolve: (r) => {
                clearTimeout(timer);
                resolve(r);
              },
            });
            this.#enqueue(s, build(qid));
          }),
      ),
    );
  }

  /** Resolves once no request is in flight on any shard. */
  idle(): Promise<void> {
    if (this.#inflightCount === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.#closing = true;
    this.#flushAll();
    await Promise.all(this.#shards.map((s) => s.worker.terminate()));
  }

  #enqueue(s: ShardThread, msg: ToShard): void {
    s.outbound.push(msg);
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      // A microtask: everything decoded from one socket read goes in one post.
      queueMicrotask(this.#flush);
    }
  }

  #flushAll(): void {
    this.#flushQueued = false;
    for (const s of this.#shards) {
      if (s.outbound.length === 0) continue;
      const batch = s.outbound;
      s.outbound = [];
      s.worker.postMessage(batch);
    }
  }

  #spawn(shard: ShardThread): Promise<void> {
    const generation = ++shard.generation;
    const init = this.#opts.init(shard.index);
    const worker = new Worker(workerScript('shard'), { workerData: init, transferList: [init.harnessPort] });
    shard.worker = worker;
    return new Promise<void>((resolve, reject) => {
      let ready = false;
      worker.on('message', (msg: FromShard) => {
        if (msg.t === 'frames') return this.#onBatch(shard, msg);
        ready = true;
        resolve();
      });
      worker.on('error', (err) => {
        this.#opts.log.error({ err, shard: shard.index }, 'shard crashed');
      });
      worker.on('exit', (code) => {
        if (!ready) reject(new Error(`shard ${shard.index} exited with code ${code} during start-up`));
        if (this.#closing || shard.generation !== generation) return;
        this.#onCrash(shard, `shard crashed (exit code ${code})`);
      });
    });
  }

  #onBatch(shard: ShardThread, batch: FrameBatch): void {
    const { started, done } = batch;
    for (let i = 0; i < started.length; i += 2) {
      const f = shard.inflight.get(key(started[i]!, started[i + 1]!));
      if (f !== undefined) f.started = true;
    }
    if (batch.b !== null) {
      const bytes = Buffer.from(batch.b);
      let at = 0;
      while (at < bytes.length) {
        const conn = bytes.readUInt32BE(at);
        const len = bytes.readUInt32BE(at + 4);
        at += SECTION_HEADER_BYTES;
        this.#opts.deliver(conn, bytes.subarray(at, at + len));
        at += len;
      }
    }
    if (batch.ev !== null) {
      const ev = Buffer.from(batch.ev);
      const bodies: Uint8Array[] = [];
      let at = 0;
      for (let i = 0; i < batch.evAgents.length; i++) {
        const len = ev.readUInt32BE(at);
        bodies.push(ev.subarray(at + 4, at + 4 + len));
        at += 4 + len;
      }
      this.#opts.agentEvents(batch.evAgents, bodies);
    }
    for (const f of batch.finished) this.#opts.finished(f);
    for (let i = 0; i < done.length; i += 2) {
      if (shard.inflight.delete(key(done[i]!, done[i + 1]!))) this.#inflightCount--;
    }
    for (const q of batch.queries) {
      shard.queries.get(q.qid)?.resolve(q.result);
      shard.queries.delete(q.qid);
    }
    if (this.#inflightCount === 0 && this.#idleWaiters.length > 0) this.#wakeIdle();
  }

  #wakeIdle(): void {
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Ends every request the dead shard owed an answer, then starts a fresh shard in its slot. */
  #onCrash(shard: ShardThread, why: string): void {
    WriteLock.releaseFor(this.#opts.writeLock, ownerToken(shard.index));
    for (const f of shard.inflight.values()) {
      if (f.kind === 'stream') {
        if (!f.started) this.#opts.deliver(f.conn, frameOf(f.req, 0, { stream: { start: { agent: f.agent } } }));
        const end = { agent: f.agent, error: why, model: '', usage: zeroUsage(), stop_reason: StopReason.Error };
        this.#opts.deliver(f.conn, frameOf(f.req, FLAG_LAST, { stream: { end } }));
      } else {
        this.#opts.deliver(f.conn, frameOf(f.req, FLAG_LAST, { error: { code: Code.Internal, message: why } }));
      }
    }
    this.#inflightCount -= shard.inflight.size;
    shard.inflight.clear();
    // The shard's conversations died with it: it has none active now.
    for (const q of shard.queries.values()) q.resolve([]);
    shard.queries.clear();
    if (this.#inflightCount === 0) this.#wakeIdle();
    this.#spawn(shard).catch((err: unknown) => this.#opts.log.fatal({ err, shard: shard.index }, 'replacement shard failed to start'));
  }
}
