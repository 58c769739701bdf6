/**
 * The agent event stream's observers (`subscribe_events`). Shards encode each
 * agent event once; main writes those same bytes to every observer, behind a
 * header naming that observer's request, one write per observer per batch.
 * An observer that reads too slowly loses events instead of slowing anyone:
 * past a backlog bound its events are dropped and counted, and the first
 * frame after the gap says how many.
 */
import { FLAG_LAST, frameOf } from '../../shared/codec.ts';
import { FRAME_ID_OFFSET, HEADER_BYTES, writeFrame } from '../../shared/byte-layouts.ts';
import { tooMany } from '../limits.ts';
import { agentEventBody, closedBody } from '../../shared/wire/frames.ts';
import type { ConnectionBudget } from '../hosts/inflight-budget.ts';

/** What an observer needs of its connection. */
export interface ObserverSink {
  readonly id: number;
  /** Bytes queued on the socket and not yet sent. */
  backlog(): number;
  write(frame: Uint8Array): void;
}

interface Observer {
  sink: ObserverSink;
  req: number;
  /** null: every agent. */
  agent: string | null;
  dropped: number;
}

/**
 * Backlog past which an observer's events are dropped: memory per observer
 * stays bounded. Generous enough that an observer reading at full speed never
 * loses events to one turn's burst (a whole reply can arrive in one batch).
 */
export const OBSERVER_BACKLOG_BYTES = 4 * 1024 * 1024;

export class ObserverHub {
  readonly #byConn = new Map<number, Map<number, Observer>>();
  #count = 0;
  readonly #onCountChange: (watching: boolean) => void;
  readonly #maxPerConnection: number;
  readonly #budget: ConnectionBudget | null;

  /**
   * `onCountChange(true)` when the first observer arrives, `(false)` when the
   * last leaves; `maxPerConnection` is `max_observers` (unlimited when absent);
   * each open stream also holds one of its connection's `budget` (max_inflight_per_connection).
   */
  constructor(onCountChange: (watching: boolean) => void, maxPerConnection = Infinity, budget: ConnectionBudget | null = null) {
    this.#onCountChange = onCountChange;
    this.#maxPerConnection = maxPerConnection;
    this.#budget = budget;
  }

  get count(): number {
    return this.#count;
  }

  /** Throws 429 when the connection already holds `max_observers` streams. */
  add(sink: ObserverSink, req: number, agent: string | null): void {
    let mine = this.#byConn.get(sink.id);
    if (mine !== undefined && !mine.has(req) && mine.size >= this.#maxPerConnection) {
      throw tooMany('event streams on this connection', this.#maxPerConnection, 'max_observers');
    }
    if (mine === undefined || !mine.has(req)) this.#budget?.take(sink.id);
    if (mine === undefined) this.#byConn.set(sink.id, (mine = new Map()));
    if (!mine.has(req)) this.#count++;
    mine.set(req, { sink, req, agent, dropped: 0 });
    if (this.#count === 1) this.#onCountChange(true);
  }

  /** Ends one observer with `closed {}` (LAST); false if the connection has no such open request. */
  close(sink: ObserverSink, req: number): boolean {
    const obs = this.#byConn.get(sink.id)?.get(req);
    if (obs === undefined) return false;
    this.#forget(sink.id, req);
    sink.write(frameOf(req, FLAG_LAST, closedBody()));
    return true;
  }

  /** The connection is gone: drop its observers without writing. */
  connClosed(connId: number): void {
    const mine = this.#byConn.get(connId);
    if (mine === undefined) return;
    for (const req of [...mine.keys()]) this.#forget(connId, req);
  }

  /** Ends every observer (shutdown). */
  closeAll(): void {
    for (const mine of [...this.#byConn.values()]) for (const obs of [...mine.values()]) this.close(obs.sink, obs.req);
  }

  #forget(connId: number, req: number): void {
    const mine = this.#byConn.get(connId)!;
    mine.delete(req);
    if (mine.size === 0) this.#byConn.delete(connId);
    this.#count--;
    this.#budget?.release(connId);
    if (this.#count === 0) this.#onCountChange(false);
  }

  /**
   * Writes a batch of encoded `agent_event` bodies to every observer that
   * wants them. The frames of a batch are laid out once per filter (all
   * agents, or one agent) as a template; each observer gets a copy with its
   * request id patched into the headers, in one write.
   */
  broadcast(agents: readonly string[], bodies: readonly Uint8Array[]): void {
    if (this.#count === 0) return;
    const templates = new Map<string | null, Template>();
    for (const mine of this.#byConn.values()) {
      for (const obs of mine.values()) {
        let t = templates.get(obs.agent);
        if (t === undefined) templates.set(obs.agent, (t = template(agents, bodies, obs.agent)));
        if (t.count === 0) continue;
        if (obs.sink.backlog() > OBSERVER_BACKLOG_BYTES) {
          obs.dropped += t.count;
          continue;
        }
        if (obs.dropped > 0) {
          const lagged = agentEventBody({ agent: obs.agent ?? '', sender: '', kind: 'lagged', content: `${obs.dropped} events dropped`, timestamp: new Date().toISOString(), ephemeral: false });
          obs.sink.write(frameOf(obs.req, 0, lagged));
          obs.dropped = 0;
        }
        const copy = Buffer.from(t.bytes); // the socket keeps it until sent: each observer needs its own
        for (const at of t.idOffsets) copy.writeUInt32BE(obs.req, at);
        obs.sink.write(copy);
      }
    }
  }
}

interface Template {
  bytes: Buffer;
  /** Where each frame's request id goes. */
  idOffsets: number[];
  count: number;
}

function template(agents: readonly string[], bodies: readonly Uint8Array[], only: string | null): Template {
  let size = 0;
  let count = 0;
  for (let i = 0; i < bodies.length; i++) {
    if (only !== null && agents[i] !== only) continue;
    size += HEADER_BYTES + bodies[i]!.length;
    count++;
  }
  const bytes = Buffer.allocUnsafe(size);
  const idOffsets: number[] = [];
  let at = 0;
  for (let i = 0; i < bodies.length; i++) {
    if (only !== null && agents[i] !== only) continue;
    idOffsets.push(at + FRAME_ID_OFFSET);
    at = writeFrame(bytes, at, 0, 0, bodies[i]!); // id 0: each observer patches in its own
  }
  return { bytes, idOffsets, count };
}
