/**
 * Runs a shard's jobs (turns and compactions): each conversation's FIFO is
 * pumped one job at a time, and every open job is tracked by connection so a
 * disconnect cancels it without a scan. An ephemeral turn runs in a transient
 * conversation of its own, so it takes the same paths as any other job.
 */
import type { AgentConfig } from '../shared/config.ts';
import { Code } from '../shared/errors.ts';
import type { OperationName, ReplyOf } from '../shared/wire/ops.ts';
import { errorBody, replyBody } from '../shared/wire/frames.ts';
import { StopReason } from '../shared/protocol.ts';
import type { Logger } from '../shared/log.ts';
import { runAgentLoop } from './turn/agent-loop.ts';
import { CallMeter, callMeter } from './call-meter.ts';
import type { CompactJob, Conversation, Job, Turn } from './conversation.ts';
import type { Models } from '../models/index.ts';
import type { Message } from '../models/types.ts';
import type { FrameOut } from './outbox.ts';
import type { ConversationStorage, TurnOutcome } from '../storage/contract.ts';
import { NO_TOOLS } from './tools/tools.ts';
import { summarize } from './turn/compaction.ts';
import { compactBeforeTurn, trackingContext } from './turn/auto-compaction.ts';
import { TurnWriter } from './turn-writer.ts';
import type { Harness } from './tools/harness.ts';
import { markRunning } from '../shared/liveness.ts';

/** Why a job was cancelled; becomes `end.error`. */
export const CancelReason = {
  Kill: 'cancelled by kill',
  Interrupt: 'interrupted by a newer turn',
  Disconnect: 'connection closed',
  Shutdown: 'shutting down',
  Deleted: 'conversation deleted',
  AgentDeleted: 'agent deleted',
  Moved: 'its cluster partition moved to another node',
} as const;

/** How the stream of a run left waiting in the store ends on this node (shutdown, or its partition moved): it resumes where its pair is served next. */
export const SUSPENDED = 'the run stays waiting for approval in the store and resumes where its pair is served next (daemon restart or partition move)';

/** The address of a request-reply answer. */
export interface ReplyTo {
  conn: number;
  req: number;
}

/** Sends a request's single LAST frame: `op`'s reply. */
export function replyTo<Op extends OperationName>(out: FrameOut, to: ReplyTo, op: Op, reply: ReplyOf<Op>): void {
  out.frame(to.conn, to.req, true, replyBody(op, reply));
}

export function errorTo(out: FrameOut, to: ReplyTo, code: Code, message: string): void {
  out.frame(to.conn, to.req, true, errorBody({ code, message }));
}

export interface JobRunnerOptions {
  outbox: FrameOut;
  log: Logger;
  /** null: persistence is off (benchmarks); nothing is written. */
  store: ConversationStorage | null;
  models: Models;
  harness: Harness;
  agents: Record<string, AgentConfig>;
  /** A conversation went idle: the table may evict. */
  idle(): void;
}

export class JobRunner {
  readonly #o: JobRunnerOptions;
  readonly #writer: TurnWriter | null;
  /** Open jobs per connection, so a disconnect cancels them without a scan. */
  readonly #jobsByConn = new Map<number, Set<Job>>();
  #openJobs = 0;
  agents: Record<string, AgentConfig>;

  constructor(opts: JobRunnerOptions) {
    this.#o = opts;
    this.agents = opts.agents;
    this.#writer = opts.store === null ? null : new TurnWriter(opts.store, () => this.#openJobs, () => opts.outbox.holdForCommit?.());
  }

  /** Queues a job in its conversation's FIFO; it runs when every job before it has ended. */
  enqueue(job: Job): void {
    this.#track(job);
    job.conv.enqueue(job);
    this.#pump(job.conv);
  }

  /** Cancels the running job and every queued one. */
  cancelConversation(conv: Conversation, reason: string): void {
    conv.running?.cancel.cancel(reason);
    for (const job of conv.drainQueue()) this.#cancelQueued(job, reason);
  }

  /**
   * Cancels every job of a connection: the running ones end themselves, queued ones end now.
   * A detached run goes on (`detach`, or a stored turn named by a turn_id, whose client said it would retry).
   */
  cancelConnection(conn: number, reason: string): void {
    const jobs = this.#jobsByConn.get(conn);
    if (jobs === undefined) return;
    const convs = new Set<Conversation>();
    for (const job of jobs) {
      if (this.#outlivesConnection(job)) continue;
      if (job.conv.running === job) job.cancel.cancel(reason);
      else convs.add(job.conv);
    }
    for (const conv of convs) {
      for (const job of conv.removeQueued((j) => j.req.conn === conn && !this.#outlivesConnection(j))) this.#cancelQueued(job, reason);
    }
  }

  #outlivesConnection(job: Job): boolean {
    return job.kind === 'turn' && job.req.detach;
  }

  /** Cancels every open job (shutdown). */
  cancelAll(reason: string): void {
    const convs = new Set<Conversation>();
    for (const jobs of this.#jobsByConn.values()) for (const job of jobs) convs.add(job.conv);
    for (const conv of convs) this.cancelConversation(conv, reason);
  }

  #track(job: Job): void {
    let set = this.#jobsByConn.get(job.req.conn);
    if (set === undefined) this.#jobsByConn.set(job.req.conn, (set = new Set()));
    if (!set.has(job)) this.#openJobs++;
    set.add(job);
  }

  #untrack(job: Job): void {
    const set = this.#jobsByConn.get(job.req.conn);
    if (set === undefined) return;
    if (set.delete(job)) this.#openJobs--;
    if (set.size === 0) this.#jobsByConn.delete(job.req.conn);
  }

  #pump(conv: Conversation): void {
    if (conv.running !== null) return;
    const next = conv.takeNext();
    if (next === undefined) return;
    conv.running = next;
    const done = next.kind === 'turn' ? this.#runTurn(next) : this.#runCompact(next);
    conv.runningDone = done.finally(() => {
      this.#untrack(next);
      conv.running = null;
      conv.runningDone = null;
      this.#pump(conv);
      if (!conv.transient) this.#o.idle();
    });
  }

  async #runTurn(turn: Turn): Promise<void> {
    const { req, reply } = turn;
    // Stored before anything runs: if this turn freezes the shard, main knows which one it was.
    markRunning(req.seq);
    this.#o.outbox.turnStarted(req.seq);
    const answering = req.guest ?? req.agent;
    // Only a turn named by a turn_id, on a stored conversation, asks the store first.
    const lookup = this.#storedOutcome(turn);
    if (lookup !== null && (await this.#replayed(turn, lookup, answering))) return;
    reply.start(answering, turn.resume != null);
    try {
      const config = this.agents[answering];
      if (config === undefined) {
        const error = req.guest !== null ? `unknown guest agent "${req.guest}"` : `agent "${req.agent}" was deleted`;
        return reply.endEmpty(answering, StopReason.Error, error);
      }
      await this.#runLoop(turn, answering, config);
    } catch (err) {
      // The loop reports its own failures; reaching here is a bug, but the request still gets its end.
      this.#o.log.error({ err, agent: req.agent }, 'turn failed outside the agent loop');
      reply.endEmpty(answering, StopReason.Error, String(err));
    }
  }

  /** The outcome of a turn with the same turn_id already stored for this pair, if any (checked when the turn comes up, so a retry queued behind its original sees it). */
  #storedOutcome({ req, conv, resume }: Turn): Promise<TurnOutcome | null> | null {
    if (resume != null || req.turnId === null || conv.transient || conv.dbId === null || this.#o.store === null) return null;
    return this.#o.store.outcome(conv.dbId, req.turnId);
  }

  /** Replays the stored outcome of a retried turn; true when the turn is answered (replayed, or failed reading the store). */
  async #replayed({ req, reply }: Turn, lookup: Promise<TurnOutcome | null>, answering: string): Promise<boolean> {
    try {
      const stored = await lookup;
      if (stored === null) return false;
      reply.replayed(stored);
    } catch (err) {
      reply.start(answering);
      reply.endEmpty(answering, StopReason.Error, `reading the stored turn failed: ${(err as Error).message}`);
    }
    return true;
  }

  async #runLoop(turn: Turn, answering: string, config: AgentConfig): Promise<void> {
    const { req, cancel, conv, reply } = turn;
    const model = this.#o.models.for(config);
    if (model instanceof Error) return reply.endEmpty(answering, StopReason.Error, model.message, config.model);
    const user: Message = { role: 'user', content: req.content };
    let tools = NO_TOOLS; // guests answer without tools
    if (req.guest === null) {
      try {
        tools = await this.#o.harness.toolsFor(answering, config, cancel);
      } catch (err) {
        this.#o.log.warn({ agent: answering, err: (err as Error).message }, 'loading the agent\'s tools failed (harness module or MCP server): the turn ends with an error');
        return reply.endEmpty(answering, StopReason.Error, `loading tools failed: ${(err as Error).message}`, config.model);
      }
    }
    // A resumed run's turn went through this step before its restart.
    if (turn.resume == null) await compactBeforeTurn(turn, config, model, this.#o);
    const steering = reply.run;
    steering?.openSteering();
    const result = await runAgentLoop({
      agent: answering,
      sender: req.sender,
      attributeTo: req.guest,
      config,
      model,
      history: conv.history,
      messages: [user],
      tools,
      toolChoice: req.toolChoice,
      cancel,
      emit: trackingContext(conv, reply.event),
      steering,
      approver: steering,
      resume: turn.resume ?? null,
      seq: req.seq,
    });
    if (steering?.suspended) return reply.endEmpty(answering, StopReason.Cancelled, SUSPENDED, config.model);
    let { stopReason, error } = result;
    if (stopReason === StopReason.Error) this.#o.log.warn({ agent: answering, sender: req.sender, model: config.model, provider: config.provider, error }, 'turn ended with an error');
    const outcome: TurnOutcome | null =
      req.turnId === null
        ? null
        : { turnId: req.turnId, agent: answering, model: config.model, stopReason, error, usage: result.usage, finalText: result.finalText };
    const failure = await this.#commit(conv, [user, ...result.produced], req.agent, outcome, req.seq);
    if (failure !== null) {
      stopReason = StopReason.Error;
      error = failure;
    }
    reply.end({ agent: answering, error, model: config.model, usage: result.usage, stop_reason: stopReason }, result.finalText);
  }

  /** Stores a finished turn (before `end` is sent: a client that saw `end` can rely on it); the error text if that failed. */
  async #commit(conv: Conversation, messages: Message[], agent: string, outcome: TurnOutcome | null, seq: number): Promise<string | null> {
    if (conv.transient || conv.deleted) return null;
    try {
      if (this.#writer !== null) await (callMeter.spans ? timedWrite(this.#writer, conv, messages, outcome, seq) : this.#writer.write(conv, messages, outcome));
      if (!conv.deleted) conv.append(messages);
      return null;
    } catch (err) {
      this.#o.log.error({ err, agent }, 'storing a turn failed');
      return `storing the turn failed: ${(err as Error).message}`;
    }
  }

  async #runCompact(job: CompactJob): Promise<void> {
    const { req, conv, cancel } = job;
    const out = this.#o.outbox;
    try {
      const config = this.agents[req.agent];
      if (config === undefined) return errorTo(out, req, Code.NotFound, `unknown agent "${req.agent}"`);
      const model = this.#o.models.for(config);
      if (model instanceof Error) return errorTo(out, req, Code.Internal, model.message);
      const summary = await summarize(model, config, conv.history, req.prompt, cancel, 'request');
      if (conv.deleted) return errorTo(out, req, Code.NotFound, 'the conversation was deleted');
      if (conv.dbId !== null) await this.#o.store?.setSummary(conv.dbId, summary, conv.stored);
      if (conv.deleted) return errorTo(out, req, Code.NotFound, 'the conversation was deleted');
      conv.compacted(summary);
      replyTo(out, req, 'compact', { summary });
    } catch (err) {
      if (cancel.aborted) errorTo(out, req, Code.Cancelled, cancel.reason);
      else errorTo(out, req, Code.Internal, `compaction failed: ${(err as Error).message}`);
    }
  }

  /** Cancels a queued job that never ran; a stream still gets `start` then `end`, so every stream has one shape. */
  #cancelQueued(job: Job, reason: string): void {
    this.#untrack(job);
    if (job.kind === 'compact') return errorTo(this.#o.outbox, job.req, Code.Cancelled, reason);
    const agent = job.req.guest ?? job.req.agent;
    job.reply.start(agent);
    job.reply.endEmpty(agent, StopReason.Cancelled, reason, this.agents[agent]?.model);
  }
}

/** A turn's commit, recorded for its trace (call-meter.ts). */
async function timedWrite(writer: TurnWriter, conv: Conversation, messages: Message[], outcome: TurnOutcome | null, seq: number): Promise<void> {
  const start = CallMeter.now();
  let status: 'ok' | 'error' = 'error';
  try {
    await writer.write(conv, messages, outcome);
    status = 'ok';
  } finally {
    callMeter.commit(seq, status, start, CallMeter.now() - start);
  }
}
