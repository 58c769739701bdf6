/**
 * A shard's conversations and the turns running in them. Every message for a
 * pair arrives here in the order main received it: turns join their pair's
 * FIFO, and `kill` or a closed connection cancels from the same ordered
 * stream, so a cancel can never overtake the turn it targets.
 */
import type { AgentConfig } from '../shared/config.ts';
import { Code } from '../shared/errors.ts';
import { StopReason, zeroUsage } from '../shared/protocol.ts';
import type { ActiveConversation, ActiveQuery, KillRequest, ToShard, TurnRequest } from '../shared/threads.ts';
import type { Logger } from '../shared/log.ts';
import { runAgentLoop } from './agent-loop.ts';
import { Conversation, pairKey, type Turn } from './conversation.ts';
import { modelFor } from './models/index.ts';
import type { Message } from './models/types.ts';
import type { Outbox } from './outbox.ts';
import { NO_TOOLS } from './tools.ts';
import { Cancellation } from './cancellation.ts';
import { TurnReply } from './turn-reply.ts';

/** Why a turn was cancelled; becomes `end.error`. */
export const CancelReason = {
  Kill: 'cancelled by kill',
  Interrupt: 'interrupted by a newer turn',
  Disconnect: 'connection closed',
  Shutdown: 'shutting down',
} as const;

export class TurnScheduler {
  readonly #outbox: Outbox;
  readonly #log: Logger;
  readonly #conversations = new Map<string, Conversation>();
  /** Open turns per connection, so a disconnect cancels them without a scan. */
  readonly #turnsByConn = new Map<number, Set<Turn>>();
  #agents: Record<string, AgentConfig>;
  #shuttingDown = false;

  constructor(outbox: Outbox, agents: Record<string, AgentConfig>, log: Logger) {
    this.#outbox = outbox;
    this.#agents = agents;
    this.#log = log;
  }

  handle(msg: ToShard): void {
    switch (msg.t) {
      case 'turn':
        return this.#turn(msg);
      case 'kill':
        return this.#kill(msg);
      case 'conn_closed':
        return this.#connClosed(msg.conn);
      case 'query':
        return this.#outbox.query({ qid: msg.qid, result: this.#active(msg) });
      case 'agents':
        this.#agents = msg.agents;
        return;
      case 'shutdown':
        return this.#shutdown();
    }
  }

  #turn(req: TurnRequest): void {
    const reply = new TurnReply(this.#outbox, req);
    if (this.#shuttingDown) return reply.error(Code.ShuttingDown, 'the daemon is shutting down');
    if (this.#agents[req.agent] === undefined) return reply.error(Code.NotFound, `unknown agent "${req.agent}"`);

    if (req.ephemeral) {
      // An ephemeral turn has a fresh history and stores nothing, so it waits for no one.
      const turn: Turn = { req, cancel: new Cancellation(), conv: null };
      this.#track(turn);
      void this.#run(turn, reply);
      return;
    }

    const key = pairKey(req.agent, req.sender);
    let conv = this.#conversations.get(key);
    if (conv === undefined) {
      conv = new Conversation(req.agent, req.sender);
      this.#conversations.set(key, conv);
    }
    if (conv.busy) {
      if (req.onBusy === 'reject') {
        return reply.error(Code.Conflict, `agent "${req.agent}" is busy with sender "${req.sender}"`);
      }
      if (req.onBusy === 'interrupt') this.#cancelConversation(conv, CancelReason.Interrupt);
    }
    const turn: Turn = { req, cancel: new Cancellation(), conv };
    this.#track(turn);
    conv.queue.push(turn);
    this.#pump(conv);
  }

  #track(turn: Turn): void {
    let set = this.#turnsByConn.get(turn.req.conn);
    if (set === undefined) this.#turnsByConn.set(turn.req.conn, (set = new Set()));
    set.add(turn);
  }

  #untrack(turn: Turn): void {
    const set = this.#turnsByConn.get(turn.req.conn);
    if (set === undefined) return;
    set.delete(turn);
    if (set.size === 0) this.#turnsByConn.delete(turn.req.conn);
  }

  #pump(conv: Conversation): void {
    if (conv.running !== null) return;
    const next = conv.queue.shift();
    if (next === undefined) return;
    conv.running = next;
    void this.#run(next, new TurnReply(this.#outbox, next.req)).finally(() => {
      conv.running = null;
      this.#pump(conv);
    });
  }

  async #run(turn: Turn, reply: TurnReply): Promise<void> {
    const { req, cancel, conv } = turn;
    const answering = req.guest ?? req.agent;
    reply.start(answering);
    try {
      const config = this.#agents[answering];
      if (config === undefined) {
        const error = req.guest !== null ? `unknown guest agent "${req.guest}"` : `agent "${req.agent}" was deleted`;
        reply.end({ agent: answering, error, model: '', usage: zeroUsage(), stop_reason: StopReason.Error }, '');
        return;
      }
      const model = modelFor(config);
      if (model instanceof Error) {
        reply.end({ agent: answering, error: model.message, model: config.model, usage: zeroUsage(), stop_reason: StopReason.Error }, '');
        return;
      }
      const user: Message = { role: 'user', content: req.content };
      const history = conv === null ? [] : conv.history;
      const result = await runAgentLoop({
        agent: answering,
        sender: req.sender,
        attributeTo: req.guest,
        config,
        model,
        messages: [...history, user],
        tools: NO_TOOLS, // guests never get tools; agents get theirs with the harness (issue 4)
        toolChoice: req.toolChoice,
        cancel,
        emit: reply.event,
      });
      conv?.append([user, ...result.produced]);
      reply.end(
        { agent: answering, error: result.error, model: config.model, usage: result.usage, stop_reason: result.stopReason },
        result.finalText,
      );
    } catch (err) {
      // The loop reports its own failures; reaching here is a bug, but the request still gets its end.
      this.#log.error({ err, agent: req.agent }, 'turn failed outside the agent loop');
      reply.end({ agent: answering, error: String(err), model: '', usage: zeroUsage(), stop_reason: StopReason.Error }, '');
    } finally {
      this.#untrack(turn);
    }
  }

  /** Cancels a queued turn that never ran: `start` then `end`, so every stream has one shape. */
  #cancelQueued(turn: Turn, reason: string): void {
    this.#untrack(turn);
    const reply = new TurnReply(this.#outbox, turn.req);
    const agent = turn.req.guest ?? turn.req.agent;
    reply.start(agent);
    reply.end({ agent, error: reason, model: this.#agents[agent]?.model ?? '', usage: zeroUsage(), stop_reason: StopReason.Cancelled }, '');
  }

  #cancelConversation(conv: Conversation, reason: string): void {
    conv.running?.cancel.cancel(reason);
    for (const turn of conv.queue.drain()) this.#cancelQueued(turn, reason);
  }

  #kill(req: KillRequest): void {
    const reply = (value: unknown): void => this.#outbox.frame(req.conn, req.req, true, value);
    const conv = this.#conversations.get(pairKey(req.agent, req.sender));
    if (conv === undefined) {
      return reply({ error: { code: Code.NotFound, message: `no conversation for agent "${req.agent}" and sender "${req.sender}"` } });
    }
    this.#cancelConversation(conv, CancelReason.Kill);
    reply({ pong: {} });
  }

  #connClosed(conn: number): void {
    const turns = this.#turnsByConn.get(conn);
    if (turns === undefined) return;
    const convs = new Set<Conversation>();
    for (const turn of turns) {
      if (turn.conv === null || turn.conv.running === turn) turn.cancel.cancel(CancelReason.Disconnect);
      else convs.add(turn.conv);
    }
    for (const conv of convs) {
      for (const turn of conv.queue.removeWhere((t) => t.req.conn === conn)) this.#cancelQueued(turn, CancelReason.Disconnect);
    }
  }

  #shutdown(): void {
    this.#shuttingDown = true;
    for (const conv of this.#conversations.values()) this.#cancelConversation(conv, CancelReason.Shutdown);
    for (const turns of this.#turnsByConn.values()) {
      for (const turn of turns) if (turn.conv === null) turn.cancel.cancel(CancelReason.Shutdown);
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
        message_count: c.history.length,
        alive_secs: Math.floor((now - c.createdAt) / 1000),
        title: c.title,
        running: c.running !== null,
        queued: c.queue.size,
      });
    }
    return out;
  }
}
