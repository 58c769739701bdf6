/**
 * A shard's conversations and the jobs running in them. Every message for a
 * pair arrives here in the order main received it: turns and compactions join
 * their pair's FIFO, and `kill`, `delete` or a closed connection act on the
 * same ordered stream, so a cancel can never overtake the turn it targets.
 */
import type { AgentConfig } from '../shared/config.ts';
import { Code } from '../shared/errors.ts';
import { StopReason } from '../shared/protocol.ts';
import type { ActiveConversation, ActiveQuery, CompactRequest, KillRequest, PairRequest, ToShard, TurnRequest } from '../shared/threads.ts';
import type { Logger } from '../shared/log.ts';
import { runAgentLoop } from './agent-loop.ts';
import { Conversation, pairKey, type CompactJob, type Job, type Turn } from './conversation.ts';
import { Models } from './models/index.ts';
import type { Message } from './models/types.ts';
import type { Outbox } from './outbox.ts';
import type { ConversationStore } from './store.ts';
import { NO_TOOLS } from './tools.ts';
import { TurnReply } from './turn-reply.ts';
import { Cancellation } from './cancellation.ts';
import { summarize } from './compaction.ts';
import { TurnWriter } from './turn-writer.ts';
import type { Harness } from './harness.ts';

/** Why a job was cancelled; becomes `end.error`. */
export const CancelReason = {
  Kill: 'cancelled by kill',
  Interrupt: 'interrupted by a newer turn',
  Disconnect: 'connection closed',
  Shutdown: 'shutting down',
  Deleted: 'conversation deleted',
  AgentDeleted: 'agent deleted',
} as const;

export interface SchedulerOptions {
  outbox: Outbox;
  agents: Record<string, AgentConfig>;
  log: Logger;
  /** null: persistence is off (benchmarks); nothing is written or evicted. */
  store: ConversationStore | null;
  /** Idle conversations kept in memory; beyond it the least recently used are evicted. */
  memoryConversations: number;
  models: Models;
  harness: Harness;
}

export class TurnScheduler {
  readonly #outbox: Outbox;
  readonly #log: Logger;
  readonly #store: ConversationStore | null;
  readonly #writer: TurnWriter | null;
  readonly #memoryBudget: number;
  readonly #models: Models;
  readonly #harness: Harness;
  /** In least-recently-used order: a touched conversation moves to the end. */
  readonly #conversations = new Map<string, Conversation>();
  /** Open jobs per connection, so a disconnect cancels them without a scan. */
  readonly #jobsByConn = new Map<number, Set<Job>>();
  #agents: Record<string, AgentConfig>;
  #shuttingDown = false;

  constructor(opts: SchedulerOptions) {
    this.#outbox = opts.outbox;
    this.#agents = opts.agents;
    this.#log = opts.log;
    this.#store = opts.store;
    this.#writer = opts.store === null ? null : new TurnWriter(opts.store);
    this.#memoryBudget = opts.memoryConversations;
    this.#models = opts.models;
    this.#harness = opts.harness;
  }

  handle(msg: ToShard): void {
    switch (msg.t) {
      case 'turn':
        return this.#turn(msg);
      case 'kill':
        return this.#kill(msg);
      case 'compact':
        return this.#compact(msg);
      case 'history':
        return this.#history(msg);
      case 'delete':
        return this.#delete(msg);
      case 'conn_closed':
        return this.#connClosed(msg.conn);
      case 'query':
        if (msg.q === 'active') return this.#outbox.query({ qid: msg.qid, result: this.#active(msg) });
        void this.#purgeAgent(msg.agent).then(() => this.#outbox.query({ qid: msg.qid, result: [] }));
        return;
      case 'agents':
        this.#agents = msg.agents;
        return;
      case 'observe':
        this.#outbox.observing = msg.on;
        return;
      case 'shutdown':
        return this.#shutdown();
    }
  }

  #reply(req: { conn: number; req: number }, value: unknown): void {
    this.#outbox.frame(req.conn, req.req, true, value);
  }

  #error(req: { conn: number; req: number }, code: number, message: string): void {
    this.#reply(req, { error: { code, message } });
  }

  /** The pair's conversation: in memory, else from storage, else (when `create`) new. Marks it recently used. */
  #conversation(agent: string, sender: string, create: boolean): Conversation | null {
    const key = pairKey(agent, sender);
    let conv = this.#conversations.get(key);
    if (conv !== undefined) {
      this.#conversations.delete(key);
      this.#conversations.set(key, conv);
      return conv;
    }
    const stored = this.#store?.load(agent, sender) ?? null;
    if (stored === null && !create) return null;
    conv = new Conversation(agent, sender, stored);
    this.#conversations.set(key, conv);
    return conv;
  }

  /** Drops least-recently-used idle conversations beyond the budget; they come back from storage. */
  #evict(): void {
    if (this.#store === null) return;
    let excess = this.#conversations.size - this.#memoryBudget;
    if (excess <= 0) return;
    for (const [key, conv] of this.#conversations) {
      if (excess <= 0) break;
      if (conv.busy) continue; // a running or queued conversation is never evicted
      this.#conversations.delete(key);
      excess--;
    }
  }

  #turn(req: TurnRequest): void {
    const reply = new TurnReply(this.#outbox, req);
    if (this.#shuttingDown) return reply.error(Code.ShuttingDown, 'the daemon is shutting down');
    if (this.#agents[req.agent] === undefined) return reply.error(Code.NotFound, `unknown agent "${req.agent}"`);

    if (req.ephemeral) {
      // An ephemeral turn has a fresh history and stores nothing, so it waits for no one.
      const turn: Turn = { kind: 'turn', req, cancel: new Cancellation(), conv: null };
      this.#track(turn);
      void this.#runTurn(turn, reply);
      return;
    }

    const conv = this.#conversation(req.agent, req.sender, true)!;
    if (conv.busy) {
      if (req.onBusy === 'reject') {
        return reply.error(Code.Conflict, `agent "${req.agent}" is busy with sender "${req.sender}"`);
      }
      if (req.onBusy === 'interrupt') this.#cancelConversation(conv, CancelReason.Interrupt);
    }
    this.#enqueue({ kind: 'turn', req, cancel: new Cancellation(), conv });
  }

  #compact(req: CompactRequest): void {
    if (this.#shuttingDown) return this.#error(req, Code.ShuttingDown, 'the daemon is shutting down');
    const conv = this.#conversation(req.agent, req.sender, false);
    if (conv === null || (conv.stored === 0 && !conv.busy)) {
      return this.#error(req, Code.NotFound, `no conversation for agent "${req.agent}" and sender "${req.sender}"`);
    }
    this.#enqueue({ kind: 'compact', req, cancel: new Cancellation(), conv });
  }

  #enqueue(job: Job & { conv: Conversation }): void {
    this.#track(job);
    job.conv.queue.push(job);
    this.#pump(job.conv);
  }

  #track(job: Job): void {
    let set = this.#jobsByConn.get(job.req.conn);
    if (set === undefined) this.#jobsByConn.set(job.req.conn, (set = new Set()));
    set.add(job);
  }

  #untrack(job: Job): void {
    const set = this.#jobsByConn.get(job.req.conn);
    if (set === undefined) return;
    set.delete(job);
    if (set.size === 0) this.#jobsByConn.delete(job.req.conn);
  }

  #pump(conv: Conversation): void {
    if (conv.running !== null) return;
    const next = conv.queue.shift();
    if (next === undefined) return;
    conv.running = next;
    const done = next.kind === 'turn' ? this.#runTurn(next, new TurnReply(this.#outbox, next.req)) : this.#runCompact(next);
    conv.runningDone = done.finally(() => {
      conv.running = null;
      conv.runningDone = null;
      this.#pump(conv);
      this.#evict();
    });
  }

  async #runTurn(turn: Turn, reply: TurnReply): Promise<void> {
    const { req, cancel, conv } = turn;
    const answering = req.guest ?? req.agent;
    reply.start(answering);
    try {
      const config = this.#agents[answering];
      if (config === undefined) {
        const error = req.guest !== null ? `unknown guest agent "${req.guest}"` : `agent "${req.agent}" was deleted`;
        return reply.endEmpty(answering, StopReason.Error, error);
      }
      const model = this.#models.for(config);
      if (model instanceof Error) return reply.endEmpty(answering, StopReason.Error, model.message, config.model);
      const user: Message = { role: 'user', content: req.content };
      let tools = NO_TOOLS; // guests answer without tools
      if (req.guest === null) {
        try {
          tools = await this.#harness.toolsFor(answering, config);
        } catch (err) {
          return reply.endEmpty(answering, StopReason.Error, `loading tools failed: ${(err as Error).message}`, config.model);
        }
      }
      const result = await runAgentLoop({
        agent: answering,
        sender: req.sender,
        attributeTo: req.guest,
        config,
        model,
        messages: conv === null ? [user] : [...conv.history, user],
        tools,
        toolChoice: req.toolChoice,
        cancel,
        emit: reply.event,
      });
      let { stopReason, error } = result;
      if (conv !== null && !conv.deleted) {
        const messages = [user, ...result.produced];
        try {
          // Committed before `end` is sent: a client that saw `end` can rely on it.
          if (this.#writer !== null) await this.#writer.write(conv, messages);
          if (!conv.deleted) conv.append(messages);
        } catch (err) {
          this.#log.error({ err, agent: req.agent }, 'storing a turn failed');
          stopReason = StopReason.Error;
          error = `storing the turn failed: ${(err as Error).message}`;
        }
      }
      reply.end({ agent: answering, error, model: config.model, usage: result.usage, stop_reason: stopReason }, result.finalText);
    } catch (err) {
      // The loop reports its own failures; reaching here is a bug, but the request still gets its end.
      this.#log.error({ err, agent: req.agent }, 'turn failed outside the agent loop');
      reply.endEmpty(answering, StopReason.Error, String(err));
    } finally {
      this.#untrack(turn);
    }
  }

  async #runCompact(job: CompactJob): Promise<void> {
    const { req, conv, cancel } = job;
    try {
      const config = this.#agents[req.agent];
      if (config === undefined) return this.#error(req, Code.NotFound, `unknown agent "${req.agent}"`);
      const model = this.#models.for(config);
      if (model instanceof Error) return this.#error(req, Code.Internal, model.message);
      const summary = await summarize(model, config, conv.history, req.prompt, cancel);
      if (conv.deleted) return this.#error(req, Code.NotFound, 'the conversation was deleted');
      if (conv.dbId !== null) this.#store?.setSummary(conv.dbId, summary, conv.stored);
      conv.compacted(summary);
      this.#reply(req, { compact: { summary } });
    } catch (err) {
      if (cancel.aborted) this.#error(req, Code.Cancelled, cancel.reason);
      else this.#error(req, Code.Internal, `compaction failed: ${(err as Error).message}`);
    } finally {
      this.#untrack(job);
    }
  }

  /** Cancels a queued job that never ran; a stream still gets `start` then `end`, so every stream has one shape. */
  #cancelQueued(job: Job, reason: string): void {
    this.#untrack(job);
    if (job.kind === 'compact') return this.#error(job.req, Code.Cancelled, reason);
    const reply = new TurnReply(this.#outbox, job.req);
    const agent = job.req.guest ?? job.req.agent;
    reply.start(agent);
    reply.endEmpty(agent, StopReason.Cancelled, reason, this.#agents[agent]?.model);
  }

  #cancelConversation(conv: Conversation, reason: string): void {
    conv.running?.cancel.cancel(reason);
    for (const job of conv.queue.drain()) this.#cancelQueued(job, reason);
  }

  #noConversation(req: { conn: number; req: number; agent: string; sender: string }): void {
    this.#error(req, Code.NotFound, `no conversation for agent "${req.agent}" and sender "${req.sender}"`);
  }

  #kill(req: KillRequest): void {
    const key = pairKey(req.agent, req.sender);
    const conv = this.#conversations.get(key);
    if (conv === undefined) {
      // Nothing runs for a pair that is not in memory; it exists if it was stored.
      return this.#store?.exists(req.agent, req.sender) ? this.#reply(req, { pong: {} }) : this.#noConversation(req);
    }
    this.#cancelConversation(conv, CancelReason.Kill);
    this.#reply(req, { pong: {} });
  }

  #history(req: PairRequest): void {
    const conv = this.#conversation(req.agent, req.sender, false);
    if (conv === null || (conv.stored === 0 && conv.dbId === null)) return this.#noConversation(req);
    const messages = conv.dbId !== null && this.#store !== null ? this.#store.allMessages(conv.dbId) : conv.history;
    this.#reply(req, {
      conversation_history: {
        agent: req.agent,
        sender: req.sender,
        title: conv.title,
        messages: messages.map((m) => (m.agent === undefined ? { role: m.role, content: m.content } : { role: m.role, content: m.content, agent: m.agent })),
      },
    });
  }

  #delete(req: PairRequest): void {
    const conv = this.#conversation(req.agent, req.sender, false);
    if (conv === null) return this.#noConversation(req);
    conv.deleted = true;
    this.#conversations.delete(pairKey(req.agent, req.sender));
    this.#cancelConversation(conv, CancelReason.Deleted);
    const finish = (): void => {
      try {
        if (conv.dbId !== null) this.#store?.delete(conv.dbId);
        this.#reply(req, { pong: {} });
      } catch (err) {
        this.#error(req, Code.Internal, `deleting failed: ${(err as Error).message}`);
      }
    };
    // The running turn is cancelled first; the rows go once it has ended.
    if (conv.runningDone !== null) void conv.runningDone.then(finish);
    else finish();
  }

  /** The agent was deleted: cancel its conversations' jobs, forget them, and resolve once none runs. */
  async #purgeAgent(agent: string): Promise<void> {
    const running: Promise<void>[] = [];
    for (const [key, conv] of this.#conversations) {
      if (conv.agent !== agent) continue;
      conv.deleted = true;
      this.#conversations.delete(key);
      this.#cancelConversation(conv, CancelReason.AgentDeleted);
      if (conv.runningDone !== null) running.push(conv.runningDone);
    }
    await Promise.all(running);
  }

  #connClosed(conn: number): void {
    const jobs = this.#jobsByConn.get(conn);
    if (jobs === undefined) return;
    const convs = new Set<Conversation>();
    for (const job of jobs) {
      if (job.conv === null || job.conv.running === job) job.cancel.cancel(CancelReason.Disconnect);
      else convs.add(job.conv);
    }
    for (const conv of convs) {
      for (const job of conv.queue.removeWhere((j) => j.req.conn === conn)) this.#cancelQueued(job, CancelReason.Disconnect);
    }
  }

  #shutdown(): void {
    this.#shuttingDown = true;
    for (const conv of this.#conversations.values()) this.#cancelConversation(conv, CancelReason.Shutdown);
    for (const jobs of this.#jobsByConn.values()) {
      for (const job of jobs) if (job.conv === null) job.cancel.cancel(CancelReason.Shutdown);
    }
  }

  #active(q: ActiveQuery): ActiveConversation[] {
    const now = Date.now();
    const out: ActiveConversation[] = [];
    for (const c of this.#conversations.values()) {
      if ((q.agent !== null && c.agent !== q.agent) || (q.sender !== null && c.sender !== q.sender)) continue;
      out.push({
        agent: c.agent,
        sender: c.sender,
        message_count: c.stored,
        alive_secs: Math.floor((now - c.createdAt) / 1000),
        title: c.title,
        running: c.running !== null,
        queued: c.queue.size,
      });
    }
    return out;
  }
}
