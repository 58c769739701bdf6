/**
 * Everything `get_stats` already counts, as Prometheus metrics: read once per
 * scrape (one `get_stats`, one pass over the open turns), so nothing is
 * counted twice and serving a request costs the metrics nothing.
 */
import { fileSize } from '../../storage/sqlite/db.ts';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Stats } from '../../shared/wire/ops.ts';

export interface GaugeSources {
  /** Runs first at each scrape (the shards ship their call tallies). */
  gather?(): Promise<void>;
  stats(): Promise<Stats>;
  /** Open turns per shard. */
  turns(): { running: number[]; queued: number[] };
  /** The SQLite write-ahead log, when the store is SQLite. */
  walPath: string | null;
}

type Setter = (s: Stats) => void;

/** Registers the gauges and counters; the returned refresh reads their sources (call it before each scrape). */
export function registerDaemonGauges(registry: Registry, sources: GaugeSources): () => Promise<void> {
  const setters: Setter[] = [];
  const gauge = (name: string, help: string, pick: (s: Stats) => number): void => {
    const g = new Gauge({ name, help, registers: [registry] });
    setters.push((s) => g.set(pick(s)));
  };
  const counter = (name: string, help: string, pick: (s: Stats) => number): void => {
    const c = new Counter({ name, help, registers: [registry] });
    setters.push((s) => {
      c.reset();
      c.inc(pick(s));
    });
  };
  const byListener = (name: string, help: string, pick: (s: Stats) => Record<string, number>, kind: 'gauge' | 'counter'): void => {
    const m = kind === 'gauge' ? new Gauge({ name, help, labelNames: ['listener'], registers: [registry] }) : new Counter({ name, help, labelNames: ['listener'], registers: [registry] });
    setters.push((s) => {
      m.reset();
      for (const [listener, n] of Object.entries(pick(s))) (m as Gauge).inc({ listener }, n);
    });
  };
  byListener('agentd_connections', 'Open client connections, by listener', (s) => s.connections_by_listener, 'gauge');
  byListener('agentd_connections_refused_total', 'Connections refused with 429 (max_connections), by listener', (s) => s.refused_connections, 'counter');
  gauge('agentd_connections_unauthenticated', 'TCP and HTTP connections not authenticated yet', (s) => s.unauthenticated_connections);
  counter('agentd_connections_unauthenticated_evicted_total', 'Unauthenticated TCP and HTTP connections closed to make room for newer ones', (s) => s.unauthenticated_evicted);
  gauge('agentd_conversations_in_memory', 'Conversations held in the shards\' memory', (s) => s.active_conversations);
  gauge('agentd_conversation_bytes', 'Approximate bytes of history held in memory (memory_bytes bounds it)', (s) => s.conversation_bytes);
  gauge('agentd_agents', 'Agents registered', (s) => s.registered_agents);
  gauge('agentd_bus_subscriptions', 'Event bus subscriptions', (s) => s.subscriptions);
  gauge('agentd_observers', 'Open subscribe_events streams', (s) => s.observers);
  counter('agentd_shard_stalls_total', 'Shards (worker threads) replaced because they stopped answering', (s) => s.shard_stalls);
  counter('agentd_queued_turns_dropped_total', 'Fired turns dropped because their conversation\'s queue was full', (s) => s.queued_turns_dropped);
  counter('agentd_bus_chain_turns_dropped_total', 'Fired turns dropped because their chain reached max_chain_turns', (s) => s.chain_turns_dropped);
  gauge('agentd_searches_in_progress', 'Session searches running now', (s) => s.searches_in_progress);
  counter('agentd_searches_timed_out_total', 'Session searches ended past search_timeout_ms', (s) => s.searches_timed_out);
  counter('agentd_searches_cancelled_total', 'Session searches cancelled because their client disconnected', (s) => s.searches_cancelled);
  gauge('agentd_cluster_partitions_served', 'Partitions this node serves (cluster mode)', (s) => s.cluster?.served_partitions ?? 0);
  const leaseAge = new Gauge({ name: 'agentd_cluster_lease_age_seconds', help: 'Age of each node\'s latest heartbeat, as this node sees it (cluster mode)', labelNames: ['node'], registers: [registry] });
  setters.push((s) => {
    leaseAge.reset();
    for (const n of s.cluster?.nodes ?? []) leaseAge.set({ node: n.node }, n.lease_age_ms / 1000);
  });
  const turns = new Gauge({ name: 'agentd_turns', help: 'Open turns per shard: running, or queued behind their conversation\'s running turn', labelNames: ['shard', 'state'], registers: [registry] });
  const wal = new Gauge({ name: 'agentd_sqlite_wal_bytes', help: 'Size of the SQLite write-ahead log (wal_max_bytes bounds it)', registers: [registry] });
  return async () => {
    await sources.gather?.();
    const stats = await sources.stats();
    for (const set of setters) set(stats);
    const open = sources.turns();
    turns.reset();
    open.running.forEach((n, shard) => turns.set({ shard: String(shard), state: 'running' }, n));
    open.queued.forEach((n, shard) => turns.set({ shard: String(shard), state: 'queued' }, n));
    if (sources.walPath !== null) wal.set(fileSize(sources.walPath));
  };
}
