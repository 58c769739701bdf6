/**
 * The agentd client: one connection, any number of requests in flight.
 *
 *   const c = await AgentdClient.connect({ path: '/home/me/.agentd/run/agentd.sock' });
 *   for await (const ev of c.stream('assistant', 'hello')) if (ev.type === 'chunk') process.stdout.write(ev.content);
 *   await c.close();
 *
 * Lifecycle (after nats.js): `connect()` resolves once open (and
 * authenticated on TCP); `closed()` resolves with the error that closed it,
 * or undefined, and never rejects; `close()` is immediate and idempotent;
 * `drain()` lets open requests finish first.
 */
import { createConnection, type Socket } from 'node:net';
import { AgentdError, isCode, Code } from '../shared/errors.ts';
import { decodeBody, encodeBody, encodeFrame, FLAG_LAST, FrameDecoder } from '../shared/codec.ts';
import { isPlainMap } from '../shared/args.ts';
import type { EndEvent, OnBusy, ToolChoice, Usage } from '../shared/protocol.ts';
import { ConnectionClosedError } from './errors.ts';
import { QueuedIterator } from './queued-iterator.ts';

export { AgentdError, Code, ConnectionClosedError };
export { CONNECTION_CLOSED } from './errors.ts';

export interface ConnectOptions {
  /** Unix socket path. */
  path?: string;
  host?: string;
  port?: number;
  /** Sent as `auth` first on TCP. */
  token?: string;
  /** Default 5000. */
  connectTimeoutMs?: number;
  /** Largest reply body accepted, in bytes; default 256 MiB. */
  maxBodyBytes?: number;
  /** Sees every frame's raw body before it is decoded (for protocol tests and debugging). */
  onRawFrame?: (id: number, flags: number, body: Uint8Array) => void;
}

export type Body = Record<string, unknown>;

/** A streamed turn event: the event name as `type`, plus its fields. */
export type StreamEvent =
  | { type: 'start'; agent: string }
  | { type: 'text_start' | 'text_end' | 'thinking_start' | 'thinking_end'; agent: string }
  | { type: 'chunk' | 'thinking'; content: string }
  | { type: 'tool_start'; calls: { id: string; name: string; arguments: string }[] }
  | { type: 'tool_result'; call_id: string; output: string; duration_ms: number; is_error: boolean }
  | { type: 'tools_complete' }
  | { type: 'context_usage'; usage: Usage }
  | ({ type: 'end' } & EndEvent);

export interface TurnOptions {
  sender?: string;
  guest?: string;
  tool_choice?: ToolChoice;
  on_busy?: OnBusy;
  ephemeral?: boolean;
  correlation_id?: number;
  /** Names the turn so a retry is replayed, not run twice (PROTOCOL §4.1, Retries). */
  turn_id?: string;
}

/** One event of the agent event stream (`subscribe_events`). */
export interface AgentEvent {
  agent: string;
  sender: string;
  kind: string;
  content: string;
  timestamp: string;
  tool_calls?: { id: string; name: string; arguments: string }[];
  tool_output?: string;
  tool_is_error?: boolean;
  ephemeral: boolean;
  correlation_id?: number;
}

export interface SubscriptionInfo {
  id: number;
  source: string;
  target_agent: string;
  once: boolean;
}

export interface SendResponse {
  agent: string;
  content: string;
  model: string;
  usage: Usage;
}

type Pending =
  | { kind: 'rr'; resolve(body: Body): void; reject(err: Error): void; stack: Error }
  | { kind: 'stream'; iter: QueuedIterator<Body>; discard: boolean };

function wireError(body: Body): AgentdError | null {
  const e = body.error;
  if (!isPlainMap(e)) return null;
  const code = isCode(e.code) ? e.code : Code.Internal;
  return new AgentdError(code, typeof e.message === 'string' ? e.message : 'unknown error');
}

export class AgentdClient {
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
      opts.maxBodyBytes ?? 256 * 1024 * 1024,
    );
    socket.on('data', (chunk: Buffer) => this.#decoder.push(chunk));
    socket.on('error', (err) => {
      this.#closedWith ??= err;
    });
    socket.on('close', () => this.#teardown(this.#closedWith));
  }

  static async connect(opts: ConnectOptions): Promise<AgentdClient> {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = opts.path !== undefined ? createConnection(opts.path) : createConnection({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 6688 });
      const timer = setTimeout(() => {
        s.destroy();
        reject(new ConnectionClosedError(`connect timed out after ${opts.connectTimeoutMs ?? 5000} ms`));
      }, opts.connectTimeoutMs ?? 5000);
      s.once('connect', () => {
        clearTimeout(timer);
        s.removeAllListeners('error');
        resolve(s);
      });
      s.once('error', (err) => {
        clearTimeout(timer);
        reject(new ConnectionClosedError(`cannot connect to agentd at ${opts.path ?? `${opts.host ?? '127.0.0.1'}:${opts.port ?? 6688}`}: ${err.message}`, { cause: err }));
      });
    });
    socket.setNoDelay(true);
    const client = new AgentdClient(socket, opts);
    if (opts.token !== undefined) {
      try {
        await client.request('auth', { token: opts.token });
      } catch (err) {
        client.close();
        throw err;
      }
    }
    return client;
  }

  /** Resolves with the error that closed the connection, or undefined; never rejects. */
  closed(): Promise<Error | undefined> {
    return this.#closed;
  }

  get isClosed(): boolean {
    return this.#isClosed;
  }

  /** Requests sent and not yet finished. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Closes now: open requests fail with ConnectionClosedError. Idempotent. */
  close(): Promise<void> {
    this.#socket.destroy();
    return this.#closed.then(() => undefined);
  }

  /** Refuses new requests, waits for open ones to finish, then closes. */
  async drain(): Promise<void> {
    this.#draining = true;
    if (this.#pending.size > 0 && !this.#isClosed) await new Promise<void>((resolve) => (this.#drained = resolve));
    await this.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Sends one request-response operation; resolves with the reply body (a one-key map). */
  request(op: string, args: Body = {}): Promise<Body> {
    const stack = new Error(`agentd request "${op}"`); // made now, so a failure names the caller
    return new Promise<Body>((resolve, reject) => {
      const id = this.#send({ [op]: args });
      if (typeof id !== 'number') return reject(id);
      this.#pending.set(id, { kind: 'rr', resolve, reject, stack });
    });
  }

  /** Sends a streaming operation; iterates its reply bodies until LAST. An `error` reply is thrown. */
  openStream(op: string, args: Body = {}, onBreak?: (id: number) => void): QueuedIterator<Body> & { id: number } {
    let id = -1;
    const iter = new QueuedIterator<Body>(() => {
      const p = this.#pending.get(id);
      if (p?.kind === 'stream') p.discard = true; // keep swallowing frames until LAST
      onBreak?.(id);
    }) as QueuedIterator<Body> & { id: number };
    const sent = this.#send({ [op]: args });
    if (typeof sent !== 'number') {
      iter.fail(sent);
    } else {
      id = sent;
      this.#pending.set(id, { kind: 'stream', iter, discard: false });
    }
    iter.id = id;
    return iter;
  }

  /** Streams a turn: yields its events, ending with `end`. Breaking out does not cancel the turn (use kill). */
  async *stream(agent: string, content: string, opts: TurnOptions = {}): AsyncGenerator<StreamEvent> {
    for await (const body of this.openStream('stream', { agent, content, ...opts })) {
      const ev = body.stream;
      if (!isPlainMap(ev)) continue;
      const type = Object.keys(ev)[0]!;
      yield { type, ...(ev[type] as Body) } as StreamEvent;
    }
  }

  async send(agent: string, content: string, opts: Omit<TurnOptions, 'guest' | 'ephemeral' | 'correlation_id'> = {}): Promise<SendResponse> {
    const body = await this.request('send', { agent, content, ...opts });
    return body.response as SendResponse;
  }

  /**
   * Watches the agent event stream (every turn in the daemon, or one agent's).
   * Breaking out of the loop sends `close` for the subscription.
   */
  async *events(agent?: string): AsyncGenerator<AgentEvent> {
    const it = this.openStream('subscribe_events', agent === undefined ? {} : { agent }, (id) => {
      this.request('close', { request: id }).catch(() => {}); // the connection may be closing anyway
    });
    for await (const body of it) {
      if (isPlainMap(body.agent_event)) yield body.agent_event as unknown as AgentEvent;
    }
  }

  async publish(source: string, payload: string): Promise<number> {
    return ((await this.request('publish_event', { source, payload })).published as { fired: number }).fired;
  }

  async subscribe(source: string, targetAgent: string, once = false): Promise<SubscriptionInfo> {
    return (await this.request('subscribe_event', { source, target_agent: targetAgent, once })).subscription_info as SubscriptionInfo;
  }

  async unsubscribe(id: number): Promise<void> {
    await this.request('unsubscribe_event', { id });
  }

  async subscriptions(): Promise<SubscriptionInfo[]> {
    return ((await this.request('list_subscriptions')).subscription_list as { subscriptions: SubscriptionInfo[] }).subscriptions;
  }

  async kill(agent: string, sender?: string): Promise<void> {
    await this.request('kill', sender === undefined ? { agent } : { agent, sender });
  }

  async ping(): Promise<void> {
    await this.request('ping');
  }

  async stats(): Promise<Body> {
    return (await this.request('get_stats')).stats as Body;
  }

  /** Writes a raw frame as is (protocol tests). */
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
