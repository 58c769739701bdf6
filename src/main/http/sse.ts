/**
 * Streams over HTTP: an operation's frames as an async iterable of stream
 * frames (a turn, a run's join, the agent event stream), and server-sent
 * events that carry them: one event per frame, `id:` the run's `seq` where
 * the frame has one, so an EventSource resumes through `join_run` with
 * `Last-Event-ID`.
 */
import type { ServerResponse } from 'node:http';
import { sendError } from './http-io.ts';
import { errorOf, type HttpRequester } from './http-requester.ts';

/** One frame of a streaming operation. */
export interface StreamFrame {
  /** The event: a `stream` frame's event (`start`, `chunk`, …, `end`), else the reply variant (`agent_event`, `closed`). */
  event: string;
  /** The event's map, as the socket protocol has it (`seq` included). */
  data: Record<string, unknown>;
  /** The frame's number in its run, or null where it has none. */
  seq: number | null;
  /** The request's last frame. */
  last: boolean;
}

/** Parses a frame body into a StreamFrame; an `{"error": …}` body is thrown. */
export function streamFrameOf(body: Record<string, unknown>, last: boolean): StreamFrame {
  const error = errorOf(body);
  if (error !== null) throw error;
  const variant = Object.keys(body)[0] ?? 'unknown';
  let event = variant;
  let data = (body[variant] ?? {}) as Record<string, unknown>;
  if (variant === 'stream') {
    event = Object.keys(data)[0] ?? 'unknown';
    data = (data[event] ?? {}) as Record<string, unknown>;
  }
  const seq = typeof data.seq === 'number' ? data.seq : null;
  return { event, data, seq, last };
}

/**
 * A streaming operation sent through a requester: its frames, yielded as
 * they come and ending after the last. An error frame (before the stream
 * started, or instead of a later frame) is thrown from the iterator.
 */
export class FrameStream implements AsyncIterable<StreamFrame> {
  readonly #queue: { body: Record<string, unknown>; last: boolean }[] = [];
  readonly #requester: HttpRequester;
  #wake: (() => void) | null = null;

  constructor(requester: HttpRequester, op: string, args: Record<string, unknown>) {
    this.#requester = requester;
    requester.onClose(() => this.#wakeUp());
    requester.send(op, args, (body, last) => {
      this.#queue.push({ body, last });
      this.#wakeUp();
    });
  }

  /** Frames received and not yet taken. */
  get queued(): number {
    return this.#queue.length;
  }

  #wakeUp(): void {
    this.#wake?.();
    this.#wake = null;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<StreamFrame> {
    for (;;) {
      while (this.#queue.length === 0) {
        if (this.#requester.closed) return;
        await new Promise<void>((r) => (this.#wake = r));
      }
      const next = this.#queue.shift()!;
      const frame = streamFrameOf(next.body, next.last);
      yield frame;
      if (frame.last) return;
    }
  }
}

export function streamFrames(requester: HttpRequester, op: string, args: Record<string, unknown>): FrameStream {
  return new FrameStream(requester, op, args);
}

/** What a turn takes: the pair, the message, and any other `stream` argument (PROTOCOL §4.1). */
export interface TurnRequest {
  agent: string;
  sender?: string | null;
  content: string;
  detach?: boolean;
  /** Further `stream` arguments: `on_busy`, `turn_id`, `guest`, `ephemeral`, `tool_choice`, `correlation_id`. */
  options?: Record<string, unknown>;
}

/** A turn's stream frames, `start` (with `run_id`) to `end`: the helper every HTTP route that runs a turn uses. */
export function streamTurn(requester: HttpRequester, turn: TurnRequest): FrameStream {
  const args: Record<string, unknown> = { ...turn.options, agent: turn.agent, content: turn.content };
  if (turn.sender !== undefined && turn.sender !== null) args.sender = turn.sender;
  if (turn.detach !== undefined) args.detach = turn.detach;
  return streamFrames(requester, 'stream', args);
}

/** How often an idle event stream sends a comment line, so proxies keep it open. */
const HEARTBEAT_MS = 15_000;

/** A server-sent event stream on one response. */
export class SseWriter {
  readonly #res: ServerResponse;
  #heartbeat: NodeJS.Timeout | null = null;

  constructor(res: ServerResponse) {
    this.#res = res;
  }

  /** Sends the headers (200, text/event-stream) once. */
  open(): void {
    if (this.#res.headersSent) return;
    this.#res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    });
    this.#res.flushHeaders();
    this.#heartbeat = setInterval(() => this.#res.write(': keep-alive\n\n'), HEARTBEAT_MS).unref();
    this.#res.once('close', () => this.#stopHeartbeat());
  }

  /** One event: `id:` (when given), `event:`, `data:` the JSON of `data` (one line: JSON escapes newlines). */
  event(event: string, data: unknown, id: number | null = null): void {
    const head = id === null ? '' : `id: ${id}\n`;
    this.#res.write(`${head}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  end(): void {
    this.#stopHeartbeat();
    this.#res.end();
  }

  #stopHeartbeat(): void {
    if (this.#heartbeat !== null) clearInterval(this.#heartbeat);
    this.#heartbeat = null;
  }
}

/**
 * Answers `res` with a stream's frames as server-sent events (headers at
 * once with `openNow`, else with the first frame). An error before the first frame is an ordinary JSON error response with its status;
 * one after is an `error` event, and the stream ends.
 */
export async function pipeSse(res: ServerResponse, frames: AsyncIterable<StreamFrame>, openNow = false): Promise<void> {
  const sse = new SseWriter(res);
  if (openNow) sse.open();
  try {
    for await (const f of frames) {
      sse.open();
      sse.event(f.event, f.data, f.seq);
    }
  } catch (err) {
    if (!res.headersSent) return sendError(res, err);
    const e = err as { code?: number; message?: string };
    sse.event('error', { error: { code: e.code ?? 500, message: e.message ?? String(err) } });
  }
  if (!res.headersSent) sse.open();
  sse.end();
}
