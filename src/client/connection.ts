/**
 * One open connection to the daemon: the socket, the framing, and the table
 * of requests in flight. It knows operations only by name; the typed methods,
 * reconnecting and retrying live in the client above it.
 *
 * Lifecycle (after nats.js): `open()` resolves once connected (and
 * authenticated on TCP); `closed()` resolves with the error that closed it,
 * or undefined, and never rejects; `close()` is immediate and idempotent;
 * `drain()` lets open requests finish first.
 */
import { createConnection, type Socket } from 'node:net';
import { AgentdError, isCode, Code } from '../shared/errors.ts';
import { decodeBody, encodeBody, encodeFrame, FLAG_LAST, FrameDecoder } from '../shared/codec.ts';
import { isPlainMap } from '../shared/args.ts';
import type { ConnectOptions } from './connect-options.ts';
import { ConnectionClosedError } from './errors.ts';
import { QueuedIterator } from './queued-iterator.ts';

export type Body = Record<string, unknown>;

/** A streaming request's replies, with the request id it was sent under (-1 until sent). */
export type ReplyStream = QueuedIterator<Body> & { id: number };

type Pending =
  | { kind: 'rr'; resolve(body: Body): void; reject(err: Error): void; stack: Error }
  | { kind: 'stream'; iter: QueuedIterator<Body>; discard: boolean };

const DEFAULT_CONNECT_TIMEOUT_MS = 5000;
const DEFAULT_MAX_BODY_BYTES = 256 * 1024 * 1024;

function wireError(body: Body): AgentdError | null {
  const e = body.error;
  if (!isPlainMap(e)) return null;
  const code = isCode(e.code) ? e.code : Code.Internal;
  return new AgentdError(code, typeof e.message === 'string' ? e.message : 'unknown error');
}

function describeAddress(opts: ConnectOptions): string {
  return opts.path ?? `${opts.host ?? '127.0.0.1'}:${opts.port ?? 6688}`;
}

/** Opens the socket, or fails with ConnectionClosedError (refused, absent, timed out). */
function openSocket(opts: ConnectOptions): Promise<Socket> {
  const timeoutMs = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  return new Promise<Socket>((resolve, reject) => {
    const s = opts.path !== undefined ? createConnection(opts.path) : createConnection({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 6688 });
    const timer = setTimeout(() => {
      s.destroy();
      reject(new ConnectionClosedError(`connect timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    s.once('connect', () => {
      clearTimeout(timer);
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', (err) => {
      clearTimeout(timer);
      reject(new ConnectionClosedError(`cannot connect to agentd at ${describeAddress(opts)}: ${err.message}`, { cause: err }));
    });
  });
}

export class Connection {
  readonly #socket: Socket;
  readonly #decoder: FrameDecoder;
  readonly #pending = new Map<number, Pending>();
  readonly #onRawFrame: ConnectOptions['onRawFrame'];
  #nextId = 1;
  #corked = false;
  #closedWith: Error | undefined = undefined;
  #isClosed = false;
  #draining = false;
  /** Resolves drain() once the last open request finished (or the connection closed). */
  #drained: (() => void) | null = null;
  readonly #closed: Promise<Error | undefined>;
  #resolveClosed!: (err: Error | undefined) => void;

  private constructor(socket: Socket, opts: ConnectOptions) {
    this.#socket = socket;
    this.#onRawFrame = opts.onRawFrame;
    this.#closed = new Promise((r) => (this.#resolveClosed = r));
    this.#decoder = new FrameDecoder(
      {
        onFrame: (id, flags, body) => this.#onFrame(id, flags, body),
        onOversize: (id, len) => this.#teardown(new ConnectionClosedError(`daemon sent a ${len}-byte body for request ${id}, above maxBodyBytes`)),
      },
      opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    );
    socket.on('data', (chunk: Buffer) => this.#decoder.push(chunk));
    socket.on('error', (err) => {
      this.#closedWith ??= err;
    });
    socket.on('close', () => this.#teardown(this.#closedWith));
  }

  /** Connects to the address in `opts` (already resolved) and authenticates when given a token. */
  static async open(opts: ConnectOptions): Promise<Connection> {
    const socket = await openSocket(opts);
    socket.setNoDelay(true);
    const conn = new Connection(socket, opts);
    if (opts.token !== undefined) {
      try {
        await conn.request('auth', { token: opts.token }, new Error('agentd request "auth"'));
      } catch (err) {
        conn.close();
        throw err;
      }
    }
    return conn;
  }

  closed(): Promise<Error | undefined> {
    return this.#closed;
  }

  get isClosed(): boolean {
    return this.#isClosed;
  }

  get pending(): number {
    return this.#pending.size;
  }

  close(): Promise<void> {
    this.#socket.destroy();
    return this.#closed.then(() => undefined);
  }

  async drain(): Promise<void> {
    this.#draining = true;
    if (this.#pending.size > 0 && !this.#isClosed) await new Promise<void>((resolve) => (this.#drained = resolve));
    await this.close();
  }

  request(op: string, args: Body, stack: Error): Promise<Body> {
    return new Promise<Body>((resolve, reject) => {
      const id = this.#send({ [op]: args });
      if (typeof id !== 'number') return reject(id);
      this.#pending.set(id, { kind: 'rr', resolve, reject, stack });
    });
  }

  /** Sends a streaming operation whose replies `iter` receives; returns its request id, or -1 if it could not be sent (`iter` then fails). */
  openStream(op: string, args: Body, iter: QueuedIterator<Body>): number {
    const sent = this.#send({ [op]: args });
    if (typeof sent !== 'number') {
      iter.fail(sent);
      return -1;
    }
    this.#pending.set(sent, { kind: 'stream', iter, discard: false });
    return sent;
  }

  /** Swallows the rest of stream `id` (its consumer left early) until its LAST frame. */
  discard(id: number): void {
    const p = this.#pending.get(id);
    if (p?.kind === 'stream') p.discard = true;
  }

  writeRaw(bytes: Uint8Array): void {
    this.#socket.write(bytes);
  }

  #allocId(): number {
    for (;;) {
      const id = this.#nextId;
      this.#nextId = (this.#nextId + 1) >>> 0;
      if (!this.#pending.has(id)) return id;
    }
  }

  #send(body: Body): number | Error {
    if (this.#isClosed) return new ConnectionClosedError('the connection is closed', { cause: this.#closedWith });
    if (this.#draining) return new ConnectionClosedError('the client is draining and takes no new requests');
    const id = this.#allocId();
    if (!this.#corked) {
      // Coalesce every request made in this tick into one write.
      this.#corked = true;
      this.#socket.cork();
      process.nextTick(() => {
        this.#corked = false;
        this.#socket.uncork();
      });
    }
    this.#socket.write(encodeFrame(id, 0, encodeBody(body)));
    return id;
  }

  #onFrame(id: number, flags: number, raw: Uint8Array): void {
    this.#onRawFrame?.(id, flags, raw);
    const p = this.#pending.get(id);
    if (p === undefined) return;
    const last = (flags & FLAG_LAST) !== 0;
    if (last) {
      this.#pending.delete(id);
      if (this.#pending.size === 0) this.#drained?.();
    }
    let body: Body;
    try {
      const v = decodeBody(raw);
      if (!isPlainMap(v)) throw new Error('reply body is not a map');
      body = v;
    } catch (err) {
      const e = new AgentdError(Code.Internal, `undecodable reply: ${(err as Error).message}`);
      if (p.kind === 'rr') p.reject(e);
      else p.iter.fail(e);
      return;
    }
    const err = wireError(body);
    if (p.kind === 'rr') {
      if (err !== null) {
        err.stack = `${err.stack ?? ''}\n    --- request made at ---\n${p.stack.stack ?? ''}`;
        p.reject(err);
      } else p.resolve(body);
      return;
    }
    if (p.discard) return;
    if (err !== null) return p.iter.fail(err);
    p.iter.push(body);
    if (last) p.iter.end();
  }

  #teardown(err: Error | undefined): void {
    if (this.#isClosed) return;
    this.#isClosed = true;
    this.#decoder.stop();
    this.#socket.destroy();
    const lost = new ConnectionClosedError('the connection to agentd closed', err === undefined ? undefined : { cause: err });
    for (const p of this.#pending.values()) {
      if (p.kind === 'rr') p.reject(lost);
      else if (!p.discard) p.iter.fail(lost);
    }
    this.#pending.clear();
    this.#drained?.();
    this.#resolveClosed(err);
  }
}
