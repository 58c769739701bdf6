/**
 * A shard's message handler. Every message for a pair arrives here in the
 * order main received it: turns and compactions join their pair's FIFO (the
 * job runner), and `kill`, `delete` or a closed connection act on the same
 * ordered stream, so a cancel can never overtake the turn it targets. A pair
 * whose conversation is not in memory is loaded first; its requests that
 * arrive meanwhile wait behind the load, in order (PairGate).
 */
import { DEFAULTS, type AgentConfig } from '../shared/config.ts';
import { StopReason } from '../shared/protocol.ts';
import { Code } from '../shared/errors.ts';
import type { AgentChange, CompactRequest, ConnClosed, DropPartition, ImportRequest, KillRequest, PairRequest, PurgeAgent, SteerRequest, ToShard, TurnRequest } from '../shared/threads/shard-messages.ts';
import { RunTable } from './runs/run-table.ts';
import { WaitingRuns } from './runs/waiting-runs.ts';
import { resumedRequest, type Resuming } from './runs/resume.ts';
import type { Logger } from '../shared/log.ts';
import { Conversation, pairKey } from './conversation.ts';
import type { Models } from '../models/index.ts';
import type { FrameOut } from './outbox.ts';
import type { ConversationStorage, StoredConversation } from '../storage/contract.ts';
import { TurnReply } from './turn/turn-reply.ts';
import { Cancellation } from './turn/cancellation.ts';
import type { Harness } from './tools/harness.ts';
import { ConversationTable } from './conversation-table.ts';
import { CancelReason, errorTo, JobRunner, replyTo } from './job-runner.ts';
import { PairGate } from './pair-gate.ts';
import { PacedReads } from './paced-reads.ts';
import { partitionOf } from '../shared/partitions.ts';
import { callMeter } from './call-meter.ts';
import { AgentdError } from '../shared/errors.ts';
import { importBatch } from './import-batch.ts';
import { readHistory } from './history-reads.ts';

export { CancelReason } from './job-runner.ts';

export interface SchedulerOptions {
  outbox: FrameOut;
  agents: Record<string, AgentConfig>;
  log: Logger;
  /** null: persistence is off (benchmarks); nothing is written or evicted. */
  store: ConversationStorage | null;
  /** Idle conversations kept in memory; beyond it the least recently used are evicted. */
  memoryConversations: number;
  /** Approximate bytes of history kept in memory; beyond it idle conversations are evicted, least recently used first. */
  memoryBytes?: number;
  models: Models;
  harness: Harness;
  /** How long an ended run can still be read and joined (default: the daemon's default). */
  runRetentionMs?: number;
  /** Whether a pair is this shard's (its stored waiting runs resume here); default: every pair. */
  ownsPair?: (agent: string, sender: string) => boolean;
}

type PairAddress = { conn: number; req: number; agent: string; sender: string };
/** A request for one pair: it runs in the pair's order. */
type PairMessage = TurnRequest | CompactRequest | PairRequest | KillRequest | ImportRequest;
/** What waits on a held pair: its requests, and the close of a connection one of them came on. */
type Waiting = PairMessage | ConnClosed;

const failure = (reason: unknown): string => (reason instanceof Error ? reason.message : String(reason));

export class TurnScheduler {
  readonly #outbox: FrameOut;
  readonly #store: ConversationStorage | null;
  readonly #table: ConversationTable;
  readonly #runner: JobRunner;
  readonly #gate = new PairGate<Waiting>();
  readonly #reads = new PacedReads();
  readonly #runs: RunTable;
  readonly #log: Logger;
  /** Where durable runs store their waits; null with persistence off. */
  readonly #waiting: WaitingRuns | null;
  /** Resumed runs' requests on their way to #turn (through their pair's load). */
  readonly #resuming = new Map<TurnRequest, Resuming>();
  /** While stored runs are being resumed, the messages that arrive wait here, in order; null otherwise. */
  #held: ToShard[] | null = null;
  #restoring = 0;
  readonly #ownsPair: (agent: string, sender: string) => boolean;
  #shuttingDown = false;

  constructor(opts: SchedulerOptions) {
    this.#outbox = opts.outbox;
    this.#store = opts.store;
    this.#table = new ConversationTable(opts.store !== null, opts.memoryConversations, opts.memoryBytes);
    // No prototype: an agent named "__proto__" or "constructor" is a key like any other when changes are applied in place.
    const agents = Object.assign(Object.create(null) as Record<string, AgentConfig>, opts.agents);
    this.#runner = new JobRunner({ ...opts, agents, idle: () => this.#table.evict() });
    this.#runs = new RunTable(opts.outbox, opts.runRetentionMs ?? DEFAULTS.runRetentionMs);
    this.#log = opts.log;
    this.#ownsPair = opts.ownsPair ?? (() => true);
    this.#waiting = opts.store === null ? null : new WaitingRuns(opts.store, opts.log);
  }

  /**
   * Resumes the stored waiting runs `mine` keeps (this shard's pairs, on
   * partitions this node serves), each ahead of its pair's later turns;
   * messages arriving meanwhile wait and are then handled in order.
   */
  async restoreWaiting(mine: (agent: string, sender: string) => boolean): Promise<void> {
    const waiting = this.#waiting;
    if (waiting === null) return;
    this.#held ??= [];
    this.#restoring++;
    try {
      for (const stored of await waiting.restore((agent, sender) => this.#ownsPair(agent, sender) && mine(agent, sender))) {
        const resuming = resumedRequest(stored, this.#runs, waiting);
        if (resuming === null) continue;
        if (this.#runner.agents[stored.record.agent] === undefined) {
          this.#log.warn({ run: stored.record.runId, agent: stored.record.agent }, 'a stored waiting run of a deleted agent: dropped');
          resuming.run.end(StopReason.Error, `agent "${stored.record.agent}" was deleted`);
          void this.#store?.deleteWaitingRun(stored.record.runId, stored.record.agent, stored.record.sender).catch(() => undefined);
          continue;
        }
        this.#resuming.set(resuming.req, resuming);
        this.#forPair(resuming.req, false);
        this.#log.info({ run: stored.record.runId, agent: stored.record.agent, sender: stored.record.sender }, 'resumed a run waiting for approval');
      }
    } catch (err) {
      this.#log.error({ err: failure(err) }, 'reading the stored waiting runs failed: they resume at the next start');
    } finally {
      if (--this.#restoring === 0) this.#releaseHeld();
    }
  }

  #releaseHeld(): void {
    const held = this.#held ?? [];
    this.#held = null;
    for (let i = 0; i < held.length; i++) {
      if (this.#held !== null) return void (this.#held as ToShard[]).push(...held.slice(i));
      this.handle(held[i]!);
    }
  }

  handle(msg: ToShard): void {
    if (this.#held !== null) return void this.#held.push(msg);
    switch (msg.type) {
      case 'turn':
        // Refused at once (no load for an unknown agent); an ephemeral turn has a fresh history and stores nothing, so it waits for no one.
        if (msg.ephemeral || this.#shuttingDown || this.#runner.agents[msg.agent] === undefined) return this.#turn(msg, null);
        return this.#forPair(msg, false);
      case 'compact':
        return this.#shuttingDown ? this.#compact(msg, null) : this.#forPair(msg, false);
      case 'kill':
      case 'history':
      case 'delete':
      case 'import':
        return this.#forPair(msg, false);
      case 'conn_closed':
        return this.#connClosed(msg);
      case 'steer':
        return this.#steer(msg);
      case 'get_run':
      case 'join_run':
      case 'approve_tool':
        return this.#runs.handle(msg);
      case 'list_runs':
        return this.#outbox.runList({ id: msg.id, runs: this.#runs.list(msg) });
      case 'active_query':
        return this.#outbox.activeAnswer({ id: msg.id, conversations: this.#table.active(msg) });
      case 'tallies_query':
        callMeter.talliesAsked = true;
        return this.#outbox.activeAnswer({ id: msg.id, conversations: [] });
      case 'purge_agent':
        return this.#purgeAgent(msg);
      case 'agent':
        return this.#agentChanged(msg);
      case 'observe':
        this.#outbox.observing = msg.watching;
        return;
      case 'done_watch':
        this.#outbox.doneWatched = new Set(msg.agents);
        return;
      case 'drop_partition':
        return void this.#dropPartition(msg);
      case 'restore_runs':
        return void this.restoreWaiting((agent, sender) => partitionOf(agent, sender, msg.partitions) === msg.partition);
      case 'shutdown':
        this.#shuttingDown = true;
        // Runs waiting for approval stay stored, waiting: the next start resumes them.
        this.#waiting?.freeze();
        return this.#runner.cancelAll(CancelReason.Shutdown);
    }
  }

  /**
   * Hands a pair's request its conversation: at once when it is in memory;
   * else behind the pair's load (or deletion) under way; else once loaded.
   * `known`: replayed right after this pair's storage work, so a conversation
   * not in memory is not stored either (no second load).
   */
  #forPair(msg: PairMessage, known: boolean): void {
    const conv = this.#table.find(msg.agent, msg.sender);
    if (conv !== undefined) return this.#dispatch(msg, conv);
    const key = pairKey(msg.agent, msg.sender);
    const waiting = this.#gate.waiting(key);
    if (waiting !== undefined) return void waiting.push(msg);
    if (this.#store === null || known) return this.#dispatch(msg, null);
    // Nothing runs for a pair that is not in memory: a kill only needs to know whether it exists.
    if (msg.type === 'kill') return this.#killStored(msg, this.#store);
    this.#gate.hold(key, msg.agent, this.#store.load(msg.agent, msg.sender), (loaded, queued) => this.#loaded(msg, loaded, queued));
  }

  #loaded(first: PairMessage, loaded: PromiseSettledResult<StoredConversation | null>, queued: Waiting[]): void {
    if (loaded.status === 'rejected') {
      const why = `loading the conversation failed: ${failure(loaded.reason)}`;
      for (const msg of [first, ...queued]) if (msg.type !== 'conn_closed') this.#fail(msg, why);
      return;
    }
    if (loaded.value !== null) this.#table.insertLoaded(first.agent, first.sender, loaded.value);
    this.#forPair(first, true);
    this.#replay(queued);
  }

  /** The requests that waited on a pair's storage work, in their order. */
  /** `known`: the pair's state in memory is the whole truth (after a delete); false: the store has it (after an import). */
  #replay(queued: Waiting[], known = true): void {
    for (const msg of queued) {
      if (msg.type === 'conn_closed') this.#runner.cancelConnection(msg.conn, CancelReason.Disconnect);
      else this.#forPair(msg, known);
    }
  }

  #dispatch(msg: PairMessage, conv: Conversation | null): void {
    switch (msg.type) {
      case 'turn':
        return this.#turn(msg, conv);
      case 'compact':
        return this.#compact(msg, conv);
      case 'kill':
        return this.#kill(msg, conv);
      case 'history':
        if (conv === null || (conv.stored === 0 && conv.dbId === null)) return this.#noConversation(msg);
        return readHistory({ outbox: this.#outbox, store: this.#store, reads: this.#reads }, msg, conv);
      case 'delete':
        return this.#delete(msg, conv);
      case 'import':
        return this.#import(msg, conv);
    }
  }

  #fail(msg: PairMessage, why: string): void {
    if (msg.type === 'turn') new TurnReply(this.#outbox, msg).error(Code.Internal, why);
    else errorTo(this.#outbox, msg, Code.Internal, why);
  }

  /** Cancels the connection's jobs; its requests waiting on a pair's storage work hear of it in their turn. */
  #connClosed(msg: ConnClosed): void {
    this.#reads.connClosed(msg.conn);
    this.#runs.connClosed(msg.conn);
    this.#runner.cancelConnection(msg.conn, CancelReason.Disconnect);
    if (this.#gate.size === 0) return;
    for (const waiting of this.#gate.queues()) {
      if (waiting.some((w) => w.type !== 'conn_closed' && w.conn === msg.conn)) waiting.push(msg);
    }
  }

  /** Applied in place: running turns keep the config object they started with. */
  #agentChanged(msg: AgentChange): void {
    if (msg.config === null) delete this.#runner.agents[msg.name];
    else this.#runner.agents[msg.name] = msg.config;
  }

  /** `found` null: the pair has no conversation yet (or the turn is ephemeral). */
  #turn(req: TurnRequest, found: Conversation | null): void {
    const reply = new TurnReply(this.#outbox, req);
    const resuming = this.#resuming.get(req);
    this.#resuming.delete(req);
    if (this.#shuttingDown) return reply.error(Code.ShuttingDown, 'the daemon is shutting down'); // a resumed run stays stored
    if (this.#runner.agents[req.agent] === undefined) {
      resuming?.run.end(StopReason.Error, `agent "${req.agent}" was deleted`); // and its row goes
      return reply.error(Code.NotFound, `unknown agent "${req.agent}"`);
    }
    const conv = req.ephemeral ? new Conversation(req.agent, req.sender, null, true) : (found ?? this.#table.create(req.agent, req.sender));
    if (conv.busy && req.onBusy === 'reject') {
      return reply.error(Code.Conflict, `agent "${req.agent}" is busy with sender "${req.sender}"`);
    }
    if (conv.busy && req.onBusy === 'interrupt') this.#runner.cancelConversation(conv, CancelReason.Interrupt);
    if (resuming !== undefined) {
      reply.attach(resuming.run);
      return this.#runner.enqueue({ kind: 'turn', req, cancel: new Cancellation(), conv, reply, resume: resuming.loop });
    }
    // A stored turn named by a turn_id is detached: its client said it would come back for it.
    if (req.turnId !== null && !req.ephemeral && this.#store !== null) req.detach = true;
    const run = this.#runs.open(req.agent, req.sender, req.detach);
    if (this.#waiting !== null && WaitingRuns.durable(req)) {
      run.durable = this.#waiting;
      run.request = req;
    }
    reply.attach(run);
    this.#runner.enqueue({ kind: 'turn', req, cancel: new Cancellation(), conv, reply });
  }

  /** Hands the message to the pair's running turn, for its next boundary; 409 when no turn runs (a queued one is not running). */
  #steer(msg: SteerRequest): void {
    const running = this.#table.find(msg.agent, msg.sender)?.running;
    const run = running?.kind === 'turn' ? running.reply.run : null;
    if (run == null || !run.steer(msg.content)) {
      return errorTo(this.#outbox, msg, Code.Conflict, `no turn is running for agent "${msg.agent}" and sender "${msg.sender}" to steer`);
    }
    // A run waiting in the store stores the message too before it is acknowledged: accepted, it survives a restart.
    const stored = run.stored ? run.durable?.changed(run) : undefined;
    if (stored === undefined) return replyTo(this.#outbox, msg, 'steer', { run_id: run.id });
    void stored.then(() => replyTo(this.#outbox, msg, 'steer', { run_id: run.id }));
  }

  #compact(req: CompactRequest, conv: Conversation | null): void {
    if (this.#shuttingDown) return errorTo(this.#outbox, req, Code.ShuttingDown, 'the daemon is shutting down');
    if (conv === null || (conv.stored === 0 && !conv.busy)) return this.#noConversation(req);
    this.#runner.enqueue({ kind: 'compact', req, cancel: new Cancellation(), conv });
  }

  #noConversation(req: PairAddress): void {
    errorTo(this.#outbox, req, Code.NotFound, `no conversation for agent "${req.agent}" and sender "${req.sender}"`);
  }

  #kill(req: KillRequest, conv: Conversation | null): void {
    if (conv === null) return this.#noConversation(req);
    this.#runner.cancelConversation(conv, CancelReason.Kill);
    replyTo(this.#outbox, req, 'kill', {});
  }

  #killStored(req: KillRequest, store: ConversationStorage): void {
    store.exists(req.agent, req.sender).then(
      (exists) => (exists ? replyTo(this.#outbox, req, 'kill', {}) : this.#noConversation(req)),
      (err: unknown) => errorTo(this.#outbox, req, Code.Internal, `reading the conversation failed: ${failure(err)}`),
    );
  }

  /**
   * Forgets the conversation and cancels its jobs; the rows go once the
   * running turn has ended. Until they are gone the pair's next requests
   * wait, so a new turn starts a new conversation after the old one is deleted.
   */
  #delete(req: PairRequest, conv: Conversation | null): void {
    if (conv === null) return this.#noConversation(req);
    this.#table.remove(conv);
    this.#runner.cancelConversation(conv, CancelReason.Deleted);
    const store = this.#store;
    const gone = (conv.runningDone ?? Promise.resolve()).then(() => (conv.dbId !== null && store !== null ? store.delete(conv.dbId) : undefined));
    this.#gate.hold(pairKey(req.agent, req.sender), req.agent, gone, (deleted, queued) => {
      if (deleted.status === 'fulfilled') replyTo(this.#outbox, req, 'delete_conversation', {});
      else errorTo(this.#outbox, req, Code.Internal, `deleting failed: ${failure(deleted.reason)}`);
      this.#replay(queued);
    });
  }

  /**
   * Writes an imported batch while the pair's next requests wait; the
   * conversation is forgotten first, so the next one loads it as stored.
   * Refused while the pair has turns running or queued.
   */
  #import(req: ImportRequest, conv: Conversation | null): void {
    const store = this.#store;
    if (store === null) return errorTo(this.#outbox, req, Code.BadRequest, 'import_messages needs a store: this daemon runs with "persist": false');
    if (conv?.busy === true) return errorTo(this.#outbox, req, Code.Conflict, `agent "${req.agent}" is busy with sender "${req.sender}": import once its turns have ended`);
    if (conv !== null) this.#table.remove(conv);
    this.#gate.hold(pairKey(req.agent, req.sender), req.agent, importBatch(store, conv, req), (done, queued) => {
      if (done.status === 'fulfilled') replyTo(this.#outbox, req, 'import_messages', done.value);
      else errorTo(this.#outbox, req, done.reason instanceof AgentdError ? done.reason.code : Code.Internal, `import failed: ${failure(done.reason)}`);
      // What waited on the import loads the conversation as stored now.
      this.#replay(queued, false);
    });
  }

  /** The node lost a partition: forget its conversations, and answer once none of them has a turn running or queued. */
  async #dropPartition(msg: DropPartition): Promise<void> {
    const busy = this.#table.forgetWhere((agent, sender) => partitionOf(agent, sender, msg.partitions) === msg.partition);
    // A run waiting for approval stays waiting in the store: the partition's next owner resumes it.
    for (const conv of busy) {
      const run = conv.running?.kind === 'turn' ? conv.running.reply.run : null;
      if (run === null || !run.stored || !run.waiting) continue;
      this.#waiting?.suspend(run);
      conv.running!.cancel.cancel(CancelReason.Moved);
    }
    for (;;) {
      const waits = busy.filter((c) => c.busy).map((c) => c.runningDone ?? new Promise<void>((r) => setTimeout(r, 10)));
      if (waits.length === 0) break;
      await Promise.all(waits);
    }
    this.#table.evict();
    this.#outbox.purged(msg.id);
  }

  /** The agent was deleted: cancel its conversations' jobs, forget them, and answer once none runs. */
  #purgeAgent(msg: PurgeAgent): void {
    // Loads of the agent's pairs under way finish first, so the requests that waited on them are cancelled too.
    const loads = this.#gate.releasedFor(msg.agent);
    if (loads !== null) return void loads.then(() => this.#purgeAgent(msg));
    const running: Promise<void>[] = [];
    for (const conv of this.#table.removeAgent(msg.agent)) {
      this.#runner.cancelConversation(conv, CancelReason.AgentDeleted);
      if (conv.runningDone !== null) running.push(conv.runningDone);
    }
    void Promise.all(running).then(() => this.#outbox.purged(msg.id));
  }
}
