/** The wire contract of the daemon itself (PROTOCOL §4.9): liveness, authentication, statistics. */
import type { Empty } from './common.ts';

export interface Stats {
  version: string;
  uptime_secs: number;
  active_conversations: number;
  /** Approximate bytes the histories of the conversations in memory hold, all shards together. */
  conversation_bytes: number;
  registered_agents: number;
  active_model: string;
  workers: number;
  subscriptions: number;
  connections: number;
  /** Open connections per listener. */
  connections_by_listener: { unix: number; tcp: number; http: number };
  /** Connections refused with 429 since start, per listener. */
  refused_connections: { unix: number; tcp: number; http: number };
  /** TCP and HTTP connections not authenticated yet, and those closed to make room for newer ones (PROTOCOL §6). */
  unauthenticated_connections: number;
  unauthenticated_evicted: number;
  /** Searches running now, and those ended past search_timeout_ms or cancelled (their client disconnected), since start. */
  searches_in_progress: number;
  searches_timed_out: number;
  searches_cancelled: number;
  /** Open `subscribe_events` streams, all connections together. */
  observers: number;
  /** Fired turns dropped because their chain reached `max_chain_turns`, since start. */
  chain_turns_dropped: number;
  /** Worker threads replaced because they stopped answering, since start. */
  shard_stalls: number;
  /** Fired turns dropped because their conversation's queue was full, since start. */
  queued_turns_dropped: number;
  /** Output buffers main handed back to their shard for reuse once written, since start. */
  output_buffers_returned: number;
  /** The configured limits in force, each answered with 429 when reached. */
  limits: Record<string, number>;
  /** Cluster mode only (absent on a single node). */
  cluster?: ClusterStats;
}

/** One node as the answering node sees it in the cluster's bucket. */
export interface ClusterNodeStats {
  node: string;
  /** Counted live now (its last heartbeat is younger than `lease_ms`; for the answering node, its own lease is valid). */
  live: boolean;
  /** Its heartbeat says it is draining (`drain`): partitions no longer go to it. */
  draining: boolean;
  /** Partitions the bucket records it as owning. */
  partitions: number;
  /** Milliseconds since the answering node saw its last heartbeat (its lease's age). */
  lease_age_ms: number;
}

/** `get_stats`' `cluster` section. */
export interface ClusterStats {
  name: string;
  node: string;
  partitions: number;
  lease_ms: number;
  live_nodes: string[];
  /** Every node with a heartbeat in the bucket, sorted by name. */
  nodes: ClusterNodeStats[];
  /** Partitions no node owns in the bucket now. */
  unowned_partitions: number;
  served_partitions: number;
  /** Milliseconds this node may still serve without another acknowledged heartbeat (0: it serves nothing). */
  lease_left_ms: number;
  /** Requests forwarded to other nodes (each try), since start. */
  forwarded: number;
  /** Requests run here for other nodes, since start. */
  served_for_others: number;
  /** Requests held while their partition changed hands, since start. */
  held: number;
}

/** `reload_config`'s reply: the settings applied live, and those that changed but take effect at the next start. */
export interface ReloadReport {
  /** Config file keys (`max_agents`, `providers`, `log_level`) and `agents.NAME` for each agent created or replaced. */
  applied: string[];
  restart_required: string[];
}

/** `drain`'s reply, once the node serves no partition. */
export interface DrainReport {
  node: string;
  /** Partitions it served when the drain began, now handed to the other nodes. */
  released: number;
}

export interface AdminOperations {
  ping: { args: Empty; variant: 'pong'; reply: Empty };
  auth: { args: { token: string }; variant: 'pong'; reply: Empty };
  get_stats: { args: Empty; variant: 'stats'; reply: Stats };
  reload_config: { args: Empty; variant: 'reloaded'; reply: ReloadReport };
  drain: { args: Empty; variant: 'drained'; reply: DrainReport };
}
