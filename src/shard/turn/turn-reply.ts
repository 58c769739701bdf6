/**
 * How a turn answers: `stream` sends every event as a frame and ends with
 * `end`; `send` stays silent and answers once with `response` (or an error:
 * 499 when cancelled, 500 when the model failed); `event` (fired by the bus)
 * answers no one. Whatever the mode, while anyone observes the agent event
 * stream, each event is also encoded once as an `agent_event` for them.
 */
import { Code } from '../../shared/errors.ts';
import { StopReason, zeroUsage, type EndEvent } from '../../shared/protocol.ts';
import type { TurnRequest } from '../../shared/threads/shard-messages.ts';
import type { FrameOut } from '../outbox.ts';
import type { AgentEvent, AgentEventKind, StreamEventName } from '../../shared/wire/ops.ts';
import { agentEventBody, errorBody, replyBody, streamBody } from '../../shared/wire/frames.ts';
import { ChunkCoalescer } from './chunk-coalescer.ts';

/** Events whose `content` deltas may be merged when produced faster than they can be sent. */
const MERGEABLE = new Set(['chunk', 'thinking']);

/** Stream event → agent event kind (events without a kind are not observed). */
const KIND: Record<string, AgentEventKind | undefined> = {
  text_start: 'text_start',
  chunk: 'text_delta',
  text_end: 'text_end',
  thinking_start: 'thinking_start',
  thinking: 'thinking_delta',
  thinking_end: 'thinking_end',
  tool_start: 'tool_start',
  tool_result: 'tool_result',
  tools_complete: 'tools_complete',
  compacted: 'compacted',
};

export class TurnReply {
  readonly #outbox: FrameOut;
  readonly #req: TurnRequest;
  readonly #streaming: boolean;
  #agent: string;
  readonly #frames: ChunkCoalescer;
  readonly #observed: ChunkCoalescer;

  constructor(outbox: FrameOut, req: TurnRequest) {
    this.#outbox = outbox;
    this.#req = req;
    this.#streaming = req.mode === 'stream';
    this.#agent = req.guest ?? req.agent;
    const batchNo = (): number => outbox.batches ?? 0;
    this.#frames = new ChunkCoalescer((name, content) => outbox.textDelta(req.conn, req.req, name, content), batchNo);
    this.#observed = new ChunkCoalescer((name, content) => this.#observe(KIND[name]!, { content }), batchNo);
  }

  start(agent: string): void {
    this.#agent = agent;
    if (!this.#streaming) return;
    this.#outbox.started(this.#req.conn, this.#req.req);
    this.#outbox.frame(this.#req.conn, this.#req.req, false, streamBody('start', { agent }));
  }

  /** Bound once per turn, handed to the agent loop as its emitter. */
  readonly event = (name: string, body: Record<string, unknown>): void => {
    const mergeable = MERGEABLE.has(name) && typeof body.content === 'string';
    if (this.#streaming) {
      if (mergeable) this.#frames.add(name, body.content as string);
      else {
        this.#frames.flush();
        this.#frame(name, body);
      }
    }
    if (this.#outbox.observing) {
      const kind = KIND[name];
      if (mergeable) this.#observed.add(name, body.content as string);
      else if (kind !== undefined) {
        this.#observed.flush();
        this.#observe(kind, body);
      }
    }
  };

  // The agent loop names its events as strings (agent-loop.ts): here they become the stream events the wire declares.
  #frame(name: string, body: Record<string, unknown>): void {
    this.#outbox.frame(this.#req.conn, this.#req.req, false, streamBody(name as StreamEventName, body as never));
  }

  #observe(kind: AgentEventKind, body: Record<string, unknown>): void {
    const req = this.#req;
    const ev: AgentEvent = {
      agent: this.#agent,
      sender: req.sender,
      kind,
      content: typeof body.content === 'string' ? body.content : '',
      timestamp: new Date().toISOString(),
      ephemeral: req.ephemeral,
    };
    if (kind === 'tool_start') ev.tool_calls = body.calls as AgentEvent['tool_calls'];
    if (kind === 'compacted') ev.content = body.summary as string;
    if (kind === 'tool_result') {
      ev.tool_output = body.output as string;
      ev.tool_is_error = body.is_error as boolean;
    }
    if (req.correlationId !== null) ev.correlation_id = req.correlationId;
    this.#outbox.agentEvent(this.#agent, agentEventBody(ev));
  }

  end(end: EndEvent, finalText: string): void {
    const req = this.#req;
    this.#frames.flush();
    this.#observed.flush();
    if (this.#outbox.observing) this.#observe('done', { content: finalText });
    const finishedNormally = end.stop_reason !== StopReason.Cancelled && end.stop_reason !== StopReason.Error;
    const heard = finishedNormally && req.guest === null && !req.ephemeral && this.#outbox.doneWatched.has(req.agent);
    if (heard) this.#outbox.finished({ agent: req.agent, text: finalText, depth: req.depth, chain: req.chain });
    this.#outbox.turnEnded(req.seq, end.stop_reason);
    if (req.mode === 'stream') {
      this.#outbox.frame(req.conn, req.req, true, streamBody('end', end));
    } else if (req.mode === 'send') {
      if (end.stop_reason === StopReason.Cancelled) this.error(Code.Cancelled, end.error || 'cancelled');
      else if (end.stop_reason === StopReason.Error) this.error(Code.Internal, end.error);
      else this.#outbox.frame(req.conn, req.req, true, replyBody('send', { agent: end.agent, content: finalText, model: end.model, usage: end.usage }));
    }
  }

  /** Ends a turn that produced nothing (it failed or was cancelled before any model output). */
  endEmpty(agent: string, stopReason: StopReason, error: string, model = ''): void {
    this.end({ agent, error, model, usage: zeroUsage(), stop_reason: stopReason }, '');
  }

  /** Refuses the request before it started (no `start` was sent). */
  error(code: Code, message: string): void {
    this.#outbox.turnEnded(this.#req.seq, 'refused');
    if (this.#req.mode === 'event') return;
    this.#outbox.frame(this.#req.conn, this.#req.req, true, errorBody({ code, message }));
  }
}
