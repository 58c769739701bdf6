/**
 * The daemon's parts that assemble() (daemon.ts) builds from others: the
 * event bus, what each shard starts with and where its outputs go, and the
 * store opened before any shard starts.
 */
import type { ResolvedConfig } from '../shared/config.ts';
import type { Logger } from '../shared/log.ts';
import { CHECKPOINT_INTERVAL_MS, INDEX_BATCH, INDEX_INTERVAL_MS } from '../storage/sqlite/db.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { HarnessHost } from './hosts/harness-host.ts';
import type { Connection } from './net/connection.ts';
import { tightenDatabaseFiles } from './private-files.ts';
import { ShardPool, type ShardOutputs } from './hosts/shard-pool.ts';
import { CallMetrics } from './metrics/call-metrics.ts';
import type { MetricsService } from './metrics/metrics-service.ts';
import type { Tracing } from './traces/tracing.ts';
import type { TurnLedger } from './turn-ledger.ts';
import { EventBus, type SubscriptionInfo } from './bus/event-bus.ts';
import { StoragePool } from './hosts/storage-pool.ts';
import type { WriterHost } from './hosts/writer-host.ts';
import { readStartupState, type StartupState } from './startup-state.ts';
import { describeStore, type StoreLocation } from '../shared/store-location.ts';
import { chainCutEvent } from './bus/chain-budget.ts';
import type { McpHub } from './hosts/mcp-hub.ts';
import type { Topology } from './topology.ts';
import type { HttpRequester } from './http/http-requester.ts';
import type { LiveSettings } from './reload.ts';

/** Test-only: a turn whose content equals this crashes its shard (docs/configuration.md, "Test only"). */
const CRASH_TOKEN_ENV = 'AGENTD_TEST_CRASH_TOKEN';

/** The shards, counting their calls for the metrics and timing them for the traces only while each is on. */
export function createShardPool(
  config: ResolvedConfig,
  o: { writeLock: SharedArrayBuffer; log: Logger; ledger: TurnLedger; metrics: MetricsService | null; traces: Tracing | null },
): ShardPool {
  const calls = o.metrics === null ? null : new CallMetrics(o.metrics.registry);
  const traces = o.traces;
  return new ShardPool({
    count: config.workers, writeLock: o.writeLock, log: o.log, stallMs: config.shardStallMs, maxQueuedTurns: config.maxQueuedTurns,
    maxInflightPerConnection: config.maxInflightPerConnection, ledger: o.ledger,
    calls: { tallies: calls === null ? undefined : (t) => calls.add(t), spans: traces === null ? undefined : (r) => traces.spans(r) },
  });
}

export type AgentEvents = (agentNames: readonly string[], bodies: readonly Uint8Array[]) => void;

/** The event bus: a fired subscription's turn starts where the topology runs its pair. */
export function createBus(
  config: ResolvedConfig,
  p: { storage: StoragePool | null; log: Logger; agents: AgentRegistry; topology: Topology; pool: ShardPool; agentEvents: AgentEvents },
  subscriptions: readonly SubscriptionInfo[],
): EventBus {
  const { agents, log, topology, pool } = p;
  const fire = (sub: SubscriptionInfo, payload: string, depth: number, chain: number, turnId: string | null): boolean => {
    if (agents.has(sub.target_agent)) return topology.fire(sub, payload, depth, chain, turnId);
    log.warn({ subscription: sub.id, agent: sub.target_agent }, 'fired subscription names an agent that no longer exists');
    return false;
  };
  return new EventBus({
    storage: p.storage, log, fire, maxChainTurns: config.maxChainTurns, maxSubscriptions: config.maxSubscriptions,
    chainCut: (sub, max) => p.agentEvents([sub.target_agent], [chainCutEvent(sub, max)]),
    cluster: topology.sharedSubscriptions,
    doneWatchChanged: (watched) => pool.broadcast({ type: 'done_watch', agents: watched }),
  }, subscriptions);
}

export interface ShardFeeds {
  agents: AgentRegistry;
  store: StoreLocation | null;
  writeLock: SharedArrayBuffer;
  harness: HarnessHost;
  mcp: McpHub;
  writer: WriterHost | null;
  topology: Topology;
  connections: Map<number, Connection>;
  requesters: Map<number, HttpRequester>;
  bus: EventBus;
  log: Logger;
  agentEvents: AgentEvents;
  /** The providers and log level in force (reload_config changes them): a replaced shard starts with these. */
  live: LiveSettings;
}

/** What each shard starts with, and where its outputs go. */
export function shardOutputs(config: ResolvedConfig, f: ShardFeeds): ShardOutputs {
  const { topology, connections, bus, log } = f;
  const crashToken = process.env[CRASH_TOKEN_ENV] || null;
  if (crashToken !== null) log.warn(`${CRASH_TOKEN_ENV} is set: shard fault injection is on (tests only)`);
  const memoryPerShard = Math.ceil(config.memoryConversations / config.workers);
  return {
    init: (index) => ({
      index, shards: config.workers, agents: f.agents.all(), providers: f.live.providers, home: config.home, logLevel: f.live.logLevel,
      crashToken, store: f.store, memoryConversations: memoryPerShard, memoryBytes: Math.ceil(config.memoryBytes / config.workers), writeLock: f.writeLock,
      harnessPort: f.harness.portForShard(), mcpPort: f.mcp.portForShard(), writerPort: f.writer?.portForShard() ?? null, fences: topology.fences,
      runRetentionMs: config.runRetentionMs, observe: { metrics: config.metrics !== null, spans: config.otlp !== null },
    }),
    // A forwarded call keeps views of the bytes: it takes no `written`, so their buffer stays in main.
    deliver: (conn, frames, written) => {
      const local = connections.get(conn) ?? f.requesters.get(conn);
      if (local !== undefined) return local.write(frames, written);
      const forwarded = topology.forwarded(conn);
      if (forwarded !== undefined) forwarded.write(frames);
      else written?.(); // the connection is gone: nothing holds the bytes
    },
    agentEvents: f.agentEvents,
    finished: ({ agent, text, depth, chain }) => {
      bus.publish(`agent:${agent}:done`, text, depth, chain).catch((err: unknown) => log.error({ err, agent }, 'publishing a done event failed'));
    },
    chainTurnEnded: (chain) => bus.chainTurnEnded(chain),
  };
}

/**
 * Starts the storage threads and has one prepare the store (schema, agents
 * seeded once) and read the start-up state, before any shard starts. A store
 * that cannot be used (a newer schema, an unreachable server) fails the start
 * and is left as it was.
 */
export async function openStorage(config: ResolvedConfig, store: StoreLocation | null, writeLock: SharedArrayBuffer, log: Logger): Promise<{ storage: StoragePool | null; startup: StartupState }> {
  if (store === null) return { storage: null, startup: await readStartupState(null, config, log) };
  if (store.kind === 'sqlite') tightenDatabaseFiles(store.path, log);
  const storage = new StoragePool(config.storageThreads, { store, writeLock, logLevel: config.logLevel }, (err) => log.error({ err }, 'a storage thread failed'), config.searchTimeoutMs);
  let startup: StartupState;
  try {
    startup = await readStartupState(storage, config, log);
  } catch (err) {
    await storage.destroy();
    throw err;
  }
  log.info({ store: describeStore(store) }, 'store ready');
  storage.startMaintenance(CHECKPOINT_INTERVAL_MS, config.walMaxBytes, (err) => log.warn({ err }, 'store upkeep (checkpoint) failed'));
  storage.startIndexing(INDEX_INTERVAL_MS, INDEX_BATCH, (err) => log.warn({ err }, 'search indexing failed'));
  return { storage, startup };
}
