/**
 * The agentd client: one typed method per operation (docs/PROTOCOL.md §4)
 * over one connection, any number of requests in flight.
 *
 *   const c = await AgentdClient.connect(); // $AGENTD_HOME/run/agentd.sock, else ~/.agentd/run/agentd.sock
 *   for await (const ev of c.stream('assistant', 'hello')) if (ev.type === 'chunk') process.stdout.write(ev.content);
 *   const agents = await c.listAgents();
 *   await c.close();
 *
 * Lifecycle (after nats.js): `connect()` resolves once open (and
 * authenticated on TCP); `closed()` resolves with the error that closed it,
 * or undefined, and never rejects; `close()` is immediate and idempotent;
 * `drain()` lets open requests finish first. With `reconnect: true` a lost
 * connection is opened again by the next call, and the client is closed
 * only by close() or drain().
 */
import { randomUUID } from 'node:crypto';
import { AgentdError, Code } from '../shared/errors.ts';
import { isPlainMap } from '../shared/args.ts';
import type * as W from '../shared/wire/ops.ts';
import { REPLY_VARIANT, type ArgsOf, type OperationName, type ReplyOf } from '../shared/wire/ops.ts';
import { resolveConnectOptions, type ConnectOptions } from './connect-options.ts';
import { toAgentEvent, toStreamEvent, type AgentEvent } from './agent-events.ts';
import { Connection, type Body, type ReplyStream } from './connection.ts';
import { ConnectionClosedError } from './errors.ts';
import { QueuedIterator } from './queued-iterator.ts';
import { checkRetryOptions, isRetryable, withRetry, type RetryOptions } from './retry.ts';
import { rejoining } from './rejoin.ts';
import { scheduleMethods, type ScheduleMethods } from './schedule-methods.ts';
import { runMethods, type RunMethods } from './run-methods.ts';
import { tokenMethods, type TokenMethods } from './token-methods.ts';
import { adminMethods, type AdminMethods } from './admin-methods.ts';

export { AgentdError, Code, ConnectionClosedError };
export { CONNECTION_CLOSED } from './errors.ts';
export type * from '../shared/wire/ops.ts';
export type { Body, ConnectOptions };
export type { AgentEvent, AgentEventType } from './agent-events.ts';

/** Options of a turn (`stream`, and the subset `send` takes). */
export type TurnOptions = Omit<W.StreamArgs, 'agent' | 'content'>;
/** `retry`: how to retry a 503 or a lost connection (default: the client's `retry` option; false: not at all). */
export type SendOptions = Omit<W.SendArgs, 'agent' | 'content'> & { retry?: RetryOptions | false };
export type SearchOptions = Omit<W.SearchArgs, 'query'>;

/** Ends a subscription when its consumer leaves, on the connection it was made on (ids are per connection). */
function closeOn(id: number, conn: Connection): void {
  if (conn.isClosed) return; // the subscription ended with it
  conn.request('close', { request: id }, new Error('agentd request "close"')).catch(() => {}); // the connection may be closing anyway
}

function withSender<T extends object>(args: T, sender: string | undefined): T & { sender?: string } {
  return sender === undefined ? args : { ...args, sender };
}

// Declaration merging: the methods of run-methods.ts and schedule-methods.ts, added to the prototype below, are the class's.
export interface AgentdClient extends RunMethods, ScheduleMethods, TokenMethods, AdminMethods {}

export class AgentdClient {
  readonly #opts: ConnectOptions;
  #conn: Connection;
  /** The connection being opened again after a loss, which calls made meanwhile wait for. */
  #reconnecting: Promise<Connection> | null = null;
  /** close() or drain() was called: no more connections. */
  #ended = false;
  readonly #closed: Promise<Error | undefined>;
  #resolveClosed!: (err: Error | undefined) => void;

  private constructor(conn: Connection, opts: ConnectOptions) {
    this.#conn = conn;
    this.#opts = opts;
    this.#closed = new Promise((r) => (this.#resolveClosed = r));
    if (opts.reconnect !== true) void conn.closed().then(this.#resolveClosed);
  }

  /** Connects; with no options, to the local daemon's Unix socket (see resolveConnectOptions). */
  static async connect(given: ConnectOptions = {}): Promise<AgentdClient> {
    if (given.retry !== undefined) checkRetryOptions(given.retry);
    const opts = resolveConnectOptions(given);
    return new AgentdClient(await Connection.open(opts), opts);
  }

  /** Resolves with the error that closed the client, or undefined; never rejects. */
  closed(): Promise<Error | undefined> {
    return this.#closed;
  }

  /** True once the client takes no more requests (with `reconnect`, only after close() or drain()). */
  get isClosed(): boolean {
    return this.#conn.isClosed && (this.#ended || this.#opts.reconnect !== true);
  }

  /** Requests sent and not yet finished. */
  get pending(): number {
    return this.#conn.pending;
  }

  /** Closes now: open requests fail with ConnectionClosedError. Idempotent. */
  close(): Promise<void> {
    this.#ended = true;
    return this.#settle(this.#conn.close());
  }

  /** Refuses new requests, waits for open ones to finish, then closes. */
  drain(): Promise<void> {
    this.#ended = true;
    return this.#settle(this.#conn.drain());
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Sends one request-response operation; resolves with the reply body (a one-key map). */
  request(op: string, args: Body = {}): Promise<Body> {
    const stack = new Error(`agentd request "${op}"`); // made now, so a failure names the caller
    const live = this.#live();
    return live instanceof Connection ? live.request(op, args, stack) : live.then((conn) => conn.request(op, args, stack));
  }

  /** Sends a streaming operation; iterates its reply bodies until LAST. An `error` reply is thrown. */
  openStream(op: string, args: Body = {}, onBreak?: (id: number) => void): ReplyStream {
    return this.#openStream(op, args, (id) => onBreak?.(id));
  }

  /** Sends operation `op` and resolves with its reply variant's value, typed (PROTOCOL §4). */
  async call<Op extends Exclude<OperationName, 'stream' | 'subscribe_events' | 'subscribe_mcp_events'>>(op: Op, args: ArgsOf<Op>): Promise<ReplyOf<Op>> {
    const body = await this.request(op, args as Body);
    const variant = REPLY_VARIANT[op];
    if (!isPlainMap(body[variant])) throw new AgentdError(Code.Internal, `"${op}" expected a "${variant}" reply, got ${Object.keys(body).join(', ') || 'nothing'}`);
    return body[variant] as ReplyOf<Op>;
  }

  // ---- turns (PROTOCOL §4.1) ----

  /**
   * Streams a turn: yields its events, ending with `end`. Breaking out does not cancel the turn (use kill).
   * With `detach: true` and the `reconnect` option, a dropped connection is reopened and the run joined again from the last `seq` seen.
   */
  stream(agent: string, content: string, opts: TurnOptions = {}): AsyncGenerator<W.StreamEvent> {
    const events = this.#events(this.openStream('stream', { agent, content, ...opts }));
    return opts.detach === true && this.#opts.reconnect === true ? rejoining(events, (id, after) => this.joinRun(id, after)) : events;
  }

  async *#events(bodies: ReplyStream): AsyncGenerator<W.StreamEvent> {
    for await (const body of bodies) {
      const ev = toStreamEvent(body);
      if (ev !== null) yield ev;
    }
  }

  // ---- runs (§4.13): joinRun here, the rest in run-methods.ts ----

  /** Follows a detached run: its events after `afterSeq`, then the live ones, ending with `end`. */
  joinRun(runId: string, afterSeq = 0): AsyncGenerator<W.StreamEvent> {
    return this.#events(this.openStream('join_run', { run_id: runId, after_seq: afterSeq }));
  }

  /**
   * Runs a turn and resolves with its final text; a failed turn rejects (500), a cancelled one too (499).
   * With `retry` (here or the client's), a 503 or a lost connection is retried under the same
   * `turn_id` (one is made when none is given), so the daemon replays a turn it already ran.
   */
  send(agent: string, content: string, opts: SendOptions = {}): Promise<W.SendResponse> {
    const { retry = this.#opts.retry, ...turn } = opts;
    if (retry === undefined || retry === false) return this.call('send', { agent, content, ...turn });
    const args = { agent, content, ...turn, turn_id: turn.turn_id || randomUUID() };
    // A lost connection is worth retrying only when the next call can connect again.
    return withRetry(() => this.call('send', args), retry, (err) => isRetryable(err) && !this.isClosed);
  }

  /** Cancels the pair's running turn and everything queued behind it. */
  async kill(agent: string, sender?: string): Promise<void> {
    await this.call('kill', withSender({ agent }, sender));
  }

  /** Summarizes the pair's conversation for the model's next turns; resolves with the summary. */
  async compact(agent: string, opts: { sender?: string; prompt?: string } = {}): Promise<string> {
    return (await this.call('compact', { agent, ...opts })).summary;
  }

  // ---- conversations and search (§4.3) ----

  history(agent: string, sender?: string): Promise<W.ConversationHistory> {
    return this.call('get_conversation_history', withSender({ agent }, sender));
  }

  async deleteConversation(agent: string, sender?: string): Promise<void> {
    await this.call('delete_conversation', withSender({ agent }, sender));
  }

  async listConversations(filter: W.ConversationFilter = {}): Promise<W.ConversationSummary[]> {
    return (await this.call('list_conversations', filter)).conversations;
  }

  async listActiveConversations(filter: W.ConversationFilter = {}): Promise<W.ActiveConversation[]> {
    return (await this.call('list_active_conversations', filter)).conversations;
  }

  async search(query: string, opts: SearchOptions = {}): Promise<W.SessionHit[]> {
    return (await this.call('search_sessions', { query, ...opts })).hits;
  }

  // ---- the agent event stream (§4.4) ----

  /**
   * Watches the agent event stream (every turn in the daemon, or one agent's).
   * Each event's name is its `type`, as for stream(); on the wire it is `kind`.
   * The request is written at once: a `ping` on this client afterwards is a
   * barrier after which no turn is missed. Breaking out of the loop sends `close`.
   */
  events(agent?: string): AsyncGenerator<AgentEvent> {
    const it = this.#openStream('subscribe_events', agent === undefined ? {} : { agent }, closeOn);
    return (async function* () {
      for await (const body of it) {
        const ev = toAgentEvent(body);
        if (ev !== null) yield ev;
      }
    })();
  }

  /** Ends this connection's `subscribe_events` or `subscribe_mcp_events` request `requestId` (what breaking out of events() does). */
  async closeEvents(requestId: number): Promise<void> {
    await this.call('close', { request: requestId });
  }

  // ---- the event bus (§4.5) ----

  async subscribe(source: string, targetAgent: string, once = false): Promise<W.SubscriptionInfo> {
    return this.call('subscribe_event', { source, target_agent: targetAgent, once });
  }

  async unsubscribe(id: number): Promise<void> {
    await this.call('unsubscribe_event', { id });
  }

  async subscriptions(): Promise<W.SubscriptionInfo[]> {
    return (await this.call('list_subscriptions', {})).subscriptions;
  }

  /** Publishes an event; resolves with how many subscriptions fired. A non-string payload travels as its JSON text. */
  async publish(source: string, payload: unknown = ''): Promise<number> {
    return (await this.call('publish_event', { source, payload })).fired;
  }

  // ---- schedules (§4.11) and outbound webhooks (§4.12): schedule-methods.ts ----

  // ---- agents (§4.6) ----

  async listAgents(): Promise<W.AgentInfo[]> {
    return (await this.call('list_agents', {})).agents;
  }

  getAgent(name: string): Promise<W.AgentInfo> {
    return this.call('get_agent', { name });
  }

  createAgent(name: string, config: W.AgentConfigInput = {}): Promise<W.AgentInfo> {
    return this.call('create_agent', { name, config });
  }

  /** Applies a JSON merge patch to the agent's configuration. */
  updateAgent(name: string, patch: W.AgentConfigPatch): Promise<W.AgentInfo> {
    return this.call('update_agent', { name, config: patch });
  }

  async deleteAgent(name: string): Promise<void> {
    await this.call('delete_agent', { name });
  }

  // ---- models, skills, the daemon (§4.7-4.9) ----

  async listModels(): Promise<W.ModelInfo[]> {
    return (await this.call('list_models', {})).models;
  }

  async setActiveModel(model: string): Promise<void> {
    await this.call('set_active_model', { model });
  }

  async listSkills(): Promise<W.SkillInfo[]> {
    return (await this.call('list_skills', {})).skills;
  }

  getSkill(name: string): Promise<W.SkillBody> {
    return this.call('get_skill', { name });
  }

  async ping(): Promise<void> {
    await this.call('ping', {});
  }

  /** Authenticates a TCP connection (connect() does this itself when given a token). */
  async auth(token: string): Promise<void> {
    await this.call('auth', { token });
  }

  stats(): Promise<W.Stats> {
    return this.call('get_stats', {});
  }

  // ---- MCP servers (§4.10) ----

  /** Every agent's MCP servers (or one agent's) with their connection status. */
  async listMcps(agent?: string): Promise<W.McpInfo[]> {
    return (await this.call('list_mcps', agent === undefined ? {} : { agent })).mcps;
  }

  /** Adds MCP server `name` to the agent, or replaces its settings entirely. */
  upsertMcp(agent: string, name: string, config: W.McpServerConfig): Promise<W.McpInfo> {
    return this.call('upsert_mcp', { agent, config: { ...config, name } });
  }

  async deleteMcp(agent: string, name: string): Promise<void> {
    await this.call('delete_mcp', { agent, name });
  }

  /** Drops the server's connection and connects afresh; progress shows in listMcps and mcpEvents. */
  async reconnectMcp(agent: string, name: string): Promise<void> {
    await this.call('reconnect_mcp', { agent, name });
  }

  /**
   * Watches MCP connection status changes (of every agent, or one). Like
   * events(): a `ping` afterwards is a barrier, and breaking out sends `close`;
   * `closeEvents(stream.requestId)` ends it from outside the loop.
   */
  mcpEvents(agent?: string): AsyncGenerator<W.McpEvent> & { readonly requestId: number } {
    const it = this.#openStream('subscribe_mcp_events', agent === undefined ? {} : { agent }, closeOn);
    const gen = (async function* () {
      for await (const body of it) {
        if (isPlainMap(body.mcp_event)) yield body.mcp_event as unknown as W.McpEvent;
      }
    })();
    // A getter: while the client reconnects, the request is sent (and has its id) a moment later.
    return Object.defineProperty(gen, 'requestId', { get: () => it.id }) as AsyncGenerator<W.McpEvent> & { readonly requestId: number };
  }

  /** Writes a raw frame as is (protocol tests). */
  writeRaw(bytes: Uint8Array): void {
    this.#conn.writeRaw(bytes);
  }

  /** The connection to send on now: the open one, or (with `reconnect`, after a loss) the one being opened. */
  #live(): Connection | Promise<Connection> {
    if (!this.#conn.isClosed || this.#ended || this.#opts.reconnect !== true) return this.#conn;
    return (this.#reconnecting ??= this.#reopen());
  }

  async #reopen(): Promise<Connection> {
    try {
      const conn = await Connection.open(this.#opts);
      if (this.#ended) {
        void conn.close();
        throw new ConnectionClosedError('the client was closed while it reconnected');
      }
      this.#conn = conn;
      return conn;
    } finally {
      this.#reconnecting = null;
    }
  }

  /** `onBreak` gets the connection the stream was sent on, which a reconnect may since have replaced. */
  #openStream(op: string, args: Body, onBreak: (id: number, conn: Connection) => void): ReplyStream {
    let sentOn: Connection | null = null;
    let left = false;
    const iter = new QueuedIterator<Body>(() => {
      left = true;
      if (sentOn === null || iter.id < 0) return;
      sentOn.discard(iter.id); // keep swallowing frames until LAST
      onBreak(iter.id, sentOn);
    }) as ReplyStream;
    iter.id = -1;
    const start = (conn: Connection): void => {
      if (left) return; // the consumer left before it could be sent
      sentOn = conn;
      iter.id = conn.openStream(op, args, iter);
    };
    const live = this.#live();
    if (live instanceof Connection) start(live);
    else live.then(start, (err: Error) => iter.fail(err));
    return iter;
  }

  async #settle(closing: Promise<void>): Promise<void> {
    await closing;
    this.#resolveClosed(await this.#conn.closed());
  }
}

Object.assign(AgentdClient.prototype, runMethods, scheduleMethods, tokenMethods, adminMethods);
