/**
 * A call another node forwarded here, as the local dispatch and the shards
 * see it: a connection whose frames go back to the entry node.
 */
import { FLAG_LAST, frameOf, HEADER_BYTES } from '../shared/codec.ts';
import { FRAME_FLAGS_OFFSET } from '../shared/byte-layouts.ts';
import { Code } from '../shared/errors.ts';
import type { Requester } from '../main/dispatch.ts';
import type { ForwardReply } from './owner-call.ts';

/**
 * The owner's stand-in for the entry node's client connection: takes the
 * frames the shards (and dispatch) write for the call, and sends them to
 * the entry node; ends the call after the frame flagged last. Past
 * `hardLimit` bytes waiting for the call's window, the entry node is taken
 * for gone and the call is cut.
 */
export class ForwardedRequest implements Requester {
  readonly id: number;
  readonly #req: number;
  readonly #reply: ForwardReply;
  readonly #hardLimit: number;
  readonly #forget: () => void;
  readonly #cancelTurns: () => void;
  #over = false;

  constructor(id: number, req: number, reply: ForwardReply, hardLimit: number, forget: () => void, cancelTurns: () => void) {
    this.id = id;
    this.#req = req;
    this.#reply = reply;
    this.#hardLimit = hardLimit;
    this.#forget = forget;
    this.#cancelTurns = cancelTurns;
    reply.onCancel(() => this.#cancel());
  }

  reply(req: number, value: unknown): void {
    this.write(frameOf(req, FLAG_LAST, value));
  }

  write(frames: Uint8Array): void {
    if (this.#over) return;
    this.#reply.write(frames);
    if (this.#reply.backlog() > this.#hardLimit) {
      // The entry node stopped taking frames: cut the call, telling it why.
      this.#cancel();
      this.#reply.cut(frameOf(this.#req, FLAG_LAST, { error: { code: Code.Internal, message: `the forwarded reply was cut: over ${this.#hardLimit} bytes waited for the entry node to take them` } }));
      return;
    }
    if (!hasLastFrame(frames)) return;
    // The last frame was written: the call ends once what waits went out.
    this.#over = true;
    this.#reply.end();
    this.#forget();
  }

  backlog(): number {
    return this.#reply.backlog();
  }

  /** The entry node left (or stopped reading): the call's turns are cancelled and nothing more is sent. */
  #cancel(): void {
    if (this.#over) return;
    this.#over = true;
    this.#forget();
    this.#cancelTurns();
  }
}

/** Whether ready-encoded frames (one or more, whole) include one flagged last. */
export function hasLastFrame(frames: Uint8Array): boolean {
  const view = new DataView(frames.buffer, frames.byteOffset, frames.byteLength);
  for (let at = 0; at + HEADER_BYTES <= frames.length; at += HEADER_BYTES + view.getUint32(at)) {
    if ((frames[at + FRAME_FLAGS_OFFSET]! & FLAG_LAST) !== 0) return true;
  }
  return false;
}
