/**
 * `subscribe_mcp_events` streams: each open subscription gets an `mcp_event`
 * frame for every status change of an MCP connection (of one agent, or all),
 * until `close`, a disconnect or shutdown. Status changes are rare, so each
 * frame is encoded per subscriber.
 */
import { FLAG_LAST, frameOf } from '../../shared/codec.ts';
import type { ObserverSink } from '../bus/observers.ts';
import type { McpEvent } from '../../shared/wire/ops.ts';
import { closedBody, mcpEventBody } from '../../shared/wire/frames.ts';
import type { ConnectionBudget } from './inflight-budget.ts';

export type { McpEvent };

interface Subscription {
  sink: ObserverSink;
  req: number;
  agent: string | null;
}

const key = (connId: number, req: number): string => `${connId}:${req}`;

export class McpEventStreams {
  readonly #subs = new Map<string, Subscription>();
  #budget: ConnectionBudget | null = null;

  /** Each open subscription holds one of its connection's requests in flight (max_inflight_per_connection). */
  limitWith(budget: ConnectionBudget): void {
    this.#budget = budget;
  }

  add(sink: ObserverSink, req: number, agent: string | null): void {
    const k = key(sink.id, req);
    if (!this.#subs.has(k)) this.#budget?.take(sink.id);
    this.#subs.set(k, { sink, req, agent });
  }

  /** Ends one subscription with `closed {}` (LAST); false if the connection has no such open request. */
  close(sink: ObserverSink, req: number): boolean {
    const sub = this.#subs.get(key(sink.id, req));
    if (sub === undefined) return false;
    this.#subs.delete(key(sink.id, req));
    this.#budget?.release(sink.id);
    sink.write(frameOf(req, FLAG_LAST, closedBody()));
    return true;
  }

  connClosed(connId: number): void {
    for (const [k, sub] of this.#subs) {
      if (sub.sink.id !== connId) continue;
      this.#subs.delete(k);
      this.#budget?.release(connId);
    }
  }

  closeAll(): void {
    for (const sub of [...this.#subs.values()]) this.close(sub.sink, sub.req);
  }

  publish(event: McpEvent): void {
    for (const sub of this.#subs.values()) {
      if (sub.agent === null || sub.agent === event.agent) sub.sink.write(frameOf(sub.req, 0, mcpEventBody(event)));
    }
  }
}
