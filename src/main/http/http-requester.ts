/**
 * The bridge between an HTTP request and dispatch: a Requester whose frames
 * (main's replies as values, a shard's or an observer's as encoded frames)
 * are decoded and handed to the call that sent the request id. One
 * requester per HTTP request, with an id from the daemon's connection id
 * space, so a shard routes its frames here as it would to a socket.
 */
import { decodeBody, FLAG_LAST, FrameDecoder, type FrameSink } from '../../shared/codec.ts';
import { AgentdError, Code, isCode } from '../../shared/errors.ts';
import type { FrameBody } from '../../shared/wire/frames.ts';
import type { Requester } from '../ops/op-table.ts';
import type { Principal } from '../auth/principal.ts';
import type { Dispatch } from '../dispatch.ts';

/** One frame answering a request: its decoded body, and whether it is the request's last. */
export type FrameHandler = (body: Record<string, unknown>, last: boolean) => void;

/** What the daemon lends the HTTP door: ids from its id space, frame routing, and the close of a requester. */
export interface RequesterHost {
  /** A fresh id, unique among live connections and requesters. */
  nextId(): number;
  /** Shard frames for `requester.id` go to it from now on. */
  register(requester: HttpRequester): void;
  /** As a closed socket: `cancelTurns` cancels its non-detached turns, ends its observers and searches. */
  closed(requester: HttpRequester, cancelTurns: boolean): void;
}

/** Where a requester's output goes for flow control: the HTTP response's unsent bytes. */
export interface Backlog {
  readonly writableLength: number;
  readonly writableHighWaterMark: number;
  once(event: 'drain' | 'close', listener: () => void): unknown;
  destroy(): unknown;
}

export class HttpRequester implements Requester, FrameSink {
  readonly id: number;
  readonly principal: Principal;
  readonly #dispatch: Dispatch;
  readonly #handlers = new Map<number, FrameHandler>();
  readonly #decoder = new FrameDecoder(this, Number.MAX_SAFE_INTEGER);
  #nextReq = 1;
  #closed = false;
  #output: Backlog | null = null;
  readonly #onClose: (() => void)[] = [];

  constructor(id: number, principal: Principal, dispatch: Dispatch) {
    this.id = id;
    this.principal = principal;
    this.#dispatch = dispatch;
  }

  /** The response a stream writes to: shard frames wait for it to drain past its high-water mark. */
  set output(out: Backlog | null) {
    this.#output = out;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Cuts the response (its token was revoked): as a closed socket, its non-detached turns are cancelled. */
  end(): void {
    this.#output?.destroy();
  }

  /** Sends one operation; `onFrame` gets every frame answering it, the last with `last` set. Returns the request id. */
  send(op: string, args: Record<string, unknown>, onFrame: FrameHandler): number {
    const req = this.#nextReq++;
    this.#handlers.set(req, onFrame);
    this.#dispatch(this, req, { [op]: args });
    return req;
  }

  /** A request-response operation: its reply value (the variant's value), or the error it answered, thrown. */
  call(op: string, args: Record<string, unknown>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      let settled = false;
      // Built only when needed: an error's stack costs more than the rest of a small request.
      this.onClose(() => settled || reject(new AgentdError(Code.Cancelled, 'the client closed the request')));
      this.send(op, args, (body, last) => {
        if (!last) return;
        settled = true;
        const error = errorOf(body);
        if (error !== null) reject(error);
        else resolve(Object.values(body)[0]);
      });
    });
  }

  reply(req: number, value: FrameBody): void {
    this.#deliver(req, value as unknown as Record<string, unknown>, true);
  }

  write(frames: Uint8Array, written?: () => void): void {
    if (!this.#closed) this.#decoder.push(Buffer.from(frames.buffer, frames.byteOffset, frames.byteLength));
    const out = this.#output;
    if (written === undefined) return;
    if (out === null || this.#closed || out.writableLength <= out.writableHighWaterMark) return written();
    // A slow reader: the shard's bytes stay held (and its budget spent) until the response drains.
    let done = false;
    const once = (): void => {
      if (!done) written();
      done = true;
    };
    out.once('drain', once);
    out.once('close', once);
  }

  writeChunks(chunks: readonly Uint8Array[]): void {
    for (const c of chunks) this.write(c);
  }

  backlog(): number {
    return this.#output?.writableLength ?? 0;
  }

  /** Resolves once the response has no unsent bytes (at once when none wait, or it closed). */
  drained(): Promise<void> {
    const out = this.#output;
    if (out === null || this.#closed || out.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => {
      out.once('drain', () => resolve());
      out.once('close', () => resolve());
    });
  }

  onFrame(req: number, flags: number, body: Uint8Array): void {
    let value: unknown;
    try {
      value = decodeBody(body);
    } catch (err) {
      value = { error: { code: Code.Internal, message: `a reply frame could not be decoded: ${(err as Error).message}` } };
    }
    this.#deliver(req, value as Record<string, unknown>, (flags & FLAG_LAST) !== 0);
  }

  onOversize(): void {
    // Never: the limit is the largest safe integer.
  }

  #deliver(req: number, body: Record<string, unknown>, last: boolean): void {
    const handler = this.#handlers.get(req);
    if (handler === undefined) return;
    if (last) this.#handlers.delete(req);
    handler(body, last);
  }

  /** How many requests still wait for their last frame. */
  get open(): number {
    return this.#handlers.size;
  }

  /** Runs `fn` once it closes (at once if it has). */
  onClose(fn: () => void): void {
    if (this.#closed) fn();
    else this.#onClose.push(fn);
  }

  /** Marks it closed; frames that still come are dropped, and whoever waits on it is woken. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#decoder.stop();
    this.#handlers.clear();
    for (const fn of this.#onClose.splice(0)) fn();
  }
}

/** The error an `{"error": {code, message}}` body carries, or null for any other body. */
export function errorOf(body: Record<string, unknown>): AgentdError | null {
  const e = body.error as { code?: unknown; message?: unknown } | undefined;
  if (e === undefined || e === null || typeof e !== 'object') return null;
  const code = isCode(e.code) ? e.code : Code.Internal;
  return new AgentdError(code, typeof e.message === 'string' ? e.message : 'unknown error');
}
