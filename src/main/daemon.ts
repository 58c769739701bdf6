/**
 * The daemon: builds its parts in dependency order, starts the shards, then
 * the listeners; shuts down in phases.
 *
 * Shutdown: (1) refuse new work (503); (2) stop accepting connections;
 * (3) cancel running turns ("shutting down") and wait for their final frames
 * under a deadline; (4) close connections, stop shards, remove the socket and
 * port files. `close()` is idempotent: a second caller awaits the first.
 */
import type { Server, Socket } from 'node:net';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ResolvedConfig } from '../shared/config.ts';
import { createLogger, type Logger } from '../shared/log.ts';
import { CHECKPOINT_INTERVAL_MS, INDEX_BATCH, INDEX_INTERVAL_MS } from '../storage/sqlite/db.ts';
import { createWriteLockBuffer } from '../storage/sqlite/write-lock.ts';
import { AgentRegistry } from './agent-registry.ts';
import { AgentService } from './agent-service.ts';
import { HarnessHost } from './hosts/harness-host.ts';
import { SkillCatalogue } from './skills.ts';
import { DEFAULT_AGENT_NAME } from './config-load.ts';
import { Connection, type ConnectionHost, type ConnectionLimits } from './net/connection.ts';
import { createDispatch, type Dispatch } from './dispatch.ts';
import { LimitLog } from './limit-log.ts';
import { closeServer, listenTcp, listenUnix } from './net/listeners.ts';
import { preparePrivateHome, tightenDatabaseFiles } from './private-files.ts';
import { resolveTcpToken } from './net/token.ts';
import { ConnectionLimiter } from './net/connection-limit.ts';
import { ShardPool, type ShardOutputs } from './hosts/shard-pool.ts';
import { EventBus, type SubscriptionInfo } from './bus/event-bus.ts';
import { limitsOf } from './limits.ts';
import { ObserverHub } from './bus/observers.ts';
import { StoragePool } from './hosts/storage-pool.ts';
import { WriterHost } from './hosts/writer-host.ts';
import { readStartupState, type StartupState } from './startup-state.ts';
import { describeStore, type StoreLocation } from '../shared/store-location.ts';
import { chainCutEvent } from './bus/chain-budget.ts';
import { McpHub } from './hosts/mcp-hub.ts';
import { registerCluster } from '../cluster/cluster-topology.ts';
import { LocalTopology } from './local-topology.ts';
import type { Topology } from './topology.ts';
import { startSchedules } from './schedules/start.ts';
import type { ScheduleEngine } from './schedules/schedule-engine.ts';
import { startWebhooks } from './webhooks/start.ts';
import type { WebhookHub } from './webhooks/webhook-hub.ts';
import { MetricsService } from './metrics/metrics-service.ts';
import { TurnLedger } from './turn-ledger.ts';
import { collectStats } from './ops/admin.ts';
import type { DispatchContext } from './ops/op-table.ts';
import { ConfigReloader, type LiveSettings } from './reload.ts';
import type { ReloadReport } from '../shared/wire/admin.ts';

/** Test-only: a turn whose content equals this crashes its shard (docs/configuration.md, "Test only"). */
const CRASH_TOKEN_ENV = 'AGENTD_TEST_CRASH_TOKEN';
/** Test-only: a turn whose content equals these crashes / freezes the turn writer thread (SQLite). */
const WRITER_CRASH_TOKEN_ENV = 'AGENTD_TEST_WRITER_CRASH_TOKEN';
const WRITER_STALL_TOKEN_ENV = 'AGENTD_TEST_WRITER_STALL_TOKEN';
/** How long a closing connection may take to flush before it is cut. */
const CONNECTION_CLOSE_MS = 500;

export interface DaemonAddresses {
  socketPath: string;
  tcp: { host: string; port: number } | null;
}

/** Whether shutdown has begun; shared with dispatch, which refuses new work from then on. */
interface Lifecycle {
  closing: boolean;
}

/** The daemon's finished parts, built in dependency order by `assemble`. */
interface DaemonParts {
  config: ResolvedConfig;
  log: Logger;
  lifecycle: Lifecycle;
  connections: Map<number, Connection>;
  pool: ShardPool;
  /** null when persistence is off. */
  storage: StoragePool | null;
  /** The turn writer thread (SQLite only). */
  writer: WriterHost | null;
  observers: ObserverHub;
  /** The MCP thread, owner of every MCP connection. */
  mcp: McpHub;
  dispatch: Dispatch;
  /** What each connection is held to; `token` is the TCP token in force (configured or from the token file). */
  connectionLimits: ConnectionLimits;
  /** Caps open connections per listener. */
  limiter: ConnectionLimiter;
  /** One node or many: where pairs run, and what other nodes hear. */
  topology: Topology;
  /** Schedules: time as an event source. */
  schedules: ScheduleEngine;
  /** Outbound webhooks: agent events to the outside world. */
  webhooks: WebhookHub;
  /** Prometheus metrics; null while `metrics` is off. */
  metrics: MetricsService | null;
  /** `reload_config` and SIGHUP. */
  reloader: ConfigReloader;
}

export class Daemon implements ConnectionHost {
  readonly config: ResolvedConfig;
  readonly log: Logger;
  readonly #parts: DaemonParts;
  readonly #servers: Server[] = [];
  #nextConnId = 1;
  #closed: Promise<void> | null = null;
  #tcpPort: number | null = null;
  /** Files this daemon created, and only those, are removed at the end (never a live peer's). */
  #ownedFiles: string[] = [];

  private constructor(parts: DaemonParts) {
    this.#parts = parts;
    this.config = parts.config;
    this.log = parts.log;
  }

  /** Builds every part, starts the shards, then listens; `reread` resolves the configuration again (reload_config, SIGHUP). */
  static async start(config: ResolvedConfig, reread: () => ResolvedConfig = () => config): Promise<Daemon> {
    const daemon = new Daemon(await assemble(config, reread));
    await daemon.#listen();
    return daemon;
  }

  get portFile(): string {
    return join(this.config.home, 'run', 'agentd.port');
  }

  get addresses(): DaemonAddresses {
    const tcp = this.config.tcp === null || this.#tcpPort === null ? null : { host: this.config.tcp.host, port: this.#tcpPort };
    return { socketPath: this.config.socketPath, tcp };
  }

  async #listen(): Promise<void> {
    const { config } = this;
    const onSocket = this.#parts.limiter.admit((socket: Socket, transport: 'unix' | 'tcp'): void => this.#accept(socket, transport));
    try {
      this.#servers.push(await listenUnix(config.socketPath, onSocket));
      this.#ownedFiles.push(config.socketPath);
      if (config.tcp !== null) {
        const server = await listenTcp(config.tcp, this.#parts.connectionLimits.token, this.portFile, onSocket);
        this.#servers.push(server);
        this.#ownedFiles.push(this.portFile);
        const addr = server.address();
        this.#tcpPort = typeof addr === 'object' && addr !== null ? addr.port : config.tcp.port;
      }
      if (config.metrics !== null) {
        const portFile = join(config.home, 'run', 'metrics.port');
        this.#servers.push(await this.#parts.metrics!.listen(config.metrics, this.#parts.connectionLimits.token, portFile, this.log));
        this.#ownedFiles.push(portFile);
      }
    } catch (err) {
      await this.#teardown();
      throw err;
    }
    this.log.info({ socket: config.socketPath, tcp: this.addresses.tcp, workers: config.workers }, 'agentd started');
  }

  #accept(socket: Socket, transport: 'unix' | 'tcp'): void {
    if (this.#parts.lifecycle.closing) {
      socket.destroy();
      return;
    }
    const id = this.#nextConnId++;
    this.#parts.connections.set(id, new Connection(id, socket, transport, this, this.#parts.connectionLimits));
  }

  dispatch(conn: Connection, req: number, body: Record<string, unknown>): void {
    this.#parts.dispatch(conn, req, body);
  }

  closed(conn: Connection, cancelTurns: boolean): void {
    this.#parts.connections.delete(conn.id);
    if (cancelTurns) this.#parts.topology.connClosed(conn.id);
    this.#parts.observers.connClosed(conn.id);
    this.#parts.mcp.events.connClosed(conn.id);
    this.#parts.storage?.cancelSearches(conn.id);
    if (cancelTurns) this.#parts.pool.broadcast({ type: 'conn_closed', conn: conn.id });
  }

  /** SIGHUP: as `reload_config`, the outcome logged; null when the file was refused. */
  reload(): Promise<ReloadReport | null> {
    return this.#parts.reloader.reloadAndLog();
  }

  close(): Promise<void> {
    this.#closed ??= this.#shutdown();
    return this.#closed;
  }

  async #shutdown(): Promise<void> {
    const { lifecycle, observers, pool } = this.#parts;
    lifecycle.closing = true;
    this.#parts.schedules.stop();
    this.#parts.webhooks.stop();
    this.#parts.topology.leave();
    // Stop accepting now; a server's close completes only once its connections end (teardown).
    const serversClosed = Promise.all(this.#servers.map(closeServer));
    observers.closeAll();
    this.#parts.mcp.events.closeAll();
    pool.broadcast({ type: 'shutdown' });
    const deadline = sleep(this.config.shutdownGraceMs, undefined, { ref: false });
    const timedOut = await Promise.race([pool.idle().then(() => false), deadline.then(() => true)]);
    if (timedOut) this.log.warn({ inflight: pool.inflight }, 'shutdown grace period ended with turns still running');
    await this.#teardown();
    await serversClosed;
  }

  async #teardown(): Promise<void> {
    this.#parts.lifecycle.closing = true;
    // Let queued replies reach their sockets, then close them.
    await Promise.all([...this.#parts.connections.values()].map((c) => c.endAndWait(CONNECTION_CLOSE_MS)));
    for (const server of this.#servers) if (server.listening) server.close();
    // Before the shards go: a cluster node releases its partitions, so other nodes take them at once.
    await this.#parts.topology.stop();
    await this.#parts.pool.close();
    await this.#parts.writer?.close();
    await this.#parts.mcp.close();
    await this.#parts.storage?.close();
    for (const f of this.#ownedFiles) rmSync(f, { force: true });
  }
}

/**
 * Builds the daemon's parts, each from parts already built: the pool is
 * created first (it only queues until started), so the topology, observers,
 * the bus and dispatch can use it; the shards start last, once everything
 * they feed exists, and then the topology serves.
 */
async function assemble(config: ResolvedConfig, reread: () => ResolvedConfig): Promise<DaemonParts> {
  const log = createLogger(config.logLevel, { thread: 'main' });
  preparePrivateHome(config.home, log);
  const limitLog = new LimitLog(log);
  const limiter = new ConnectionLimiter(config.maxConnections, limitLog);
  const connectionLimits: ConnectionLimits = { ...config, token: resolveTcpToken(config, log), onAuthenticated: (s) => limiter.authenticated(s) };
  const store = config.persist ? config.store : null;
  const writeLock = createWriteLockBuffer();
  // Metrics cost nothing while off: no meter on the ledger, no registry.
  const metrics = config.metrics === null ? null : new MetricsService();
  const ledger = new TurnLedger(metrics?.turns ?? null);
  const pool = new ShardPool({ count: config.workers, writeLock, log, stallMs: config.shardStallMs, maxQueuedTurns: config.maxQueuedTurns, maxInflightPerConnection: config.maxInflightPerConnection, ledger });
  // The topology first: a cluster node that cannot reach NATS fails before anything else starts.
  const topology = config.cluster === null ? new LocalTopology(pool) : await registerCluster({ config, pool, log });
  const { storage, startup } = await openStorage(config, store, writeLock, log);
  const writer = store?.kind === 'sqlite' ? await startWriter(config, store.path, writeLock, log) : null;
  const agents = new AgentRegistry(startup.agents, DEFAULT_AGENT_NAME);
  const lifecycle: Lifecycle = { closing: false };
  const connections = new Map<number, Connection>();
  const mcp = McpHub.start({ agents, home: config.home, logLevel: config.logLevel, log });
  mcp.events.limitWith(pool.budget);
  // The shards emit agent events while observers or webhooks want them.
  const webhooks = startWebhooks(config, storage, log, (want) => topology.watchingChanged(want || observers.count > 0));
  const observers = new ObserverHub((watching) => topology.watchingChanged(watching || webhooks.wantsEvents), config.maxObservers, pool.budget, { backlogBytes: config.observerBacklogBytes, stallMs: config.observerStallMs });
  /** Agent events (`chain_cut` as well as the shards'): to this node's observers, then wherever the topology shares them. */
  const agentEvents = (agentNames: readonly string[], bodies: readonly Uint8Array[]): void => {
    observers.broadcast(agentNames, bodies);
    topology.agentEvents(agentNames, bodies);
    webhooks.agentEvents(agentNames, bodies);
  };
  const bus = createBus(config, { storage, log, agents, topology, pool, agentEvents }, startup.subscriptions);
  const schedules = startSchedules(config, storage, bus, log);
  const agentService = new AgentService({ agents, pool, storage, bus, providers: config.providers, home: config.home, log, maxAgents: config.maxAgents, onChange: () => mcp.sync(), webhooks, cluster: topology.agentChanges });
  const live: LiveSettings = { providers: config.providers, logLevel: config.logLevel };
  const limits = { ...limitsOf(config) };
  const reloader = new ConfigReloader(config, reread, { log, live, agents, agentService, pool, bus, schedules, webhooks, limiter, limits });
  const dispatchContext: DispatchContext = {
    pool, storage, bus, observers, agents, agentService, mcp,
    skills: new SkillCatalogue(config.home, log),
    defaultSender: config.defaultSender,
    startedAt: Date.now(),
    connections: () => connections.size,
    transportStats: () => limiter.stats(),
    limits,
    reloader,
    closing: () => lifecycle.closing,
    clusterStats: () => topology.stats(),
    drain: topology.drain,
    schedules,
    webhooks,
    webhookHosts: config.webhookHosts,
  };
  const dispatch = createDispatch(dispatchContext, limitLog);
  metrics?.attach({ stats: () => collectStats(dispatchContext), turns: () => ledger.perShard(config.workers), walPath: store?.kind === 'sqlite' ? `${store.path}-wal` : null });
  // Clients' (and harnesses') requests go where the topology sends them.
  const entry = topology.entry(dispatch);
  const harness = new HarnessHost(entry, agents);
  const outputs = shardOutputs(config, { agents, store, writeLock, harness, mcp, writer, topology, connections, bus, log, agentEvents, live });
  writer?.onReplaced(() => pool.giveWriterPorts(() => writer.portForShard()));
  await Promise.all([pool.start(outputs), mcp.ready]);
  await topology.serve({ storage, local: dispatch, agents, bus, observers, onAgentsChanged: () => mcp.sync(), closing: () => lifecycle.closing });
  await schedules.start();
  await webhooks.start();
  return { config, log, lifecycle, connections, pool, storage, writer, observers, mcp, dispatch: entry, connectionLimits, limiter, topology, schedules, webhooks, metrics, reloader };
}

type AgentEvents = (agentNames: readonly string[], bodies: readonly Uint8Array[]) => void;

/** The event bus: a fired subscription's turn starts where the topology runs its pair. */
function createBus(
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

interface ShardFeeds {
  agents: AgentRegistry;
  store: StoreLocation | null;
  writeLock: SharedArrayBuffer;
  harness: HarnessHost;
  mcp: McpHub;
  writer: WriterHost | null;
  topology: Topology;
  connections: Map<number, Connection>;
  bus: EventBus;
  log: Logger;
  agentEvents: AgentEvents;
  /** The providers and log level in force (reload_config changes them): a replaced shard starts with these. */
  live: LiveSettings;
}

/** What each shard starts with, and where its outputs go. */
function shardOutputs(config: ResolvedConfig, f: ShardFeeds): ShardOutputs {
  const { topology, connections, bus, log } = f;
  const crashToken = process.env[CRASH_TOKEN_ENV] || null;
  if (crashToken !== null) log.warn(`${CRASH_TOKEN_ENV} is set: shard fault injection is on (tests only)`);
  const memoryPerShard = Math.ceil(config.memoryConversations / config.workers);
  return {
    init: (index) => ({
      index, shards: config.workers, agents: f.agents.all(), providers: f.live.providers, home: config.home, logLevel: f.live.logLevel,
      crashToken, store: f.store, memoryConversations: memoryPerShard, memoryBytes: Math.ceil(config.memoryBytes / config.workers), writeLock: f.writeLock,
      harnessPort: f.harness.portForShard(), mcpPort: f.mcp.portForShard(), writerPort: f.writer?.portForShard() ?? null, fences: topology.fences,
      runRetentionMs: config.runRetentionMs,
    }),
    // A forwarded call keeps views of the bytes: it takes no `written`, so their buffer stays in main.
    deliver: (conn, frames, written) => {
      const local = connections.get(conn);
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
async function openStorage(config: ResolvedConfig, store: StoreLocation | null, writeLock: SharedArrayBuffer, log: Logger): Promise<{ storage: StoragePool | null; startup: StartupState }> {
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

/** Starts the thread that commits every shard's turns (SQLite), once the store is prepared. */
function startWriter(config: ResolvedConfig, path: string, writeLock: SharedArrayBuffer, log: Logger): Promise<WriterHost> {
  const crashToken = process.env[WRITER_CRASH_TOKEN_ENV] || null;
  const stallToken = process.env[WRITER_STALL_TOKEN_ENV] || null;
  if (crashToken !== null || stallToken !== null) log.warn(`${WRITER_CRASH_TOKEN_ENV} or ${WRITER_STALL_TOKEN_ENV} is set: turn writer fault injection is on (tests only)`);
  return WriterHost.start({ path, writeLock, logLevel: config.logLevel, log, stallMs: config.shardStallMs, crashToken, stallToken });
}

export function startDaemon(config: ResolvedConfig, reread?: () => ResolvedConfig): Promise<Daemon> {
  return Daemon.start(config, reread);
}
