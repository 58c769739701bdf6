/**
 * How a turn answers: `stream` sends every event as a frame and ends with
 * `end`; `send` stays silent and answers once with `response` (or an error:
 * 499 when cancelled, 500 when the model failed); `event` (fired by the bus)
 * answers no one. Every queued turn is a run (runs/run.ts): its frames are
 * numbered (`seq`), kept when it is detached and sent to whoever joined it.
 * Whatever the mode, while anyone observes the agent event stream, each
 * event is also encoded once as an `agent_event` for them.
 */
import { Code } from '../../shared/errors.ts';
import { StopReason, zeroUsage, type EndEvent } from '../../shared/protocol.ts';
import type { TurnRequest } from '../../shared/threads/shard-messages.ts';
import type { FrameOut } from '../outbox.ts';
import type { AgentEvent, AgentEventKind, StreamEventName } from '../../shared/wire/ops.ts';
import { agentEventBody, errorBody, replyBody, streamBody, type ErrorBody, type ReplyBody } from '../../shared/wire/frames.ts';
import type { TurnOutcome } from '../../storage/contract.ts';
import { ChunkCoalescer } from './chunk-coalescer.ts';
import { replayedEnd, storedAnswer } from './turn-replay.ts';
import type { Run } from '../runs/run.ts';

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
  steered: 'steered',
  approval_required: 'waiting',
};

type Body = Record<string, unknown>;

export class TurnReply {
  readonly #outbox: FrameOut;
  readonly #req: TurnRequest;
  readonly #streaming: boolean;
  /** Stream frames are built: the client streams, or the run keeps them for joiners. */
  #framing: boolean;
  #agent: string;
  #run: Run | null = null;
  readonly #frames: ChunkCoalescer;
  readonly #observed: ChunkCoalescer;

  constructor(outbox: FrameOut, req: TurnRequest) {
    this.#outbox = outbox;
    this.#req = req;
    this.#streaming = req.mode === 'stream';
    this.#framing = this.#streaming;
    this.#agent = req.guest ?? req.agent;
    const batchNo = (): number => outbox.batches ?? 0;
    this.#frames = new ChunkCoalescer((name, content) => this.#delta(name, content), batchNo);
    this.#observed = new ChunkCoalescer((name, content) => this.#observe(KIND[name]!, { content }), batchNo);
  }

  /** The turn was queued as `run`. */
  attach(run: Run): void {
    this.#run = run;
    if (run.kept !== null) this.#framing = true;
  }

  get run(): Run | null {
    return this.#run;
  }

  /** `resumed`: a stored waiting run goes on (it sent its `start` before the restart, and may still wait). */
  start(agent: string, resumed = false): void {
    this.#agent = agent;
    const run = this.#run;
    if (run !== null && run.status === 'queued') run.status = 'running';
    if (!this.#framing || resumed) return;
    if (this.#streaming) this.#outbox.started(this.#req.conn, this.#req.req);
    this.#send('start', run === null ? { agent } : { agent, run_id: run.id }, false);
  }

  /** Bound once per turn, handed to the agent loop as its emitter. */
  readonly event = (name: string, body: Body): void => {
    const mergeable = MERGEABLE.has(name) && typeof body.content === 'string';
    if (this.#framing) {
      if (mergeable) this.#frames.add(name, body.content as string);
      else {
        this.#frames.flush();
        this.#send(name, body, false);
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
  #send(name: string, body: Body, last: boolean): void {
    const run = this.#run;
    if (run !== null) body.seq = ++run.seq;
    const frame = streamBody(name as StreamEventName, body as never);
    if (this.#streaming) this.#outbox.frame(this.#req.conn, this.#req.req, last, frame);
    if (run === null) return;
    run.kept?.add(run.seq, name, body);
    const joiners = run.joiners;
    if (joiners !== null) for (const j of joiners) this.#outbox.frame(j.conn, j.req, last, frame);
  }

  #delta(name: string, content: string): void {
    const run = this.#run; // null only for a reply no scheduler queued (unit tests): its frames carry seq 0
    const seq = run === null ? 0 : ++run.seq;
    if (this.#streaming) this.#outbox.textDelta(this.#req.conn, this.#req.req, name, content, seq);
    if (run === null) return;
    run.kept?.addText(seq, name, content);
    const joiners = run.joiners;
    if (joiners !== null) for (const j of joiners) this.#outbox.textDelta(j.conn, j.req, name, content, seq);
  }

  #observe(kind: AgentEventKind, body: Body): void {
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
    if (kind === 'waiting') ev.tool_calls = [{ id: body.call_id as string, name: body.tool as string, arguments: body.arguments as string }];
    if ((kind === 'steered' || kind === 'waiting' || kind === 'done') && this.#run !== null) ev.run_id = this.#run.id;
    if (kind === 'done') {
      ev.stop_reason = body.stop_reason as StopReason;
      if (body.error !== '') ev.error = body.error as string;
    }
    this.#outbox.agentEvent(this.#agent, agentEventBody(ev));
  }

  end(end: EndEvent, finalText: string): void {
    const req = this.#req;
    this.#frames.flush();
    this.#observed.flush();
    if (this.#outbox.observing) this.#observe('done', { content: finalText, stop_reason: end.stop_reason, error: end.error });
    const finishedNormally = end.stop_reason !== StopReason.Cancelled && end.stop_reason !== StopReason.Error;
    const heard = finishedNormally && req.guest === null && !req.ephemeral && this.#outbox.doneWatched.has(req.agent);
    if (heard) this.#outbox.finished({ agent: req.agent, text: finalText, depth: req.depth, chain: req.chain });
    this.#finish(end, () => {
      if (end.stop_reason === StopReason.Cancelled) return errorBody({ code: Code.Cancelled, message: end.error || 'cancelled' });
      if (end.stop_reason === StopReason.Error) return errorBody({ code: Code.Internal, message: end.error });
      return replyBody('send', { agent: end.agent, content: finalText, model: end.model, usage: end.usage });
    });
  }

  /** Answers a retried turn from storage (turn-replay.ts): nothing is published or observed, the turn happened once. */
  replayed(o: TurnOutcome): void {
    this.start(o.agent);
    if (this.#framing && o.finalText !== '') this.#delta('chunk', o.finalText);
    this.#finish(replayedEnd(o), () => storedAnswer(o));
  }

  /** The run's last frame: `end` on the stream (and for joiners), or `send`'s one answer (`answer`, which carries the run id). */
  #finish(end: EndEvent, answer: () => ReplyBody<'send'> | ErrorBody): void {
    const req = this.#req;
    this.#outbox.turnEnded(req.seq, end.stop_reason, end.stop_reason === StopReason.Error ? { code: Code.Internal, message: end.error } : undefined);
    if (this.#framing) this.#send('end', end as unknown as Body, true);
    if (req.mode === 'send') {
      const body = answer();
      if ('response' in body && this.#run !== null) body.response.run_id = this.#run.id;
      this.#outbox.frame(req.conn, req.req, true, body);
    }
    this.#run?.end(end.stop_reason, end.error);
  }

  /** Ends a turn that produced nothing (it failed or was cancelled before any model output). */
  endEmpty(agent: string, stopReason: StopReason, error: string, model = ''): void {
    this.end({ agent, error, model, usage: zeroUsage(), stop_reason: stopReason }, '');
  }

  /** Refuses the request before it was queued (no run, no `start`). */
  error(code: Code, message: string): void {
    this.#outbox.turnEnded(this.#req.seq, 'refused', { code, message });
    if (this.#req.mode === 'event') return;
    this.#outbox.frame(this.#req.conn, this.#req.req, true, errorBody({ code, message }));
  }
}
