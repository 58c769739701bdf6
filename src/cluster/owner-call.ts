/**
 * One forwarded call at its owner (forward.ts): the request's pieces come
 * in on the call's control subject, with the entry node's acknowledgements
 * and cancel; the replies go out to the entry node's inbox in pieces, at
 * most a window of them unacknowledged, the rest waiting here.
 */
import { createInbox, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Logger } from '../shared/log.ts';
import { PieceJoiner, piecesOf, type Piece } from './chunks.ts';
import { decodeMessage, encodeMessage, type Message } from './messages.ts';

/** The owner's side of one forwarded call. */
export interface ForwardReply {
  /** Sends a reply (cut into pieces); false once pieces wait for the window (write more after `onDrain`'s callback). */
  write(reply: Uint8Array): boolean;
  /** Bytes written that wait for the window. */
  backlog(): number;
  /** Sends `end` once every reply written went out. */
  end(): void;
  /** Drops the replies that wait and sends `reply` past the window, then `end`: the entry node stopped taking them. */
  cut(reply: Uint8Array): void;
  /** Called once the entry node acknowledged pieces while writes were held back. */
  onDrain(cb: () => void): void;
  /** Called if the entry node cancels the call (its client left). */
  onCancel(cb: () => void): void;
}

export interface OwnerCallHooks {
  /** The request is whole. */
  run(body: Uint8Array): void;
  /** The call is over on both sides. */
  forget(): void;
  log: Logger;
}

/** One call at its owner: the request's pieces in, the replies' pieces out under the window. */
export class OwnerCall implements ForwardReply {
  readonly control = createInbox();
  readonly #nc: NatsConnection;
  readonly #inbox: string;
  readonly #window: number;
  readonly #hooks: OwnerCallHooks;
  readonly #sub: Subscription;
  readonly #request = new PieceJoiner();
  /** Pieces written that wait for the window, and their bytes. */
  readonly #queue: Piece[] = [];
  #queued = 0;
  #sent = 0;
  #acked = 0;
  /** A write answered false: `drain` is due once the pieces went out. */
  #held = false;
  #ending = false;
  /** `end` was sent, or the call was cancelled. */
  #finished = false;
  #drain: (() => void) | null = null;
  #cancel: (() => void) | null = null;

  constructor(nc: NatsConnection, request: Message<'call'>, hooks: OwnerCallHooks) {
    this.#nc = nc;
    this.#inbox = request.inbox;
    this.#window = Math.max(1, request.window);
    this.#hooks = hooks;
    this.#sub = nc.subscribe(this.control, { callback: (err, m) => (err === null ? this.#onControl(m.data) : undefined) });
  }

  /** A piece of the request: the call runs once it is whole. */
  take(piece: Piece): void {
    if (this.#finished) return;
    const body = this.#request.push(piece);
    if (body !== null) this.#hooks.run(body);
  }

  #onControl(data: Uint8Array): void {
    try {
      const m = decodeMessage(data, 'ack', 'cancel', 'body');
      if (m.t === 'cancel') this.cancel();
      else if (m.t === 'body') this.take(m);
      else this.#onAck(m.seq);
    } catch (err) {
      this.#hooks.log.warn({ err: (err as Error).message }, 'cluster: a malformed forwarding message was skipped');
    }
  }

  #onAck(seq: number): void {
    if (seq <= this.#acked) return;
    this.#acked = seq;
    this.#flush();
    if (this.#finished) {
      if (this.#acked === this.#sent) this.#close();
    } else if (this.#held && this.#queue.length === 0 && this.#sent - this.#acked < this.#window) {
      this.#held = false;
      this.#drain?.();
    }
  }

  write(reply: Uint8Array): boolean {
    if (this.#finished || this.#ending) return false;
    for (const piece of piecesOf(reply)) this.#queue.push(piece);
    this.#queued += reply.length;
    this.#flush();
    this.#held = this.#queue.length > 0 || this.#sent - this.#acked >= this.#window;
    return !this.#held;
  }

  backlog(): number {
    return this.#queued;
  }

  end(): void {
    if (this.#finished || this.#ending) return;
    this.#ending = true;
    this.#flush();
  }

  cut(reply: Uint8Array): void {
    if (this.#finished || this.#ending) return;
    this.#queue.length = 0;
    this.#queued = 0;
    for (const piece of piecesOf(reply)) this.#send(piece);
    this.end();
  }

  onDrain(cb: () => void): void {
    this.#drain = cb;
  }

  onCancel(cb: () => void): void {
    this.#cancel = cb;
  }

  /** The entry node cancelled the call, or was lost: nothing more is sent. */
  cancel(): void {
    const wasOpen = !this.#finished;
    this.#finished = true;
    this.#queue.length = 0;
    this.#queued = 0;
    this.#close();
    if (wasOpen) this.#cancel?.();
  }

  /** Sends what the window lets through; `end` once nothing waits. */
  #flush(): void {
    while (this.#queue.length > 0 && this.#sent - this.#acked < this.#window) {
      const piece = this.#queue.shift()!;
      this.#queued -= piece.bytes.length;
      this.#send(piece);
    }
    if (this.#queue.length > 0 || !this.#ending || this.#finished) return;
    this.#finished = true;
    this.#nc.publish(this.#inbox, encodeMessage({ t: 'end', seq: this.#sent }));
    if (this.#acked === this.#sent) this.#close();
  }

  #send(piece: Piece): void {
    this.#nc.publish(this.#inbox, encodeMessage({ t: 'frame', seq: ++this.#sent, part: piece.part, last: piece.last, bytes: piece.bytes }));
  }

  #close(): void {
    if (this.#sub.isClosed()) return;
    this.#sub.unsubscribe();
    this.#hooks.forget();
  }
}
