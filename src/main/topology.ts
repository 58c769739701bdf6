/**
 * What differs between one node and many (cluster mode): where a pair's
 * requests and fired turns run, what the other nodes must hear (agent and
 * subscription changes, agent events, observers coming and going), and the
 * stand-in connections of calls other nodes forwarded here. The composition
 * root (daemon.ts) builds one topology, local (local-topology.ts) or the
 * cluster's (src/cluster/cluster-topology.ts), and wires every part to it
 * the same way.
 */
import type { ResolvedConfig } from '../shared/config.ts';
import type { Logger } from '../shared/log.ts';
import type { SharedFencesInit } from '../shared/threads/shard-messages.ts';
import type { ClusterStats, DrainReport } from '../shared/wire/ops.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { EventBus, SubscriptionInfo } from './bus/event-bus.ts';
import type { ObserverHub } from './bus/observers.ts';
import type { Dispatch } from './dispatch.ts';
import type { ShardPool } from './hosts/shard-pool.ts';
import type { StoragePool } from './hosts/storage-pool.ts';

/** The daemon as a topology first sees it, before its other parts exist (the pool only queues until started). */
export interface TopologyHost {
  config: ResolvedConfig;
  pool: ShardPool;
  log: Logger;
}

/** The daemon's parts a topology serves with, once they exist and the shards started. */
export interface ServingParts {
  storage: StoragePool | null;
  /** This node's own dispatch: what a request served here goes to. */
  local: Dispatch;
  agents: AgentRegistry;
  bus: EventBus;
  observers: ObserverHub;
  /** After any change of the agents (the MCP thread follows them). */
  onAgentsChanged(): void;
  /** True once shutdown began. */
  closing(): boolean;
}

/** Where a forwarded call's frames go: its stand-in connection. */
export interface FrameSink {
  write(frames: Uint8Array): void;
}

/** Agent changes the other nodes must hear. */
export interface AgentChanges {
  agentChanged(name: string): void;
  /** Before an agent's rows are deleted: no other node may still write for it. */
  purgeElsewhere(name: string): Promise<void>;
}

export interface Topology {
  /** The dispatch clients' and harnesses' requests go through, given this node's own. */
  entry(local: Dispatch): Dispatch;
  /** Starts a fired subscription's turn in chain `chain` where its pair runs (under `turnId`, if any); false if it could not start. */
  fire(sub: SubscriptionInfo, payload: string, depth: number, chain: number, turnId: string | null): boolean;
  /** This node's observers came (true) or all went (false): whether the shards emit agent events. */
  watchingChanged(watching: boolean): void;
  /** Agent events of turns run here, after this node's observers had them. */
  agentEvents(agents: readonly string[], bodies: readonly Uint8Array[]): void;
  /** Set when other nodes share the subscription table through the store (the bus then claims `once` rows, and reports changes). */
  readonly sharedSubscriptions: { changed(): void } | undefined;
  readonly agentChanges: AgentChanges;
  /** The stand-in connection of a call another node forwarded here. */
  forwarded(conn: number): FrameSink | undefined;
  /** A client connection closed: what it has under way elsewhere is cancelled. */
  connClosed(conn: number): void;
  /** The partition tokens the shards fence their writes with; null when nothing is fenced. */
  readonly fences: SharedFencesInit | null;
  /** For get_stats; null on a single node. */
  stats(): ClusterStats | null;
  /** Begins serving, once the daemon's parts exist and the shards started. */
  serve(parts: ServingParts): Promise<void>;
  /** `drain`: hands every partition to the other nodes; resolves once this node serves none. Null on a single node. */
  readonly drain: (() => Promise<DrainReport>) | null;
  /** Shutdown's first step (new work is refused from here on). */
  leave(): void;
  /** Shutdown, after the connections closed and before the shards stop. */
  stop(): Promise<void>;
}
