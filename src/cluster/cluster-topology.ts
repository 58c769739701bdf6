/**
 * Many nodes: the cluster's topology (src/main/topology.ts). Its node
 * (router.ts) routes pair requests to their partitions' owners and serves
 * the calls other nodes forward here; its sync (sync.ts) fires subscriptions
 * at their pairs' owners and tells the other nodes of agent and subscription
 * changes and of agent events. Until it serves, it behaves as one node.
 */
import type { SubscriptionInfo } from '../main/bus/event-bus.ts';
import type { Dispatch } from '../main/dispatch.ts';
import { reloadStoredState } from '../main/startup-state.ts';
import type { AgentChanges, FrameSink, ServingParts, Topology, TopologyHost } from '../main/topology.ts';
import { busTurn } from '../main/turn-request.ts';
import type { ClusterSettings } from '../shared/config.ts';
import type { SharedFencesInit } from '../shared/threads/shard-messages.ts';
import type { ClusterStats, DrainReport } from '../shared/wire/ops.ts';
import { ClusterNode } from './router.ts';
import { ClusterSync } from './sync.ts';

/**
 * Joins the daemon to its cluster, as a plugin joins its host: connects to
 * NATS at once (a node that cannot reach it fails before anything else
 * starts) and returns the topology the daemon wires its parts to.
 */
export async function registerCluster(host: TopologyHost): Promise<ClusterTopology> {
  const settings = host.config.cluster;
  if (settings === null) throw new Error('registerCluster: the configuration names no cluster');
  return new ClusterTopology(host, settings, await ClusterNode.connect({ settings, log: host.log }));
}

export class ClusterTopology implements Topology {
  readonly #host: TopologyHost;
  readonly #settings: ClusterSettings;
  readonly #node: ClusterNode;
  /** Set once the node serves. */
  #serving: { sync: ClusterSync; parts: ServingParts } | null = null;
  readonly fences: SharedFencesInit;
  readonly sharedSubscriptions = { changed: (): void => this.#serving?.sync.subscriptionsChanged() };
  readonly agentChanges: AgentChanges = {
    agentChanged: (name) => this.#serving?.sync.agentChanged(name),
    purgeElsewhere: (name) => this.#serving?.sync.purgeElsewhere(name) ?? Promise.resolve(),
  };

  constructor(host: TopologyHost, settings: ClusterSettings, node: ClusterNode) {
    this.#host = host;
    this.#settings = settings;
    this.#node = node;
    this.fences = { partitions: node.fences.partitions, buffer: node.fences.buffer };
  }

  /** Pair operations go to their owners; the rest, and those served here, to this node's dispatch (given at `serve`). */
  entry(): Dispatch {
    return this.#node.route;
  }

  fire(sub: SubscriptionInfo, payload: string, depth: number, chain: number, turnId: string | null): boolean {
    if (this.#serving === null) return this.#host.pool.sendFor(busTurn(sub.target_agent, sub.source, payload, depth, chain, turnId));
    const { sync, parts } = this.#serving;
    const where = sync.fire(sub, payload, depth, chain, turnId);
    // A turn sent to another node ends there: it no longer holds this node's chain open (after this publish settles).
    if (where === 'sent' && chain !== 0) queueMicrotask(() => parts.bus.chainTurnEnded(chain));
    return where !== false;
  }

  /** Other nodes' observers count too, once the node serves. */
  watchingChanged(watching: boolean): void {
    if (this.#serving === null) this.#host.pool.broadcast({ type: 'observe', watching });
    else this.#serving.sync.setWatchingHere(watching);
  }

  /** To the other nodes' observers (`chain_cut` as well as the shards'). */
  agentEvents(agents: readonly string[], bodies: readonly Uint8Array[]): void {
    this.#serving?.sync.agentEvents(agents, bodies);
  }

  forwarded(conn: number): FrameSink | undefined {
    return this.#node.forwarded(conn);
  }

  connClosed(conn: number): void {
    this.#node.connClosed(conn);
  }

  stats(): ClusterStats {
    return this.#node.stats();
  }

  async serve(parts: ServingParts): Promise<void> {
    const { config, pool, log } = this.#host;
    const storage = parts.storage;
    if (storage === null) throw new Error('cluster mode needs the store every node shares: persistence cannot be off');
    const node = this.#node;
    const settings = this.#settings;
    await node.start({ pool, storage, local: parts.local, defaultSender: config.defaultSender, highWaterBytes: config.highWaterBytes, hardLimitBytes: config.hardLimitBytes, closing: parts.closing });
    const sync = new ClusterSync({
      nc: node.nc, name: settings.name, node: settings.node, partitions: settings.partitions,
      agents: parts.agents, pool, bus: parts.bus, reload: () => reloadStoredState(storage, config, log), holds: (p) => node.holds(p), liveNodes: () => node.liveNodes(),
      onAgentsChanged: parts.onAgentsChanged, holdMs: node.holdMs, leaseMs: settings.lease_ms, observers: parts.observers, log,
    });
    this.#serving = { sync, parts };
    node.onStop(() => sync.close());
    log.info({ node: settings.node, cluster: settings.name }, 'cluster node serving');
  }

  readonly drain = (): Promise<DrainReport> => this.#node.drain();

  leave(): void {
    this.#node.beginLeave();
  }

  stop(): Promise<void> {
    return this.#node.stop();
  }
}
