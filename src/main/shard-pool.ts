/**
 * The shard pool: N worker threads, each owning the pairs that hash to it.
 *
 * This is raw worker_threads rather than piscina on purpose. A shard is not a
 * task runner: it is a long-lived, stateful thread with a two-way ordered
 * stream (turns and cancels down, batched frames up, many per request).
 * piscina's task round trip would add its per-task cost to every turn, its
 * abort kills a whole thread, and a frame channel beside it would still be
 * needed; what piscina would give us (respawn, sticky routing) is the few
 * lines below.
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
import { forEachSection, readEventList } from '../shared/byte-layouts.ts';
import { shardOf } from '../shared/hash.ts';
import { StopReason, zeroUsage } from '../shared/protocol.ts';
import type { ActiveConversation, FromShard, FrameBatch, ShardInit, ToShard, TurnFinished, TurnRequest } from '../shared/threads.ts';
import type { Logger } from '../shared/log.ts';
import { ownerToken, WriteLock } from '../shared/write-lock.ts';

/** How a request is answered if its shard dies: `stream` needs `start`+`end`, the others one error. */
export type RequestKind = 'stream' | 'rr';

/** A request whose LAST frame has not come back from its shard yet. */
interface Inflight {
  conn: number;
  req: number;
  kind: RequestKind;
  agent: string;
  started: boolean;
}

interface ShardThread {
  index: number;
  /** null only before the first spawn. */
  worker: Worker | null;
  outbound: ToShard[];
  inflight: Map<string, Inflight>;
  /** Active queries and purges waiting for their answer, by id. */
  answers: Map<number, (conversations: ActiveConversation[]) => void>;
  generation: number;
}

/** A message for the shard of its pair that expects an answer. */
export type PairRequestMessage = Extract<ToShard, { conn: number; req: number; agent: string; sender: string }>;

export interface ShardPoolOptions {
  count: number;
  /** The shards' write lock, released here on behalf of a shard that dies holding it. */
  writeLock: SharedArrayBuffer;
  log: Logger;
}

/** Where what the shards send goes; given at start, once everything they feed exists. */
export interface ShardOutputs {
  /** The start-up message of shard `index`; called again for a replacement. */
  init(index: number): ShardInit;
  /** Writes ready-encoded frames to connection `conn` (dropped if it is gone). */
  deliver(conn: number, frames: Uint8Array): void;
  /** A batch of encoded `agent_event` bodies, with the agent of each, for the observers. */
  agentEvents(agents: readonly string[], bodies: readonly Uint8Array[]): void;
  /** A turn finished: the bus publishes `agent:<name>:done`. */
  finished(record: TurnFinished): void;
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
  #nextAnswerId = 1;
  #inflightCount = 0;
  #idleWaiters: (() => void)[] = [];
  readonly #flush = (): void => this.#flushAll();

  constructor(opts: ShardPoolOptions) {
    this.count = opts.count;
    this.#opts = opts;
    for (let index = 0; index < opts.count; index++) {
      this.#shards.push({ index, worker: null, outbound: [], inflight: new Map(), answers: new Map(), generation: 0 });
    }
  }

  /** Starts every shard and resolves when all have said `ready`. */
  async start(outputs: ShardOutputs): Promise<void> {
    await Promise.all(this.#shards.map((s) => this.#spawn(s, outputs)));
    this.#flushAll();
  }

  /** Requests that went to a shard and have not had their LAST frame yet. */
  get inflight(): number {
    return this.#inflightCount;
  }

  #shardOf(agent: string, sender: string): ShardThread {
    return this.#shards[shardOf(agent, sender, this.count)]!;
  }

  /** Sends a request to its pair's shard and tracks it until its LAST frame. */
  requestFor(msg: PairRequestMessage, kind: RequestKind): void {
    const s = this.#shardOf(msg.agent, msg.sender);
    s.inflight.set(key(msg.conn, msg.req), { conn: msg.conn, req: msg.req, kind, agent: msg.agent, started: false });
    this.#inflightCount++;
    this.#enqueue(s, msg);
  }

  /** Sends a turn that answers no one (fired by the bus) to its pair's shard. */
  sendFor(msg: TurnRequest): void {
    this.#enqueue(this.#shardOf(msg.agent, msg.sender), msg);
  }

  /** Sends a message that expects no reply to every shard. */
  broadcast(msg: ToShard): void {
    for (const s of this.#shards) this.#enqueue(s, msg);
  }

  /** Asks every shard for its active conversations. */
  async activeConversations(agent: string | null, sender: string | null): Promise<ActiveConversation[]> {
    return (await this.#askAll((id) => ({ type: 'active_query', id, agent, sender }), QUERY_TIMEOUT_MS)).flat();
  }

  /** Has every shard cancel and forget a deleted agent's conversations; resolves once all have. */
  async purgeAgent(agent: string): Promise<void> {
    await this.#askAll((id) => ({ type: 'purge_agent', id, agent }), PURGE_TIMEOUT_MS);
  }

  /** Sends a message with a fresh id to every shard and gathers the answers; a dead shard answers empty. */
  #askAll(build: (id: number) => ToShard, timeoutMs: number): Promise<ActiveConversation[][]> {
    return Promise.all(this.#shards.map((s) => this.#ask(s, build, timeoutMs)));
  }

  #ask(s: ShardThread, build: (id: number) => ToShard, timeoutMs: number): Promise<ActiveConversation[]> {
    return new Promise<ActiveConversation[]>((resolve, reject) => {
      const id = this.#nextAnswerId++;
      const timer = setTimeout(() => {
        s.answers.delete(id);
        reject(new Error(`shard ${s.index} did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
      s.answers.set(id, (conversations) => {
        clearTimeout(timer);
        resolve(conversations);
      });
      this.#enqueue(s, build(id));
    });
  }

  /** Resolves once no request is in flight on any shard. */
  idle(): Promise<void> {
    if (this.#inflightCount === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.#closing = true;
    this.#flushAll();
    await Promise.all(this.#shards.map((s) => s.worker?.terminate()));
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
      if (s.outbound.length === 0 || s.worker === null) continue;
      const batch = s.outbound;
      s.outbound = [];
      s.worker.postMessage(batch);
    }
  }

  #spawn(shard: ShardThread, outputs: ShardOutputs): Promise<void> {
    const generation = ++shard.generation;
    const init = outputs.init(shard.index);
    const worker = new Worker(workerScript('shard'), { workerData: init, transferList: [init.harnessPort, init.mcpPort] });
    shard.worker = worker;
    return new Promise<void>((resolve, reject) => {
      let ready = false;
      worker.on('message', (msg: FromShard) => {
        if (msg.type === 'frames') return this.#onBatch(shard, msg, outputs);
        ready = true;
        resolve();
      });
      worker.on('error', (err) => {
        this.#opts.log.error({ err, shard: shard.index }, 'shard crashed');
      });
      worker.on('exit', (code) => {
        if (!ready) reject(new Error(`shard ${shard.index} exited with code ${code} during start-up`));
        if (this.#closing || shard.generation !== generation) return;
        this.#onCrash(shard, `shard crashed (exit code ${code})`, outputs);
      });
    });
  }

  #onBatch(shard: ShardThread, batch: FrameBatch, outputs: ShardOutputs): void {
    const { started, done } = batch;
    for (let i = 0; i < started.length; i += 2) {
      const f = shard.inflight.get(key(started[i]!, started[i + 1]!));
      if (f !== undefined) f.started = true;
    }
    if (batch.sections !== null) forEachSection(Buffer.from(batch.sections), (conn, frames) => outputs.deliver(conn, frames));
    if (batch.agentEvents !== null) {
      outputs.agentEvents(batch.agentEventAgents, readEventList(Buffer.from(batch.agentEvents), batch.agentEventAgents.length));
    }
    for (const f of batch.finished) outputs.finished(f);
    for (let i = 0; i < done.length; i += 2) {
      if (shard.inflight.delete(key(done[i]!, done[i + 1]!))) this.#inflightCount--;
    }
    for (const a of batch.activeAnswers) this.#answer(shard, a.id, a.conversations);
    for (const id of batch.purged) this.#answer(shard, id, []);
    if (this.#inflightCount === 0 && this.#idleWaiters.length > 0) this.#wakeIdle();
  }

  #answer(shard: ShardThread, id: number, conversations: ActiveConversation[]): void {
    shard.answers.get(id)?.(conversations);
    shard.answers.delete(id);
  }

  #wakeIdle(): void {
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Ends every request the dead shard owed an answer, then starts a fresh shard in its slot. */
  #onCrash(shard: ShardThread, why: string, outputs: ShardOutputs): void {
    WriteLock.releaseFor(this.#opts.writeLock, ownerToken(shard.index));
    for (const f of shard.inflight.values()) {
      if (f.kind === 'stream') {
        if (!f.started) outputs.deliver(f.conn, frameOf(f.req, 0, { stream: { start: { agent: f.agent } } }));
        const end = { agent: f.agent, error: why, model: '', usage: zeroUsage(), stop_reason: StopReason.Error };
        outputs.deliver(f.conn, frameOf(f.req, FLAG_LAST, { stream: { end } }));
      } else {
        outputs.deliver(f.conn, frameOf(f.req, FLAG_LAST, { error: { code: Code.Internal, message: why } }));
      }
    }
    this.#inflightCount -= shard.inflight.size;
    shard.inflight.clear();
    // The shard's conversations died with it: it has none active now.
    for (const answer of shard.answers.values()) answer([]);
    shard.answers.clear();
    if (this.#inflightCount === 0) this.#wakeIdle();
    this.#spawn(shard, outputs).catch((err: unknown) => this.#opts.log.fatal({ err, shard: shard.index }, 'replacement shard failed to start'));
  }
}
