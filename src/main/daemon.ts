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
import { preparePrivateHome } from './private-files.ts';
import { resolveTcpToken } from './net/token.ts';
import { ConnectionLimiter } from './net/connection-limit.ts';
import { ShardPool } from './hosts/shard-pool.ts';
import { limitsOf } from './limits.ts';
import { ObserverHub } from './bus/observers.ts';
import { StoragePool } from './hosts/storage-pool.ts';
import { startWriter, type WriterHost } from './hosts/writer-host.ts';
import { McpHub } from './hosts/mcp-hub.ts';
import { LocalTopology } from './local-topology.ts';
import type { Topology } from './topology.ts';
import { startSchedules } from './schedules/start.ts';
import type { ScheduleEngine } from './schedules/schedule-engine.ts';
import { startWebhooks } from './webhooks/start.ts';
import type { WebhookHub } from './webhooks/webhook-hub.ts';
import { MetricsService } from './metrics/metrics-service.ts';
import { registerDaemonCounters } from './metrics/daemon-counters.ts';
import { bothSinks, startTracing, tracing, type Tracing } from './traces/tracing.ts';
import { TurnRates } from './dashboard/turn-rates.ts';
import { DashboardRoutes } from './dashboard/dashboard-routes.ts';
import { buildDashboard } from './dashboard/snapshot.ts';
import { TurnLedger, type OpenTurn } from './turn-ledger.ts';
import { collectStats } from './ops/admin.ts';
import type { DispatchContext } from './ops/op-table.ts';
import { authenticator, TokenService } from './auth/token-service.ts';
import { guardedDispatch } from './auth/authorize.ts';
import type { Authenticate } from './auth/principal.ts';
import type { HttpRequester, RequesterHost } from './http/http-requester.ts';
import { createBus, createShardPool, openStorage, shardOutputs } from './daemon-parts.ts';
import { startHttp, type HttpListener } from './http/start.ts';
import { ConfigReloader, type LiveSettings } from './reload.ts';
import type { ReloadReport } from '../shared/wire/admin.ts';

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
  /** HTTP requests in flight, by requester id (the same id space as connections). */
  requesters: Map<number, HttpRequester>;
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
  tokens: TokenService;
  /** The home's token (admin) or a scoped one, to a Principal: what every transport authenticates with. */
  authenticate: Authenticate;
  /** `reload_config` and SIGHUP. */
  reloader: ConfigReloader;
}

export class Daemon implements ConnectionHost, RequesterHost {
  readonly config: ResolvedConfig;
  readonly log: Logger;
  readonly #parts: DaemonParts;
  readonly #servers: Server[] = [];
  #nextConnId = 1;
  #closed: Promise<void> | null = null;
  #tcpPort: number | null = null;
  #http: HttpListener | null = null;
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
      if (config.http !== null) {
        this.#http = await startHttp(config, { ...this.#parts, host: this, authenticate: this.#parts.connectionLimits.token === null ? null : this.#parts.authenticate });
        this.#ownedFiles.push(join(config.home, 'run', 'http.port'));
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
    const id = this.nextId();
    this.#parts.connections.set(id, new Connection(id, socket, transport, this, this.#parts.connectionLimits));
  }

  nextId(): number {
    return this.#nextConnId++;
  }

  register(requester: HttpRequester): void {
    this.#parts.requesters.set(requester.id, requester);
  }

  dispatch(conn: Connection, req: number, body: Record<string, unknown>): void {
    this.#parts.dispatch(conn, req, body);
  }

  closed(conn: Connection | HttpRequester, cancelTurns: boolean): void {
    this.#parts.connections.delete(conn.id);
    this.#parts.requesters.delete(conn.id);
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
    this.#parts.tokens.stop();
    this.#parts.topology.leave();
    // Stop accepting now; a server's close completes only once its connections end (teardown).
    const serversClosed = Promise.all([...this.#servers.map(closeServer), this.#http?.close(false)]);
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
    await this.#http?.close(true);
    // Before the shards go: a cluster node releases its partitions, so other nodes take them at once.
    await this.#parts.topology.stop();
    await this.#parts.pool.close();
    await this.#parts.writer?.close();
    await this.#parts.mcp.close();
    await this.#parts.storage?.close();
    await tracing.now?.shutdown().catch((err: unknown) => this.#parts.log.warn({ err: String(err) }, 'exporting the last traces failed'));
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
  // Prometheus metrics cost nothing while off: no histograms, no registry.
  const metrics = config.metrics === null ? null : new MetricsService();
  // The live view's turn rates are always kept (agentctl top works without metrics); they hand each turn on to the metrics.
  const rates = new TurnRates(metrics?.turns ?? null);
  // Main's warnings and errors join the live view's recent errors.
  const log = createLogger(config.logLevel, { thread: 'main' }, (level, message, fields) => rates.logged(level, message, fields));
  preparePrivateHome(config.home, log);
  const limitLog = new LimitLog(log);
  const limiter = new ConnectionLimiter(config.maxConnections, limitLog);
  const connectionLimits: ConnectionLimits = { ...config, token: resolveTcpToken(config, log), onAuthenticated: (s) => limiter.authenticated(s) };
  const store = config.persist ? config.store : null;
  const writeLock = createWriteLockBuffer();
  const traces: Tracing | null = config.otlp === null ? null : await startTracing(config.otlp, config.cluster?.node ?? null, (seq: number): OpenTurn | undefined => ledger.get(seq), log);
  const ledger: TurnLedger = new TurnLedger(bothSinks(rates, traces));
  const pool = createShardPool(config, { writeLock, log, ledger, metrics, traces });
  // The topology first: a cluster node that cannot reach NATS fails before anything else starts.
  // Imported only for a cluster node: NATS and the cluster's modules are a good part of a single node's start-up.
  const topology = config.cluster === null ? new LocalTopology(pool) : await (await import('../cluster/cluster-topology.ts')).registerCluster({ config, pool, log });
  const { storage, startup } = await openStorage(config, store, writeLock, log);
  const writer = store?.kind === 'sqlite' ? await startWriter(config, store.path, writeLock, log) : null;
  const agents = new AgentRegistry(startup.agents, DEFAULT_AGENT_NAME);
  const lifecycle: Lifecycle = { closing: false };
  const connections = new Map<number, Connection>();
  const requesters = new Map<number, HttpRequester>();
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
  const tokens = new TokenService({ storage, log, live: () => [...connections.values(), ...requesters.values()] });
  connectionLimits.authenticate = tokens.authenticate;
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
    tokens,
    dashboard: { rates, perShard: () => ledger.perShard(config.workers) },
  };
  const dispatch = createDispatch(dispatchContext, limitLog);
  if (metrics !== null) registerDaemonCounters(metrics.registry, () => connections.values());
  metrics?.serve(new DashboardRoutes(() => buildDashboard(dispatchContext), log));
  metrics?.attach({ gather: () => pool.collectTallies(), stats: () => collectStats(dispatchContext), turns: () => ledger.perShard(config.workers), walPath: store?.kind === 'sqlite' ? `${store.path}-wal` : null });
  // Clients' (and harnesses') requests go where the topology sends them.
  const entry = guardedDispatch(topology.entry(dispatch));
  const harness = new HarnessHost(entry, agents);
  const outputs = shardOutputs(config, { agents, store, writeLock, harness, mcp, writer, topology, connections, requesters, bus, log, agentEvents, live });
  writer?.onReplaced(() => pool.giveWriterPorts(() => writer.portForShard()));
  await Promise.all([pool.start(outputs), mcp.ready]);
  await topology.serve({ storage, local: dispatch, agents, bus, observers, onAgentsChanged: () => mcp.sync(), closing: () => lifecycle.closing });
  await schedules.start();
  await webhooks.start();
  tokens.startSweeping();
  return { config, log, lifecycle, connections, requesters, pool, storage, writer, observers, mcp, dispatch: entry, connectionLimits, limiter, topology, schedules, webhooks, metrics, tokens, authenticate: authenticator(connectionLimits.token, tokens), reloader };
}

export function startDaemon(config: ResolvedConfig, reread?: () => ResolvedConfig): Promise<Daemon> {
  return Daemon.start(config, reread);
}
