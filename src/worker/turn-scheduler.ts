/**
 * A shard's message handler. Every message for a pair arrives here in the
 * order main received it: turns and compactions join their pair's FIFO (the
 * job runner), and `kill`, `delete` or a closed connection act on the same
 * ordered stream, so a cancel can never overtake the turn it targets.
 */
import type { AgentConfig } from '../shared/config.ts';
import { Code } from '../shared/errors.ts';
import { PONG } from '../shared/codec.ts';
import type { AgentChange, CompactRequest, KillRequest, PairRequest, PurgeAgent, ToShard, TurnRequest } from '../shared/threads.ts';
import type { Logger } from '../shared/log.ts';
import { Conversation } from './conversation.ts';
import type { Models } from './models/index.ts';
import type { FrameOut } from './outbox.ts';
import type { ConversationStore } from './store.ts';
import { TurnReply } from './turn-reply.ts';
import { Cancellation } from './cancellation.ts';
import type { Harness } from './harness.ts';
import type { Message } from './models/types.ts';
import { ConversationTable } from './conversation-table.ts';
import { CancelReason, errorTo, JobRunner, replyTo } from './job-runner.ts';

export { CancelReason } from './job-runner.ts';

export interface SchedulerOptions {
  outbox: FrameOut;
  agents: Record<string, AgentConfig>;
  log: Logger;
  /** null: persistence is off (benchmarks); nothing is written or evicted. */
  store: ConversationStore | null;
  /** Idle conversations kept in memory; beyond it the least recently used are evicted. */
  memoryConversations: number;
  /** Approximate bytes of history kept in memory; beyond it idle conversations are evicted, least recently used first. */
  memoryBytes?: number;
  models: Models;
  harness: Harness;
}

/** A message as `get_conversation_history` shows it: `agent` only on a guest's, `stop_reason` only on a stalled turn's record. */
function historyMessage(m: Message): Record<string, string> {
  const shown: Record<string, string> = { role: m.role, content: m.content };
  if (m.agent !== undefined) shown.agent = m.agent;
  if (m.stop_reason !== undefined) shown.stop_reason = m.stop_reason;
  return shown;
}

type PairAddress = { conn: number; req: number; agent: string; sender: string };

export class TurnScheduler {
  readonly #outbox: FrameOut;
  readonly #store: ConversationStore | null;
  readonly #table: ConversationTable;
  readonly #runner: JobRunner;
  #shuttingDown = false;

  constructor(opts: SchedulerOptions) {
    this.#outbox = opts.outbox;
    this.#store = opts.store;
    this.#table = new ConversationTable(opts.store, opts.memoryConversations, opts.memoryBytes);
    // No prototype: an agent named "__proto__" or "constructor" is a key like any other when changes are applied in place.
    const agents = Object.assign(Object.create(null) as Record<string, AgentConfig>, opts.agents);
    this.#runner = new JobRunner({ ...opts, agents, idle: () => this.#table.evict() });
  }

  handle(msg: ToShard): void {
    switch (msg.type) {
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
        return this.#runner.cancelConnection(msg.conn, CancelReason.Disconnect);
      case 'active_query':
        return this.#outbox.activeAnswer({ id: msg.id, conversations: this.#table.active(msg) });
      case 'purge_agent':
        return this.#purgeAgent(msg);
      case 'agent':
        return this.#agentChanged(msg);
      case 'observe':
        this.#outbox.observing = msg.watching;
        return;
      case 'shutdown':
        this.#shuttingDown = true;
        return this.#runner.cancelAll(CancelReason.Shutdown);
    }
  }

  /** Applied in place: running turns keep the config object they started with. */
  #agentChanged(msg: AgentChange): void {
    if (msg.config === null) delete this.#runner.agents[msg.name];
    else this.#runner.agents[msg.name] = msg.config;
  }

  #turn(req: TurnRequest): void {
    const reply = new TurnReply(this.#outbox, req);
    if (this.#shuttingDown) return reply.error(Code.ShuttingDown, 'the daemon is shutting down');
    if (this.#runner.agents[req.agent] === undefined) return reply.error(Code.NotFound, `unknown agent "${req.agent}"`);
    // An ephemeral turn has a fresh history and stores nothing, so it waits for no one.
    const conv = req.ephemeral ? new Conversation(req.agent, req.sender, null, true) : this.#table.findOrCreate(req.agent, req.sender);
    if (conv.busy && req.onBusy === 'reject') {
      return reply.error(Code.Conflict, `agent "${req.agent}" is busy with sender "${req.sender}"`);
    }
    if (conv.busy && req.onBusy === 'interrupt') this.#runner.cancelConversation(conv, CancelReason.Interrupt);
    this.#runner.enqueue({ kind: 'turn', req, cancel: new Cancellation(), conv, reply });
  }

  #compact(req: CompactRequest): void {
    if (this.#shuttingDown) return errorTo(this.#outbox, req, Code.ShuttingDown, 'the daemon is shutting down');
    const conv = this.#table.find(req.agent, req.sender);
    if (conv === null || (conv.stored === 0 && !conv.busy)) return this.#noConversation(req);
    this.#runner.enqueue({ kind: 'compact', req, cancel: new Cancellation(), conv });
  }

  #noConversation(req: PairAddress): void {
    errorTo(this.#outbox, req, Code.NotFound, `no conversation for agent "${req.agent}" and sender "${req.sender}"`);
  }

  #kill(req: KillRequest): void {
    const conv = this.#table.peek(req.agent, req.sender);
    // Nothing runs for a pair that is not in memory; it exists if it was stored.
    if (conv === undefined && !this.#store?.exists(req.agent, req.sender)) return this.#noConversation(req);
    if (conv !== undefined) this.#runner.cancelConversation(conv, CancelReason.Kill);
    replyTo(this.#outbox, req, PONG);
  }

  #history(req: PairRequest): void {
    const conv = this.#table.find(req.agent, req.sender);
    if (conv === null || (conv.stored === 0 && conv.dbId === null)) return this.#noConversation(req);
    const messages = conv.dbId !== null && this.#store !== null ? this.#store.allMessages(conv.dbId) : conv.history;
    replyTo(this.#outbox, req, {
      conversation_history: {
        agent: req.agent,
        sender: req.sender,
        title: conv.title,
        messages: messages.map(historyMessage),
      },
    });
  }

  #delete(req: PairRequest): void {
    const conv = this.#table.find(req.agent, req.sender);
    if (conv === null) return this.#noConversation(req);
    this.#table.remove(conv);
    this.#runner.cancelConversation(conv, CancelReason.Deleted);
    const finish = (): void => {
      try {
        if (conv.dbId !== null) this.#store?.delete(conv.dbId);
        replyTo(this.#outbox, req, PONG);
      } catch (err) {
        errorTo(this.#outbox, req, Code.Internal, `deleting failed: ${(err as Error).message}`);
      }
    };
    // The running turn is cancelled first; the rows go once it has ended.
    if (conv.runningDone !== null) void conv.runningDone.then(finish);
    else finish();
  }

  /** The agent was deleted: cancel its conversations' jobs, forget them, and answer once none runs. */
  #purgeAgent(msg: PurgeAgent): void {
    const running: Promise<void>[] = [];
    for (const conv of this.#table.removeAgent(msg.agent)) {
      this.#runner.cancelConversation(conv, CancelReason.AgentDeleted);
      if (conv.runningDone !== null) running.push(conv.runningDone);
    }
    void Promise.all(running).then(() => this.#outbox.purged(msg.id));
  }
}
