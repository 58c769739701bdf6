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
 * Main → shard messages produced in one event-loop turn (every socket read
 * its poll phase handled) are batched into one postMessage per shard. Every request sent to
 * a shard is tracked until its LAST frame comes back, so that if the shard
 * dies each one still gets its final frame and nothing is left hanging.
 *
 * Every turn is also numbered and tracked until it ends (TurnLedger), so main
 * can refuse turns beyond a conversation's queue limit and knows what a lost
 * shard was running. A shard whose event loop freezes (ShardWatchdog) is
 * terminated and replaced exactly as a crashed one is; the replacement first
 * stores the turns it was running as ended `stalled`.
 */
import type { MessagePort } from 'node:worker_threads';
import { prestartShard, stopShard, type PendingShard } from './shard-thread.ts';
import { AgentdError, Code } from '../../shared/errors.ts';
import { forEachSection, readEventList } from '../../shared/byte-layouts.ts';
import { shardOf } from '../../shared/hash.ts';
import { Heartbeat } from '../../shared/threads/heartbeat.ts';
import type { ActiveConversation, FromShard, FrameBatch, RunListQuery, RunRequest, ShardInit, StalledTurn, ToShard, TurnRequest } from '../../shared/threads/shard-messages.ts';
import type { RunInfo } from '../../shared/wire/runs.ts';
import type { WriterPortMessage } from '../../threads/writer/messages.ts';
import { ownerToken, WriteLock } from '../../storage/sqlite/write-lock.ts';
import type { OpenTurn } from '../turn-ledger.ts';
import { ShardWatchdog } from './shard-watchdog.ts';
import { OutputReturns } from './output-returns.ts';
import { InflightBudget } from './inflight-budget.ts';
import { settleShardLoss, type RequestKind } from './shard-losses.ts';
import { PendingReplies } from '../../shared/threads/port-rpc.ts';
import type { ShardOutputs, ShardPoolOptions, ShardThread } from './shard-pool-parts.ts';
import { mainMeter } from '../metrics/main-meter.ts';

export type { ShardOutputs, ShardPoolOptions } from './shard-pool-parts.ts';

/** A message for the shard of its pair that expects an answer. */
export type PairRequestMessage = Extract<ToShard, { conn: number; req: number; agent: string; sender: string }>;

const QUERY_TIMEOUT_MS = 5_000;
/** Purging waits for cancelled turns to reach their next await point. */
const PURGE_TIMEOUT_MS = 30_000;

const key = (conn: number, req: number): string => `${conn}:${req}`;

export class ShardPool {
  readonly count: number;
  /** Each connection's requests in flight here (max_inflight_per_connection). */
  readonly budget: InflightBudget;
  readonly #opts: ShardPoolOptions;
  readonly #shards: ShardThread[] = [];
  #flushQueued = false;
  #closing = false;
  /** The last observe and done_watch broadcast: what every shard must know from its start. */
  readonly #standing = new Map<'observe' | 'done_watch', ToShard>();
  #inflightCount = 0;
  #idleWaiters: (() => void)[] = [];
  readonly #flush = (): void => this.#flushAll();
  readonly #returns = new OutputReturns();
  readonly #watchdog: ShardWatchdog;
  #outputs: ShardOutputs | null = null;
  #stalls = 0;
  #queuedTurnsDropped = 0;
  /** Each shard's first thread, started at construction so that its modules load while main opens the store. */
  readonly #prestarted: (PendingShard | null)[];

  constructor(opts: ShardPoolOptions) {
    this.count = opts.count;
    this.#opts = opts;
    this.budget = new InflightBudget(opts.maxInflightPerConnection);
    this.#watchdog = new ShardWatchdog(opts.stallMs, (index) => this.#onStall(this.#shards[index]!));
    for (let index = 0; index < opts.count; index++) {
      const cells = new Int32Array(0);
      this.#shards.push({ index, worker: null, outbound: [], inflight: new Map(), answers: new PendingReplies(), runLists: new PendingReplies(), generation: 0, cells });
    }
    this.#prestarted = this.#shards.map((shard) => this.#prestart(shard));
  }

  /** Starts every shard and resolves when all have said `ready`. */
  async start(outputs: ShardOutputs): Promise<void> {
    this.#outputs = outputs;
    await Promise.all(this.#shards.map((s) => this.#spawn(s, outputs, [])));
    this.#flushAll();
  }

  /** The pool's counters for `get_stats`. */
  stats(): { shard_stalls: number; queued_turns_dropped: number; output_buffers_returned: number } {
    return { shard_stalls: this.#stalls, queued_turns_dropped: this.#queuedTurnsDropped, output_buffers_returned: this.#returns.returned };
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
    this.budget.take(msg.conn);
    const s = this.#shardOf(msg.agent, msg.sender);
    let turnSeq: number | null = null;
    if (msg.type === 'turn') {
      this.#opts.ledger.open(s.index, msg);
      turnSeq = msg.seq;
    }
    this.#track(s, msg, kind, msg.agent, turnSeq);
  }

  /** Sends a run's request (get_run, join_run) to the shard its pair hash names, tracked as `requestFor` does. */
  requestForRun(msg: RunRequest, pairHash: number, kind: RequestKind): void {
    this.budget.take(msg.conn);
    this.#track(this.#shards[pairHash % this.count]!, msg, kind, '', null);
  }

  #track(s: ShardThread, msg: ToShard & { conn: number; req: number }, kind: RequestKind, agent: string, turnSeq: number | null): void {
    s.inflight.set(key(msg.conn, msg.req), { conn: msg.conn, req: msg.req, kind, agent, started: false, turnSeq });
    this.#inflightCount++;
    this.#enqueue(s, msg);
  }

  /** Every shard's runs matching the query (each at most `limit`, newest first). */
  async listRuns(q: Omit<RunListQuery, 'type' | 'id'>): Promise<RunInfo[]> {
    const lists = await Promise.all(this.#shards.map((s) => this.#ask(s.runLists, s, (id) => ({ type: 'list_runs', id, ...q }), QUERY_TIMEOUT_MS)));
    return lists.flat();
  }

  /** A client's turn: sent as `requestFor` does, or refused with 429 when its conversation's queue is full. */
  requestTurn(msg: TurnRequest, kind: RequestKind): void {
    if (!msg.ephemeral && this.#queueFull(msg)) {
      throw new AgentdError(Code.TooMany, `agent "${msg.agent}" has ${this.#opts.maxQueuedTurns} turns queued for sender "${msg.sender}"`);
    }
    this.requestFor(msg, kind);
  }

  /** Sends a turn that answers no one (fired by the bus); false (and counted) when its conversation's queue is full. */
  sendFor(msg: TurnRequest): boolean {
    if (this.#queueFull(msg)) {
      this.#queuedTurnsDropped++;
      return false;
    }
    const s = this.#shardOf(msg.agent, msg.sender);
    this.#opts.ledger.open(s.index, msg);
    this.#enqueue(s, msg);
    return true;
  }

  /** The pair holds its running turn and `maxQueuedTurns` queued ones. */
  #queueFull(msg: TurnRequest): boolean {
    return this.#opts.ledger.held(msg.agent, msg.sender) > this.#opts.maxQueuedTurns;
  }

  /** Sends a message that expects no reply to every shard. */
  broadcast(msg: ToShard): void {
    // A state a shard must start with is given again to every shard that starts after it.
    if (msg.type === 'observe' || msg.type === 'done_watch') this.#standing.set(msg.type, msg);
    for (const s of this.#shards) this.#enqueue(s, msg);
  }

  /** Gives every running shard a port to a replacement turn writer (a shard being replaced gets one at its start). */
  giveWriterPorts(portFor: () => MessagePort): void {
    for (const s of this.#shards) {
      if (s.worker === null) continue;
      const port = portFor();
      s.worker.postMessage({ type: 'writer_port', port } satisfies WriterPortMessage, [port]);
    }
  }

  /** Asks every shard for its active conversations. */
  async activeConversations(agent: string | null, sender: string | null): Promise<ActiveConversation[]> {
    return (await this.#askAll((id) => ({ type: 'active_query', id, agent, sender }), QUERY_TIMEOUT_MS)).flat();
  }

  /** The metrics are scraped: every shard ships its call tallies (to `calls.tallies`); resolves once all have. */
  async collectTallies(): Promise<void> {
    await this.#askAll((id) => ({ type: 'tallies_query', id }), QUERY_TIMEOUT_MS);
  }

  /** Has every shard cancel and forget a deleted agent's conversations; resolves once all have. */
  async purgeAgent(agent: string): Promise<void> {
    await this.#askAll((id) => ({ type: 'purge_agent', id, agent }), PURGE_TIMEOUT_MS);
  }

  /**
   * Cluster mode: every shard forgets the conversations of a partition this
   * node lost; resolves once none of them has a turn running or queued
   * (rejects after `timeoutMs`).
   */
  async dropPartition(partition: number, partitions: number, timeoutMs: number): Promise<void> {
    await this.#askAll((id) => ({ type: 'drop_partition', id, partition, partitions }), timeoutMs);
  }

  /** Sends a message with a fresh id to every shard and gathers the answers; a dead shard answers empty. */
  #askAll(build: (id: number) => ToShard, timeoutMs: number): Promise<ActiveConversation[][]> {
    return Promise.all(this.#shards.map((s) => this.#ask(s.answers, s, build, timeoutMs)));
  }

  #ask<T>(answers: PendingReplies<T>, s: ShardThread, build: (id: number) => ToShard, timeoutMs: number): Promise<T> {
    const late = (id: number): boolean => answers.reject(id, new Error(`shard ${s.index} did not answer within ${timeoutMs} ms`));
    const { id, promise } = answers.open(undefined, { ms: timeoutMs, onExpiry: late, unref: true });
    this.#enqueue(s, build(id));
    return promise;
  }

  /** Resolves once no request is in flight on any shard. */
  idle(): Promise<void> {
    if (this.#inflightCount === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    this.#closing = true;
    this.#watchdog.stop();
    this.#flushAll();
    // A thread started for a shard that never got its init has nothing to close.
    const unstarted = this.#prestarted.splice(0).flatMap((p) => (p === null ? [] : [p.worker.terminate()]));
    await Promise.all([...unstarted, ...this.#shards.map((s) => (s.worker === null ? undefined : stopShard(s.worker)))]);
  }

  #enqueue(s: ShardThread, ...msgs: ToShard[]): void {
    s.outbound.push(...msgs);
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      // setImmediate, not a microtask: everything every socket read of this
      // event-loop turn decoded goes in one post per shard, so a busy main
      // wakes each shard once per loop turn rather than once per read.
      setImmediate(this.#flush);
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

  #spawn(shard: ShardThread, outputs: ShardOutputs, stalled: StalledTurn[]): Promise<void> {
    const generation = ++shard.generation;
    const heartbeat = new SharedArrayBuffer(Heartbeat.CELLS * Int32Array.BYTES_PER_ELEMENT);
    shard.cells = new Int32Array(heartbeat);
    const init: ShardInit = { ...outputs.init(shard.index), heartbeat, heartbeatMs: this.#watchdog.intervalMs, stalled };
    const pending = this.#prestarted[shard.index] ?? this.#prestart(shard);
    this.#prestarted[shard.index] = null;
    const worker = pending.worker;
    shard.worker = worker;
    // What waited for a replacement goes now; the shard takes it once its start-up work is done.
    // The standing state first (a replacement knows nothing of it), then what waited for the replacement.
    const waiting = [...this.#standing.values(), ...shard.outbound.splice(0)];
    if (waiting.length > 0) this.#enqueue(shard, ...waiting);
    return new Promise<void>((resolve, reject) => {
      if (pending.exited !== null) return reject(new Error(`shard ${shard.index} exited with code ${pending.exited} during start-up`));
      let ready = false;
      worker.on('message', (msg: FromShard) => {
        if (msg.type === 'frames') return this.#onBatch(shard, msg, outputs);
        if (msg.type === 'stopped') return; // stopShard's own listener acts on it
        ready = true;
        if (!this.#closing && shard.generation === generation) this.#watchdog.watch(shard.index, shard.cells);
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
      pending.start(init);
    });
  }

  #prestart(shard: ShardThread): PendingShard {
    return prestartShard((err) => this.#opts.log.error({ err, shard: shard.index }, 'shard failed while starting'));
  }

  /** Writes each connection's section; the buffer goes back to the shard once every write is done (OutputReturns). */
  #deliverSections(shard: ShardThread, batch: FrameBatch, outputs: ShardOutputs): void {
    const { sections } = batch;
    if (sections === null) return;
    const worker = shard.worker; // null while a frozen shard is being replaced: its buffers stay here
    const lease = worker === null || !batch.sectionsReturn ? null : this.#returns.lease(worker, sections, () => shard.worker === worker);
    forEachSection(Buffer.from(sections, 0, batch.sectionsBytes), (conn, frames) => outputs.deliver(conn, frames, lease?.hold()));
    lease?.done();
  }

  #onBatch(shard: ShardThread, batch: FrameBatch, outputs: ShardOutputs): void {
    const { started, done } = batch;
    for (let i = 0; i < started.length; i += 2) {
      const f = shard.inflight.get(key(started[i]!, started[i + 1]!));
      if (f !== undefined) f.started = true;
    }
    for (const seq of batch.turnsStarted) this.#opts.ledger.started(seq);
    if (batch.tallies !== null) this.#opts.calls?.tallies?.(batch.tallies);
    if (batch.spans !== null) this.#opts.calls?.spans?.(batch.spans);
    this.#deliverSections(shard, batch, outputs);
    if (batch.agentEvents !== null) {
      outputs.agentEvents(batch.agentEventAgents, readEventList(Buffer.from(batch.agentEvents), batch.agentEventAgents.length));
    }
    // A finished turn's `done` fires its chain's next turns before the turn itself counts as ended.
    for (const f of batch.finished) outputs.finished(f);
    for (const e of batch.turnErrors) this.#opts.ledger.failed(e.seq, e);
    const ended = batch.turnsEnded; // pairs: seq, outcome
    for (let i = 0; i < ended.length; i += 2) this.#turnGone(this.#opts.ledger.ended(ended[i]!, ended[i + 1]!), outputs);
    for (let i = 0; i < done.length; i += 2) {
      if (!shard.inflight.delete(key(done[i]!, done[i + 1]!))) continue;
      this.#inflightCount--;
      this.budget.release(done[i]!);
    }
    for (const a of batch.activeAnswers) shard.answers.resolve(a.id, a.conversations);
    for (const r of batch.runLists) shard.runLists.resolve(r.id, r.runs);
    for (const id of batch.purged) shard.answers.resolve(id, []);
    if (this.#inflightCount === 0 && this.#idleWaiters.length > 0) this.#wakeIdle();
  }

  #wakeIdle(): void {
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w();
  }

  #turnGone(t: OpenTurn | undefined, outputs: ShardOutputs): void {
    if (t !== undefined && t.req.chain !== 0) outputs.chainTurnEnded(t.req.chain);
  }

  /** A crashed shard: answer what it owed, then start a fresh shard in its slot. */
  #onCrash(shard: ShardThread, why: string, outputs: ShardOutputs): void {
    this.#watchdog.unwatch(shard.index);
    WriteLock.releaseFor(this.#opts.writeLock, ownerToken(shard.index));
    this.#endAll(shard, why, 'crash', outputs);
    mainMeter.shardCrashes++;
    this.#opts.log.warn({ shard: shard.index, why }, 'shard lost: its turns ended with an error; starting a replacement');
    this.#respawn(shard, outputs, []);
  }

  /**
   * A frozen shard: terminated (its exit is not taken for a crash), what it
   * owed answered at once, and replaced once it is gone; the replacement
   * stores the turns it was running as ended `stalled` before anything else.
   */
  #onStall(shard: ShardThread): void {
    const outputs = this.#outputs;
    const worker = shard.worker;
    if (this.#closing || outputs === null || worker === null) return;
    this.#stalls++;
    shard.generation++;
    // Messages wait in `outbound` for the replacement instead of going to the frozen thread.
    shard.worker = null;
    const why = `shard stalled (no answer within ${this.#opts.stallMs} ms)`;
    this.#opts.log.error({ shard: shard.index, stall_ms: this.#opts.stallMs }, 'shard stalled: replacing it');
    const stalled = this.#endAll(shard, why, 'stall', outputs);
    void worker.terminate().finally(() => {
      if (this.#closing) return;
      // Only now: a frozen shard could still be holding the lock it is released from.
      WriteLock.releaseFor(this.#opts.writeLock, ownerToken(shard.index));
      this.#respawn(shard, outputs, stalled);
    });
  }

  #respawn(shard: ShardThread, outputs: ShardOutputs, stalled: StalledTurn[]): void {
    this.#spawn(shard, outputs, stalled).then(
      () => this.#opts.log.info({ shard: shard.index, stalled_turns: stalled.length }, 'replacement shard ready'),
      (err: unknown) => this.#opts.log.fatal({ err, shard: shard.index }, 'replacement shard failed to start'),
    );
  }

  /** Ends every request and turn the lost shard owed; returns the turns to store as ended `stalled`. */
  #endAll(shard: ShardThread, why: string, cause: 'crash' | 'stall', outputs: ShardOutputs): StalledTurn[] {
    const runningSeq = shard.cells.length > 0 ? Atomics.load(shard.cells, Heartbeat.RUNNING) : 0;
    const loss = { why, cause, turns: this.#opts.ledger.takeShard(shard.index), runningSeq, requests: shard.inflight.values() };
    const stalled = settleShardLoss(loss, (conn, frames) => outputs.deliver(conn, frames), (t) => this.#turnGone(t, outputs));
    for (const f of shard.inflight.values()) this.budget.release(f.conn);
    this.#inflightCount -= shard.inflight.size;
    shard.inflight.clear();
    // The shard's conversations died with it: it has none active now.
    shard.answers.resolveAll([]);
    shard.runLists.resolveAll([]);
    if (this.#inflightCount === 0) this.#wakeIdle();
    return stalled;
  }
}
