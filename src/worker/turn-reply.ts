/**
 * How a turn answers its request: `stream` sends every event as a frame and
 * ends with `end`; `send` stays silent and answers once with `response` (or
 * an error: 499 when cancelled, 500 when the model failed).
 */
import { Code } from '../shared/errors.ts';
import { StopReason, type EndEvent } from '../shared/protocol.ts';
import type { TurnRequest } from '../shared/threads.ts';
import type { Outbox } from './outbox.ts';

export class TurnReply {
  readonly #outbox: Outbox;
  readonly #conn: number;
  readonly #req: number;
  readonly #streaming: boolean;

  constructor(outbox: Outbox, req: TurnRequest) {
    this.#outbox = outbox;
    this.#conn = req.conn;
    this.#req = req.req;
    this.#streaming = req.mode === 'stream';
  }

  start(agent: string): void {
    if (!this.#streaming) return;
    this.#outbox.started(this.#conn, this.#req);
    this.event('start', { agent });
  }

  /** Bound once per turn, handed to the agent loop as its emitter. */
  readonly event = (name: string, body: Record<string, unknown>): void => {
    if (this.#streaming) this.#outbox.frame(this.#conn, this.#req, false, { stream: { [name]: body } });
  };

  end(end: EndEvent, finalText: string): void {
    if (this.#streaming) {
      this.#outbox.frame(this.#conn, this.#req, true, { stream: { end } });
    } else if (end.stop_reason === StopReason.Cancelled) {
      this.error(Code.Cancelled, end.error || 'cancelled');
    } else if (end.stop_reason === StopReason.Error) {
      this.error(Code.Internal, end.error);
    } else {
      this.#outbox.frame(this.#conn, this.#req, true, {
        response: { agent: end.agent, content: finalText, model: end.model, usage: end.usage },
      });
    }
  }

  /** Refuses the request before it started (no `start` was sent). */
  error(code: number, message: string): void {
    this.#outbox.frame(this.#conn, this.#req, true, { error: { code, message } });
  }
}
