/**
 * The agent event stream's observers (`subscribe_events`). Shards encode each
 * agent event once; main writes those same bytes to every observer, behind a
 * header naming that observer's request (observer-frames.ts: a big event's
 * body is one buffer every observer's socket shares, not a copy each).
 * An observer that reads too slowly loses events instead of slowing anyone:
 * past `observer_backlog_bytes` of unsent output on its connection its events
 * are dropped and counted, and the first frame after the gap says how many.
 * A connection that stays past that bound and reads nothing for
 * `observer_stall_ms` is cut, as NATS cuts a slow consumer: what it held is
 * released.
 */
import { FLAG_LAST, frameOf } from '../../shared/codec.ts';
import { tooMany } from '../limits.ts';
import { agentEventBody, closedBody } from '../../shared/wire/frames.ts';
import type { ConnectionBudget } from '../hosts/inflight-budget.ts';
import { DEFAULTS } from '../../shared/config.ts';
import { buildTemplate, framesFor, framesOf, Pieces, type Template } from './observer-frames.ts';

/** What an observer needs of its connection. */
export interface ObserverSink {
  readonly id: number;
  /** Bytes queued on the socket and not yet sent. */
  backlog(): number;
  write(frame: Uint8Array): void;
  /** Writes several pieces as one run of output (buffers may be shared with other sinks); `write` of each when absent. */
  writeChunks?(chunks: readonly Uint8Array[]): void;
  /** Over the observer backlog bound: cut the connection if its peer reads nothing for `stallMs` (absent: never cut). */
  slowConsumer?(backlogBytes: number, stallMs: number): void;
}

interface Observer {
  sink: ObserverSink;
  req: number;
  /** null: every agent. */
  agent: string | null;
  dropped: number;
}

/** One connection's observers. */
interface ConnObservers {
  sink: ObserverSink;
  byReq: Map<number, Observer>;
  /** The observer when it is the connection's only one (the common case, written without a look at the map). */
  only: Observer | null;
}

/**
 * The default bound on a connection's unsent output past which its events
 * are dropped (`observer_backlog_bytes`): generous enough that an observer
 * reading at full speed never loses events to one turn's burst.
 */
export const OBSERVER_BACKLOG_BYTES = DEFAULTS.observerBacklogBytes;

/** `observer_backlog_bytes` and `observer_stall_ms`. */
export interface SlowConsumerBounds {
  backlogBytes: number;
  stallMs: number;
}

export class ObserverHub {
  readonly #byConn = new Map<number, ConnObservers>();
  #count = 0;
  readonly #onCountChange: (watching: boolean) => void;
  readonly #maxPerConnection: number;
  readonly #budget: ConnectionBudget | null;
  readonly #slow: SlowConsumerBounds;

  /**
   * `onCountChange(true)` when the first observer arrives, `(false)` when the
   * last leaves; `maxPerConnection` is `max_observers` (unlimited when absent);
   * each open stream also holds one of its connection's `budget` (max_inflight_per_connection);
   * `slow` says when a connection's events are dropped and when it is cut.
   */
  constructor(
    onCountChange: (watching: boolean) => void,
    maxPerConnection = Infinity,
    budget: ConnectionBudget | null = null,
    slow: SlowConsumerBounds = { backlogBytes: OBSERVER_BACKLOG_BYTES, stallMs: DEFAULTS.observerStallMs },
  ) {
    this.#onCountChange = onCountChange;
    this.#maxPerConnection = maxPerConnection;
    this.#budget = budget;
    this.#slow = slow;
  }

  get count(): number {
    return this.#count;
  }

  /** Throws 429 when the connection already holds `max_observers` streams. */
  add(sink: ObserverSink, req: number, agent: string | null): void {
    let conn = this.#byConn.get(sink.id);
    const isNew = conn?.byReq.has(req) !== true; // re-adding an open id replaces it and takes nothing more
    if (isNew && conn !== undefined && conn.byReq.size >= this.#maxPerConnection) {
      throw tooMany('event streams on this connection', this.#maxPerConnection, 'max_observers');
    }
    if (isNew) this.#budget?.take(sink.id);
    if (conn === undefined) this.#byConn.set(sink.id, (conn = { sink, byReq: new Map(), only: null }));
    if (isNew) this.#count++;
    conn.byReq.set(req, { sink, req, agent, dropped: 0 });
    conn.only = onlyOf(conn.byReq);
    if (this.#count === 1) this.#onCountChange(true);
  }

  /** Ends one observer with `closed {}` (LAST); false if the connection has no such open request. */
  close(sink: ObserverSink, req: number): boolean {
    const obs = this.#byConn.get(sink.id)?.byReq.get(req);
    if (obs === undefined) return false;
    this.#forget(sink.id, req);
    sink.write(frameOf(req, FLAG_LAST, closedBody()));
    return true;
  }

  /** The connection is gone: drop its observers without writing. */
  connClosed(connId: number): void {
    const conn = this.#byConn.get(connId);
    if (conn === undefined) return;
    for (const req of [...conn.byReq.keys()]) this.#forget(connId, req);
  }

  /** Ends every observer (shutdown). */
  closeAll(): void {
    for (const conn of [...this.#byConn.values()]) for (const obs of [...conn.byReq.values()]) this.close(obs.sink, obs.req);
  }

  #forget(connId: number, req: number): void {
    const conn = this.#byConn.get(connId)!;
    conn.byReq.delete(req);
    conn.only = onlyOf(conn.byReq);
    if (conn.byReq.size === 0) this.#byConn.delete(connId);
    this.#count--;
    this.#budget?.release(connId);
    if (this.#count === 0) this.#onCountChange(false);
  }

  /**
   * Writes a batch of encoded `agent_event` bodies to every observer that
   * wants them. The frames of a batch are laid out once per filter (all
   * agents, or one agent) as a template; each observer gets its own headers,
   * with its request id, around bodies every observer shares. A connection
   * with one observer is written the template's frames for its request id,
   * the same buffers as every other observer of that id (framesOf). A
   * connection's several observers get one write together (their small
   * frames in one buffer): 64 streams cost one write per batch, not 64.
   */
  broadcast(agents: readonly string[], bodies: readonly Uint8Array[]): void {
    if (this.#count === 0) return;
    const templates = new Templates(agents, bodies);
    const bound = this.#slow.backlogBytes;
    for (const conn of this.#byConn.values()) {
      const sink = conn.sink;
      const over = sink.backlog() > bound;
      const only = conn.only;
      if (!over && only !== null && only.dropped === 0) {
        const t = templates.of(only.agent);
        if (t.count > 0) writeAll(sink, framesOf(t, only.req));
        continue;
      }
      const pieces = new Pieces();
      for (const obs of conn.byReq.values()) {
        const t = templates.of(obs.agent);
        if (t.count === 0) continue;
        if (over) {
          obs.dropped += t.count;
          continue;
        }
        if (obs.dropped > 0) {
          const lagged = agentEventBody({ agent: obs.agent ?? '', sender: '', kind: 'lagged', content: `${obs.dropped} events dropped`, timestamp: new Date().toISOString(), ephemeral: false });
          pieces.own(frameOf(obs.req, 0, lagged));
          obs.dropped = 0;
        }
        framesFor(t, obs.req, pieces);
      }
      if (over) sink.slowConsumer?.(bound, this.#slow.stallMs);
      else pieces.writeTo(sink);
    }
  }
}

/** A batch's templates, one per filter, each laid out on first use; observers of every agent (most) skip the map. */
class Templates {
  readonly #agents: readonly string[];
  readonly #bodies: readonly Uint8Array[];
  #all: Template | null = null;
  readonly #byAgent = new Map<string, Template>();

  constructor(agents: readonly string[], bodies: readonly Uint8Array[]) {
    this.#agents = agents;
    this.#bodies = bodies;
  }

  of(agent: string | null): Template {
    if (agent === null) return (this.#all ??= buildTemplate(this.#agents, this.#bodies, null));
    let t = this.#byAgent.get(agent);
    if (t === undefined) this.#byAgent.set(agent, (t = buildTemplate(this.#agents, this.#bodies, agent)));
    return t;
  }
}

function onlyOf(byReq: Map<number, Observer>): Observer | null {
  return byReq.size === 1 ? byReq.values().next().value! : null;
}

/** One write, or one corked run of writes when the frames are several buffers. */
function writeAll(sink: ObserverSink, out: readonly Uint8Array[]): void {
  if (out.length === 1) sink.write(out[0]!);
  else if (sink.writeChunks !== undefined) sink.writeChunks(out);
  else for (const c of out) sink.write(c);
}
