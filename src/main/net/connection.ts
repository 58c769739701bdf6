/**
 * One client connection: its socket, frame decoder and flow control.
 * Handlers are attached once; 'close' is the single teardown path.
 */
import type { Socket } from 'node:net';
import { decodeBody, FLAG_LAST, FrameDecoder, frameOf, type FrameSink } from '../../shared/codec.ts';
import { errorBody, replyBody, type FrameBody } from '../../shared/wire/frames.ts';
import { Code } from '../../shared/errors.ts';
import { isPlainMap } from '../../shared/args.ts';
import { assertPortableMsgpack } from '../../shared/portable-msgpack.ts';
import { decodeRequest } from './request-body.ts';
import { sameSecret } from './token.ts';
import { ADMIN, type Authenticate, type Principal } from '../auth/principal.ts';
import { connectionClosed } from '../metrics/main-meter.ts';

/** Where a connection's requests go, and what it tells when it closes. */
export interface ConnectionHost {
  dispatch(conn: Connection, req: number, body: Record<string, unknown>): void;
  /** The connection is gone; `cancelTurns` is false only after a 413 (its turns run on). */
  closed(conn: Connection, cancelTurns: boolean): void;
}

export interface ConnectionLimits {
  maxBodyBytes: number;
  /** Array and map entries a body may announce in total (refused with 400 beyond). */
  maxElements: number;
  highWaterBytes: number;
  hardLimitBytes: number;
  /** A token the first request must present (`auth`), or null. */
  token: string | null;
  /** Resolves a token other than `token` (a scoped one, kept in the store); absent: only `token` is accepted. */
  authenticate?: Authenticate;
  /** An unauthenticated connection is closed after this long. */
  authTimeoutMs: number;
  /** Told when a connection has authenticated, or needed no token: it keeps its slot (connection-limit.ts). */
  onAuthenticated?: (socket: Socket) => void;
}

type State = 'open' | 'closing' | 'closed';

const CLOSE_LINGER_MS = 2_000;
/** Written to learn when the writes before it completed (`drained`). */
const EMPTY = new Uint8Array(0);
/**
 * Past the hard limit a connection is cut only if its peer read nothing for
 * this long: a reader that keeps reading is never cut, however far behind a
 * fast producer leaves it (what it is owed is bounded by its requests).
 */
export const STALLED_READER_MS = 3_000;
/**
 * Before authentication a connection may send one frame, `auth`, this big at
 * most; a larger header is refused before any of its body is read.
 */
export const PRE_AUTH_MAX_BODY_BYTES = 1024;
/** Frames a client may pipeline behind its `auth` while a scoped token is looked up; more is refused. */
const MAX_HELD_FRAMES = 64;
const AUTH_REQUIRED = `authentication required: the first request must be {"auth": {"token": "..."}} of at most ${PRE_AUTH_MAX_BODY_BYTES} bytes`;

export class Connection implements FrameSink {
  readonly id: number;
  readonly transport: 'unix' | 'tcp';
  readonly #socket: Socket;
  readonly #decoder: FrameDecoder;
  readonly #host: ConnectionHost;
  readonly #limits: ConnectionLimits;
  #state: State = 'open';
  #authed: boolean;
  /** What this connection may do: the admin, until a scoped token says less. */
  #principal: Principal = ADMIN;
  /** While a scoped token is looked up: the frames that came behind `auth`, held in order; null otherwise. */
  #held: Array<[number, Buffer]> | null = null;
  #paused = false;
  #cancelTurnsOnClose = true;
  #authTimer: NodeJS.Timeout | null = null;
  /** Watches for a peer that reads nothing: past the hard limit, and (observers) past the observer backlog bound. */
  readonly #stallTimers: { hard: NodeJS.Timeout | null; slow: NodeJS.Timeout | null } = { hard: null, slow: null };
  /** True while one read's requests are handled (a paused socket is not read). */
  #reading = false;
  /** Replies collected while one read is handled; null outside a read. */
  #batch: Buffer[] | null = null;
  #batchBytes = 0;

  constructor(id: number, socket: Socket, transport: 'unix' | 'tcp', host: ConnectionHost, limits: ConnectionLimits) {
    this.id = id;
    this.transport = transport;
    this.#socket = socket;
    this.#host = host;
    this.#limits = limits;
    this.#authed = transport !== 'tcp' || limits.token === null;
    this.#decoder = new FrameDecoder(this, this.#authed ? limits.maxBodyBytes : PRE_AUTH_MAX_BODY_BYTES);
    if (!this.#authed) this.#authTimer = setTimeout(this.#onAuthTimeout, limits.authTimeoutMs).unref();
    else limits.onAuthenticated?.(socket);
    socket.on('data', this.#onData);
    socket.on('drain', this.#onDrain);
    // 'error' only records: 'close' always follows and does the cleanup.
    socket.on('error', () => {});
    socket.on('close', this.#onClose);
  }

  /** What its token lets this connection do (dispatch checks each request against it). */
  get principal(): Principal {
    return this.#principal;
  }

  get open(): boolean {
    return this.#state === 'open';
  }

  /** Bytes read and written so far (the metrics). */
  traffic(): { in: number; out: number } {
    return { in: this.#socket.bytesRead, out: this.#socket.bytesWritten };
  }

  readonly #onData = (chunk: Buffer): void => {
    // Replies produced while handling this read leave in one buffer, one write:
    // cheaper than a writev of many small frames (measured: writev was the
    // largest item of main's profile under pipelined ping).
    this.#batch = [];
    this.#reading = true;
    try {
      this.#decoder.push(chunk);
    } finally {
      this.#flushBatch();
      this.#reading = false;
    }
  };

  #flushBatch(): void {
    const out = this.#batch;
    this.#batch = null;
    this.#batchBytes = 0;
    if (out === null || out.length === 0) return;
    this.write(out.length === 1 ? out[0]! : Buffer.concat(out));
  }

  onFrame(id: number, _flags: number, body: Uint8Array): void {
    if (this.#state !== 'open') return;
    if (this.#held !== null) return this.#hold(id, body);
    if (!this.#authed) return this.#authenticate(id, body);
    let value: unknown;
    try {
      if (body.length === 0) throw new Error('empty body');
      assertPortableMsgpack(body, this.#limits.maxElements);
      value = decodeRequest(body);
    } catch (err) {
      return this.reply(id, errorBody({ code: Code.BadRequest, message: `body is not valid MessagePack: ${(err as Error).message}` }));
    }
    if (!isPlainMap(value)) {
      return this.reply(id, errorBody({ code: Code.BadRequest, message: 'body must be a map with exactly one operation' }));
    }
    this.#host.dispatch(this, id, value);
  }

  onOversize(id: number, length: number): void {
    if (!this.#authed) return this.#refuseAuth(id, AUTH_REQUIRED);
    this.reply(id, errorBody({ code: Code.TooLarge, message: `frame body of ${length} bytes exceeds the limit of ${this.#limits.maxBodyBytes} bytes` }));
    // Close without reading the body; turns this connection started run on (PROTOCOL §1).
    this.#cancelTurnsOnClose = false;
    this.#closeGracefully();
  }

  /** The first frame of an unauthenticated connection: `auth` with the right token, or 401 and close. */
  #authenticate(id: number, body: Uint8Array): void {
    let value: unknown;
    try {
      assertPortableMsgpack(body);
      value = decodeBody(body);
    } catch {
      return this.#refuseAuth(id, AUTH_REQUIRED);
    }
    const auth = isPlainMap(value) && Object.keys(value).length === 1 ? value.auth : undefined;
    if (!isPlainMap(auth) || typeof auth.token !== 'string') return this.#refuseAuth(id, AUTH_REQUIRED);
    if (sameSecret(auth.token, this.#limits.token!)) return this.#accept(id, ADMIN);
    const lookup = this.#limits.authenticate;
    if (lookup === undefined) return this.#refuseAuth(id, 'wrong token');
    // A scoped token is looked up in the store: nothing behind it is read or served until that is done.
    this.#held = [];
    this.#socket.pause();
    // The socket is paused: only the rest of this read is decoded, so the frames behind auth may be as large as after it.
    this.#decoder.setMaxBody(this.#limits.maxBodyBytes);
    lookup(auth.token).then(
      (principal) => this.#looked(id, principal),
      (err: unknown) => this.#looked(id, err instanceof Error ? err : new Error(String(err))),
    );
  }

  /** A frame that came while the token was looked up: kept (a copy: the chunk is not ours) for after. */
  #hold(id: number, body: Uint8Array): void {
    if (this.#held!.length >= MAX_HELD_FRAMES) {
      this.#held = null;
      return this.#refuseAuth(id, `at most ${MAX_HELD_FRAMES} requests may wait behind "auth"; wait for its answer`);
    }
    this.#held!.push([id, Buffer.from(body)]);
  }

  #looked(id: number, result: Principal | null | Error): void {
    const held = this.#held ?? [];
    this.#held = null;
    if (this.#state !== 'open') return;
    if (result === null) return this.#refuseAuth(id, 'wrong token');
    if (result instanceof Error) return this.#refuseAuth(id, `the token could not be checked: ${result.message}`, Code.Internal);
    this.#batch = [];
    try {
      this.#accept(id, result);
      for (const [heldId, body] of held) this.onFrame(heldId, 0, body);
    } finally {
      this.#flushBatch();
    }
    if (!this.#paused && this.#state === 'open') this.#socket.resume();
  }

  #accept(id: number, principal: Principal): void {
    this.#principal = principal;
    this.#authed = true;
    this.#limits.onAuthenticated?.(this.#socket);
    this.#clearAuthTimer();
    this.#decoder.setMaxBody(this.#limits.maxBodyBytes);
    this.reply(id, replyBody('auth', {}));
  }

  #refuseAuth(id: number, message: string, code: Code = Code.Unauthorized): void {
    this.reply(id, errorBody({ code, message }));
    this.#closeGracefully();
    this.#socket.resume(); // paused while a token was looked up: what the peer still sends is read and dropped
  }

  readonly #onAuthTimeout = (): void => {
    this.#authTimer = null;
    if (this.#authed || this.#state !== 'open') return;
    this.#held = null;
    this.#refuseAuth(0, `not authenticated within ${this.#limits.authTimeoutMs} ms`);
  };

  #clearAuthTimer(): void {
    if (this.#authTimer !== null) clearTimeout(this.#authTimer);
    this.#authTimer = null;
  }

  /** Writes a reply that main encodes itself (always the request's LAST frame). */
  reply(id: number, value: FrameBody): void {
    const frame = frameOf(id, FLAG_LAST, value);
    if (this.#batch === null) return this.write(frame);
    this.#batch.push(frame);
    this.#batchBytes += frame.length;
    // One read of small pipelined requests can ask for huge replies (get_agent
    // of a large agent, thousands of times): flush early so flow control and
    // the hard limit see them, instead of holding them all until the read ends.
    if (this.#batchBytes >= this.#limits.highWaterBytes) {
      this.#flushBatch();
      this.#batch = [];
    }
  }

  /**
   * Writes ready-encoded frames, then applies flow control to this connection
   * only. `written` runs once the socket is done with their bytes: sent, the
   * socket destroyed, or at once when the connection is ending or closed
   * (the frames are dropped then).
   */
  write(frames: Uint8Array, written?: () => void): void {
    // After end(), Node answers a write by destroying the socket, losing what is still queued (a 413).
    if (this.#state !== 'open') return written?.();
    this.#socket.write(frames, written && ((): void => written()));
    this.#flowControl();
  }

  /** Writes pieces as one run of output (one writev); the socket keeps references, so a piece may be shared with other connections. */
  writeChunks(chunks: readonly Uint8Array[]): void {
    if (this.#state !== 'open') return;
    this.#socket.cork();
    for (const c of chunks) this.#socket.write(c);
    this.#socket.uncork();
    this.#flowControl();
  }

  /** Flow control after a write: pause reading past the high-water mark; past the hard limit, cut a peer that reads nothing. */
  #flowControl(): void {
    const queued = this.#socket.writableLength;
    if (queued > this.#limits.hardLimitBytes && this.#reading) {
      // A paused socket is not read, so this is one read's own replies, unread,
      // past the hard limit: stop paying for it and for the rest of that read.
      this.#decoder.stop();
      this.#socket.destroy();
      return;
    }
    if (queued > this.#limits.highWaterBytes && !this.#paused) {
      this.#paused = true;
      this.#socket.pause();
    }
    if (queued > this.#limits.hardLimitBytes) this.#watchForStall('hard', this.#limits.hardLimitBytes, STALLED_READER_MS);
  }

  /** Its agent events are past the observer backlog bound: a peer that reads nothing for `stallMs` is cut (a slow consumer). */
  slowConsumer(backlogBytes: number, stallMs: number): void {
    if (this.#state === 'open') this.#watchForStall('slow', backlogBytes, stallMs);
  }

  /**
   * How far the peer has read, as two counters that only grow while it reads:
   * the bytes of writes completed, and how much of the write in flight the
   * kernel has taken. A write completes only once whole, and one write may
   * hold megabytes (a writev of every frame queued behind it), so a reader
   * that keeps reading can complete none for many seconds; libuv's queue
   * size (`writeQueueSize`, kept current by Node's stream handle) shrinks as
   * it goes.
   */
  #readProgress(): { completed: number; inFlightLeft: number } {
    const handle = (this.#socket as unknown as { _handle?: { writeQueueSize?: number } | null })._handle;
    return { completed: this.#socket.bytesWritten - this.#socket.writableLength, inFlightLeft: handle?.writeQueueSize ?? 0 };
  }

  /**
   * Over `bound` unsent bytes (the hard limit, or the observer backlog bound):
   * checks every `ms` whether the peer took anything; a reader this far
   * behind that reads nothing is gone in all but name, so stop paying for it.
   */
  #watchForStall(which: 'hard' | 'slow', bound: number, ms: number): void {
    if (this.#stallTimers[which] !== null) return;
    const atStart = this.#readProgress();
    this.#stallTimers[which] = setTimeout(() => {
      this.#stallTimers[which] = null;
      if (this.#state === 'closed' || this.#socket.writableLength <= bound) return;
      const now = this.#readProgress();
      const tookSome = now.completed > atStart.completed || now.inFlightLeft < atStart.inFlightLeft;
      if (tookSome) this.#watchForStall(which, bound, ms);
      else this.#socket.destroy();
    }, ms).unref();
  }

  /** Bytes queued on the socket and not yet sent (observers drop events past a bound). */
  backlog(): number {
    return this.#socket.writableLength;
  }

  /**
   * Resolves once every byte written so far has gone out (at once when none
   * waits): an empty write completes only after all the writes before it.
   */
  drained(): Promise<void> {
    if (this.#state !== 'open' || this.#socket.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => this.#socket.write(EMPTY, () => resolve()));
  }

  #clearStallTimers(): void {
    for (const which of ['hard', 'slow'] as const) {
      const t = this.#stallTimers[which];
      if (t !== null) clearTimeout(t);
      this.#stallTimers[which] = null;
    }
  }

  readonly #onDrain = (): void => {
    this.#clearStallTimers();
    if (this.#paused) {
      this.#paused = false;
      this.#socket.resume();
    }
  };

  #closeGracefully(): void {
    if (this.#state !== 'open') return;
    this.#flushBatch(); // the last reply (a 413, a 401) goes out before the end
    this.#state = 'closing';
    this.#decoder.stop();
    this.#socket.end();
    // Keep reading (and discarding) so the peer gets our last frame rather than
    // a reset, but not forever: a peer that never closes is cut off.
    setTimeout(() => this.#socket.destroy(), CLOSE_LINGER_MS).unref();
  }

  /** Ends the connection after what is queued has been written. */
  end(): void {
    this.#closeGracefully();
  }

  destroy(): void {
    this.#socket.destroy();
  }

  /** Ends the connection and resolves once it closed, cutting it after `ms`. */
  endAndWait(ms: number): Promise<void> {
    if (this.#state === 'closed') return Promise.resolve();
    return new Promise((resolve) => {
      this.#socket.once('close', () => resolve());
      this.#closeGracefully();
      setTimeout(() => this.#socket.destroy(), ms).unref();
    });
  }

  readonly #onClose = (): void => {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.#clearAuthTimer();
    this.#clearStallTimers();
    this.#decoder.stop();
    connectionClosed(this.transport, this.#socket.bytesRead, this.#socket.bytesWritten);
    this.#host.closed(this, this.#cancelTurnsOnClose);
  };
}
