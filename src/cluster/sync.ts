/**
 * Cluster mode: what every node must share besides conversations. The
 * store holds the agents and the bus's subscriptions;
 * NATS tells the nodes when they changed, and each reloads them from the
 * store:
 *
 * - `<cluster>.agents`: `agent` (from, agent) after an agent was created,
 *   updated or deleted on node `from`; every other node reloads that agent.
 * - `<cluster>.agents.purge.<node>`: before an agent's rows are deleted, the
 *   deleting node asks each live node to purge it (refuse its turns, cancel
 *   the running ones, forget its conversations), so no node writes for it
 *   once its conversations are deleted.
 * - `<cluster>.subs`: `subs` (from) after the subscriptions changed; every
 *   other node reloads the table.
 * - `<cluster>.fire`: `fire`, a fired subscription whose pair another node owns;
 *   the owner (the node holding the pair's partition) starts the turn and
 *   answers; the others ignore it. Tried again until the hold deadline while
 *   the partition changes hands.
 *
 * - `<cluster>.watch`: `watch` (from, watching) from a node whose observers
 *   (`subscribe_events`) came or went, and again every half lease while it
 *   has any (a node not heard from for two leases watches no more);
 *   `<cluster>.watch.ask` on start asks the watching nodes to say so now.
 *   While any node watches, every node's shards emit agent events, and each
 *   node publishes those of its own turns on `<cluster>.events`; every other
 *   node with observers hands them to its observers.
 *
 * Every message, and the `answer` to a purge or a fire, is in messages.ts.
 *
 * A node that reconnects to NATS (it may have missed messages) reloads all
 * agents and subscriptions.
 */
import { randomUUID } from 'node:crypto';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { AgentConfig } from '../shared/config.ts';
import type { Logger } from '../shared/log.ts';
import { partitionOf } from '../shared/partitions.ts';
import type { ObserverHub } from '../main/bus/observers.ts';
import type { AgentRegistry } from '../main/agent-registry.ts';
import type { EventBus, SubscriptionInfo } from '../main/bus/event-bus.ts';
import type { ShardPool } from '../main/hosts/shard-pool.ts';
import { busTurn } from '../main/turn-request.ts';
import { decodeMessage, encodeMessage, type Message } from './messages.ts';

/** How long one try of a remote fire waits for the owner's answer. */
const FIRE_TRY_MS = 500;
/** The most event bytes one `<cluster>.events` message carries. */
const EVENTS_MESSAGE_BYTES = 256 * 1024;
/** Fires an owner remembers (by id), so a try sent again after a late answer does not start the turn twice. */
const FIRES_REMEMBERED = 4096;

export interface SyncParts {
  nc: NatsConnection;
  name: string;
  node: string;
  partitions: number;
  agents: AgentRegistry;
  pool: ShardPool;
  bus: EventBus;
  /** The agents and subscriptions as the store holds them now. */
  reload(): Promise<{ agents: Record<string, AgentConfig>; subscriptions: SubscriptionInfo[] }>;
  /** Whether this node holds the partition's lease now. */
  holds(partition: number): boolean;
  /** The live nodes (their leases). */
  liveNodes(): string[];
  /** After any change of the agents (the MCP thread follows them). */
  onAgentsChanged(): void;
  /** How long a fire waits for its partition's owner. */
  holdMs: number;
  /** The lease: watchers repeat themselves every half of it. */
  leaseMs: number;
  observers: ObserverHub;
  log: Logger;
}

export class ClusterSync {
  readonly #p: SyncParts;
  readonly #subs: Subscription[] = [];
  #closed = false;
  /** Reloads run one at a time, the last asked for last. */
  #reloading: Promise<void> = Promise.resolve();
  /** Whether this node has observers. */
  #watchingHere = false;
  /** Other nodes with observers, and until when each counts as watching. */
  readonly #watchers = new Map<string, number>();
  /** What the shards were last told (emit agent events or not). */
  #shardsWatching = false;
  readonly #watchTimer: NodeJS.Timeout;
  /** The ids of fires started here for other nodes, oldest first, with their answers (null: started). */
  readonly #firesSeen = new Map<string, string | null>();

  constructor(parts: SyncParts) {
    this.#p = parts;
    const { nc, name, node } = parts;
    this.#subs.push(nc.subscribe(`${name}.agents`, { callback: (err, msg) => { if (err === null) this.#guard('agents', () => this.#onAgent(msg.data)); } }));
    this.#subs.push(nc.subscribe(`${name}.subs`, { callback: (err, msg) => { if (err === null) this.#guard('subs', () => this.#onSubs(msg.data)); } }));
    this.#subs.push(nc.subscribe(`${name}.agents.purge.${node}`, {
      callback: (err, msg) => {
        if (err !== null) return;
        this.#guard('agents.purge', () => {
          const { agent } = decodeMessage(msg.data, 'purge');
          this.purgeHere(agent).then(
            () => msg.respond(encodeMessage({ t: 'answer', error: null })),
            (e: unknown) => msg.respond(encodeMessage({ t: 'answer', error: (e as Error).message })),
          );
        });
      },
    }));
    this.#subs.push(nc.subscribe(`${name}.fire`, { callback: (err, msg) => { if (err === null) this.#guard('fire', () => this.#onFire(msg.data, (b) => msg.respond(b))); } }));
    this.#subs.push(nc.subscribe(`${name}.watch`, { callback: (err, msg) => { if (err === null) this.#guard('watch', () => this.#onWatch(msg.data)); } }));
    this.#subs.push(nc.subscribe(`${name}.watch.ask`, { callback: (err, msg) => { if (err === null) this.#guard('watch.ask', () => this.#onWatchAsk(msg.data)); } }));
    this.#subs.push(nc.subscribe(`${name}.events`, { callback: (err, msg) => { if (err === null) this.#guard('events', () => this.#onEvents(msg.data)); } }));
    this.#watchTimer = setInterval(() => this.#tickWatch(), parts.leaseMs / 2);
    this.#watchTimer.unref();
    nc.publish(`${name}.watch.ask`, encodeMessage({ t: 'watch_ask' }));
    void this.#watchReconnects();
  }

  /** A malformed message (not from an agentd node of this version) is logged and skipped. */
  #guard(subject: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#p.log.warn({ subject: `${this.#p.name}.${subject}`, err: (err as Error).message }, 'cluster: a malformed message was skipped');
    }
  }

  /** This node's observers came (true) or all went (false). */
  setWatchingHere(watching: boolean): void {
    this.#watchingHere = watching;
    this.#sayWatching();
    this.#updateShards();
  }

  /** Agent events of turns running here: to this node's observers (the caller), and to the other nodes' while any watches. */
  agentEvents(agents: readonly string[], bodies: readonly Uint8Array[]): void {
    if (this.#watchers.size === 0 || this.#closed) return;
    // In messages well under NATS's max_payload (1 MiB by default); one event bigger than that alone is not sent (logged).
    let from = 0;
    let bytes = 0;
    const send = (to: number): void => {
      if (to > from) this.#p.nc.publish(`${this.#p.name}.events`, encodeMessage({ t: 'events', from: this.#p.node, agents: agents.slice(from, to), bodies: bodies.slice(from, to) }));
      from = to;
      bytes = 0;
    };
    try {
      for (let i = 0; i < bodies.length; i++) {
        const size = bodies[i]!.length;
        if (size > EVENTS_MESSAGE_BYTES) {
          send(i);
          from = i + 1;
          this.#p.log.warn({ agent: agents[i], bytes: size }, 'cluster: an agent event too big for a NATS message reaches only this node’s observers');
          continue;
        }
        if (bytes + size > EVENTS_MESSAGE_BYTES) send(i);
        bytes += size;
      }
      send(bodies.length);
    } catch (err) {
      this.#p.log.warn({ err: (err as Error).message }, 'cluster: sending agent events to the other nodes failed');
    }
  }

  #sayWatching(): void {
    if (this.#closed) return;
    this.#p.nc.publish(`${this.#p.name}.watch`, encodeMessage({ t: 'watch', from: this.#p.node, watching: this.#watchingHere }));
  }

  #onWatchAsk(data: Uint8Array): void {
    decodeMessage(data, 'watch_ask');
    if (this.#watchingHere) this.#sayWatching();
  }

  #onWatch(data: Uint8Array): void {
    const m = decodeMessage(data, 'watch');
    if (m.from === this.#p.node) return;
    if (m.watching) this.#watchers.set(m.from, performance.now() + 2 * this.#p.leaseMs);
    else this.#watchers.delete(m.from);
    this.#updateShards();
  }

  #onEvents(data: Uint8Array): void {
    if (!this.#watchingHere) return;
    const m = decodeMessage(data, 'events');
    if (m.from === this.#p.node) return;
    this.#p.observers.broadcast(m.agents, m.bodies);
  }

  #tickWatch(): void {
    if (this.#watchingHere) this.#sayWatching();
    const now = performance.now();
    for (const [n, until] of this.#watchers) if (until < now) this.#watchers.delete(n);
    this.#updateShards();
  }

  /** The shards emit agent events while any node, this one or another, has observers. */
  #updateShards(): void {
    const watching = this.#watchingHere || this.#watchers.size > 0;
    if (watching === this.#shardsWatching) return;
    this.#shardsWatching = watching;
    this.#p.pool.broadcast({ type: 'observe', watching });
  }

  async #watchReconnects(): Promise<void> {
    for await (const s of this.#p.nc.status()) {
      if (this.#closed) return;
      if (s.type === 'reconnect') {
        this.#p.log.info('cluster: reconnected to NATS; reloading agents and subscriptions');
        this.#queueReload(null, true);
      }
    }
  }

  /**
   * An agent changed here: the other nodes reload it. So does this node,
   * after any reload under way: one that read the store before this change
   * committed may have undone it here.
   */
  agentChanged(agent: string): void {
    this.#p.nc.publish(`${this.#p.name}.agents`, encodeMessage({ t: 'agent', from: this.#p.node, agent }));
    this.#queueReload(agent, false);
  }

  /** The subscriptions changed here: the other nodes reload them, and so does this one (as for agents). */
  subscriptionsChanged(): void {
    this.#p.nc.publish(`${this.#p.name}.subs`, encodeMessage({ t: 'subs', from: this.#p.node }));
    this.#queueReload(null, false);
  }

  /** Before an agent's rows go: every other live node purges it (failures are logged; a node that does not answer has lost its leases by then, or soon). */
  async purgeElsewhere(agent: string): Promise<void> {
    const others = this.#p.liveNodes().filter((n) => n !== this.#p.node);
    await Promise.all(others.map(async (n) => {
      try {
        const r = await this.#p.nc.request(`${this.#p.name}.agents.purge.${n}`, encodeMessage({ t: 'purge', agent }), { timeout: this.#p.holdMs });
        const { error } = decodeMessage(r.data, 'answer');
        if (error !== null) this.#p.log.warn({ agent, node: n, answer: error }, 'cluster: a node failed to purge a deleted agent');
      } catch (err) {
        this.#p.log.warn({ agent, node: n, err: (err as Error).message }, 'cluster: a node did not answer the purge of a deleted agent');
      }
    }));
  }

  /** Forgets an agent here: refuses its turns, cancels and forgets its conversations, drops its subscriptions. */
  async purgeHere(agent: string): Promise<void> {
    const { agents, pool, bus } = this.#p;
    if (agents.has(agent)) {
      agents.remove(agent);
      pool.broadcast({ type: 'agent', name: agent, config: null });
      this.#p.onAgentsChanged();
    }
    await pool.purgeAgent(agent);
    await bus.removeAgent(agent, { stored: false });
  }

  #onAgent(data: Uint8Array): void {
    const m = decodeMessage(data, 'agent');
    if (m.from === this.#p.node) return;
    this.#queueReload(m.agent, false);
  }

  #onSubs(data: Uint8Array): void {
    const m = decodeMessage(data, 'subs');
    if (m.from === this.#p.node) return;
    this.#queueReload(null, false);
  }

  /** Reloads one agent (`agent`, null: none) or (`all`) every agent, and the subscriptions. */
  #queueReload(agent: string | null, all: boolean): void {
    this.#reloading = this.#reloading.then(() => this.#reload(agent, all)).catch((err: unknown) => {
      this.#p.log.error({ err: (err as Error).message }, 'cluster: reloading agents or subscriptions from the store failed');
    });
  }

  async #reload(agent: string | null, all: boolean): Promise<void> {
    if (this.#closed) return;
    const state = await this.#p.reload();
    const { agents, pool, bus } = this.#p;
    const names = all ? new Set([...Object.keys(state.agents), ...agents.list().map((a) => a.name)]) : agent === null ? new Set<string>() : new Set([agent]);
    for (const n of names) {
      const config = state.agents[n];
      if (config === undefined) {
        if (agents.has(n)) await this.purgeHere(n);
        continue;
      }
      if (JSON.stringify(agents.get(n)) === JSON.stringify(config)) continue;
      agents.set(n, config);
      pool.broadcast({ type: 'agent', name: n, config });
      this.#p.onAgentsChanged();
    }
    // Every reload takes the subscriptions too: the store's are current (a deleted agent's went with it), and a
    // reload that read them before a change committed is followed by another (the change's own message).
    bus.replace(state.subscriptions);
  }

  /**
   * Starts a fired subscription's turn at its pair's owner: here (`here`),
   * or sent to it over NATS (`sent`); false if it could not start here.
   */
  fire(sub: SubscriptionInfo, payload: string, depth: number, chain: number, turnId: string | null): 'here' | 'sent' | false {
    const partition = partitionOf(sub.target_agent, `event:${sub.source}`, this.#p.partitions);
    if (this.#p.holds(partition)) return this.#p.pool.sendFor(busTurn(sub.target_agent, sub.source, payload, depth, chain, turnId)) ? 'here' : false;
    // The chain's budget travels with the turn: a share of what is left, so chains that cross nodes hold max_chain_turns over the cluster.
    const budget = this.#p.bus.carveChain(chain);
    const body = encodeMessage({ t: 'fire', id: randomUUID(), partition, agent: sub.target_agent, source: sub.source, payload, depth, budget, turn_id: turnId });
    void this.#fireRemote(body, performance.now() + this.#p.holdMs, sub);
    return 'sent';
  }

  async #fireRemote(body: Uint8Array, deadline: number, sub: SubscriptionInfo): Promise<void> {
    while (!this.#closed) {
      try {
        const r = await this.#p.nc.request(`${this.#p.name}.fire`, body, { timeout: FIRE_TRY_MS });
        const { error } = decodeMessage(r.data, 'answer');
        if (error !== null) this.#p.log.warn({ subscription: sub.id, agent: sub.target_agent, answer: error }, 'cluster: a fired subscription’s turn did not start at its owner');
        return;
      } catch (err) {
        if (performance.now() >= deadline) {
          this.#p.log.error({ subscription: sub.id, agent: sub.target_agent, err: (err as Error).message }, 'cluster: no node took a fired subscription’s turn (its partition had no owner)');
          return;
        }
      }
    }
  }

  #onFire(data: Uint8Array, respond: (b: Uint8Array) => void): void {
    const m = decodeMessage(data, 'fire');
    // Only the partition's owner answers; the others stay silent.
    if (!this.#p.holds(m.partition)) return;
    const before = this.#firesSeen.get(m.id);
    if (before !== undefined) return respond(encodeMessage({ t: 'answer', error: before }));
    const error = this.#startFired(m);
    this.#firesSeen.set(m.id, error);
    if (this.#firesSeen.size > FIRES_REMEMBERED) this.#firesSeen.delete(this.#firesSeen.keys().next().value!);
    respond(encodeMessage({ t: 'answer', error }));
  }

  /** Starts a turn fired at this node: null once started, else why not. */
  #startFired(m: Message<'fire'>): string | null {
    if (!this.#p.agents.has(m.agent)) return `agent "${m.agent}" no longer exists`;
    // The chain continues here with the budget it carried; the depth travels too.
    const chain = this.#p.bus.carriedChain(m.budget);
    const ok = this.#p.pool.sendFor(busTurn(m.agent, m.source, m.payload, m.depth, chain, m.turn_id));
    if (!ok) this.#p.bus.chainTurnEnded(chain);
    return ok ? null : 'queue full';
  }

  close(): void {
    if (this.#watchingHere) {
      this.#watchingHere = false;
      this.#sayWatching();
    }
    this.#closed = true;
    clearInterval(this.#watchTimer);
    for (const s of this.#subs) s.unsubscribe();
  }
}
