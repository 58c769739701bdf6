/**
 * The daemon: starts shards, then listeners; shuts down in phases.
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
import { validateAgentConfig, type AgentConfig, type ResolvedConfig } from '../shared/config.ts';
import type { Db } from '../shared/db.ts';
import { createLogger, type Logger } from '../shared/log.ts';
import { AgentRegistry } from './agent-registry.ts';
import { AgentService } from './agent-service.ts';
import { HarnessHost } from './harness-host.ts';
import { SkillCatalogue } from './skills.ts';
import { DEFAULT_AGENT_NAME } from './config-load.ts';
import { Connection, type ConnectionHost } from './connection.ts';
import { createDispatch, type Dispatch } from './dispatch.ts';
import { closeServer, listenTcp, listenUnix } from './listeners.ts';
import { ShardPool } from './shard-pool.ts';
import { EventBus, type SubscriptionInfo } from './event-bus.ts';
import { ObserverHub } from './observers.ts';
import { BUS_CONN, type TurnRequest } from '../shared/threads.ts';
import { StoragePool } from './storage-pool.ts';
import { CHECKPOINT_INTERVAL_MS, prepareDatabaseFile } from '../shared/db.ts';
import { createWriteLockBuffer } from '../shared/write-lock.ts';
import { preparePrivateHome, tightenDatabaseFiles } from './private-files.ts';
import { resolveTcpToken } from './token.ts';
import { ConnectionLimiter } from './connection-limit.ts';

/** Test-only: a turn whose content equals this crashes its shard (README, "Testing"). */
const CRASH_TOKEN_ENV = 'AGENTD_TEST_CRASH_TOKEN';
/** How long a closing connection may take to flush before it is cut. */
const CONNECTION_CLOSE_MS = 500;

export interface DaemonAddresses {
  socketPath: string;
  tcp: { host: string; port: number } | null;
}

export class Daemon implements ConnectionHost {
  readonly config: ResolvedConfig;
  readonly log: Logger;
  readonly #connections = new Map<number, Connection>();
  readonly #servers: Server[] = [];
  #pool: ShardPool | null = null;
  #storage: StoragePool | null = null;
  #observers: ObserverHub | null = null;
  #dispatch: Dispatch | null = null;
  #nextConnId = 1;
  #closing = false;
  #closed: Promise<void> | null = null;
  #tcpPort: number | null = null;
  /** Files this daemon created, and only those, are removed at the end (never a live peer's). */
  #ownedFiles: string[] = [];

  constructor(config: ResolvedConfig) {
    this.config = config;
    this.log = createLogger(config.logLevel, { thread: 'main' });
  }

  get portFile(): string {
    return join(this.config.home, 'run', 'agentd.port');
  }

  get addresses(): DaemonAddresses {
    const tcp = this.config.tcp === null || this.#tcpPort === null ? null : { host: this.config.tcp.host, port: this.#tcpPort };
    return { socketPath: this.config.socketPath, tcp };
  }

  async start(): Promise<void> {
    const { config } = this;
    preparePrivateHome(config.home, this.log);
    const limits = { ...config, token: resolveTcpToken(config, this.log) };
    const limiter = new ConnectionLimiter(config.maxConnections);
    let agentConfigs = config.agents;
    const crashToken = process.env[CRASH_TOKEN_ENV] || null;
    const dbPath = config.persist ? join(config.home, 'agentd.db') : null;
    let stored: SubscriptionInfo[] = [];
    if (dbPath !== null) {
      tightenDatabaseFiles(dbPath, this.log);
      // Start-up is the one time main touches the database synchronously.
      prepareDatabaseFile(dbPath, (db) => {
        stored = db
          .prepare<[], { id: number; source: string; target_agent: string; once: number }>('SELECT id, source, target_agent, once FROM subscriptions ORDER BY id')
          .all()
          .map((r) => ({ ...r, once: r.once === 1 }));
        agentConfigs = loadAgents(db, config, this.log);
      });
    }
    const agents = new AgentRegistry(agentConfigs, DEFAULT_AGENT_NAME);
    const memoryPerShard = Math.ceil(config.memoryConversations / config.workers);
    const writeLock = createWriteLockBuffer();
    if (dbPath !== null) {
      this.#storage = new StoragePool(config.storageThreads, dbPath, writeLock, (err) => this.log.error({ err }, 'a storage thread failed'));
      this.#storage.startCheckpoints(CHECKPOINT_INTERVAL_MS, (err) => this.log.warn({ err }, 'checkpoint failed'));
    }
    if (crashToken !== null) this.log.warn(`${CRASH_TOKEN_ENV} is set: shard fault injection is on (tests only)`);

    // The harness host runs capability calls through the same dispatch as sockets (bound below).
    const harness = new HarnessHost(() => this.#dispatch!, agents);
    const pool = new ShardPool({
      count: config.workers,
      init: (index) => ({ index, shards: config.workers, agents: agents.all(), providers: config.providers, home: config.home, logLevel: config.logLevel, crashToken, dbPath, memoryConversations: memoryPerShard, writeLock, harnessPort: harness.portForShard() }),
      writeLock,
      deliver: (conn, frames) => this.#connections.get(conn)?.write(frames),
      agentEvents: (agentNames, bodies) => observers.broadcast(agentNames, bodies),
      finished: ({ agent, text, depth }) => {
        bus.publish(`agent:${agent}:done`, text, depth).catch((err: unknown) => this.log.error({ err, agent }, 'publishing a done event failed'));
      },
      log: this.log,
    });
    this.#pool = pool;
    const observers = new ObserverHub((watching) => pool.broadcast({ t: 'observe', on: watching }));
    this.#observers = observers;
    const bus = new EventBus(
      {
        storage: this.#storage,
        log: this.log,
        fire: (sub, payload, depth) => {
          if (!agents.has(sub.target_agent)) {
            this.log.warn({ subscription: sub.id, agent: sub.target_agent }, 'fired subscription names an agent that no longer exists');
            return false;
          }
          const sender = `event:${sub.source}`;
          const turn: TurnRequest = {
            t: 'turn', conn: BUS_CONN, req: 0, mode: 'event', agent: sub.target_agent, sender, content: payload,
            guest: null, ephemeral: false, correlationId: null, onBusy: 'enqueue', toolChoice: null, depth,
          };
          pool.send(pool.shardFor(sub.target_agent, sender), turn);
          return true;
        },
      },
      stored,
    );
    await pool.start();

    this.#dispatch = createDispatch({
      pool,
      storage: this.#storage,
      bus,
      observers,
      agents,
      skills: new SkillCatalogue(config.home, this.log),
      agentService: new AgentService({ agents, pool, storage: this.#storage, bus, providers: config.providers, log: this.log }),
      defaultSender: config.defaultSender,
      startedAt: Date.now(),
      connections: () => this.#connections.size,
      transportStats: () => limiter.stats(),
      closing: () => this.#closing,
    });

    const onSocket = limiter.admit((socket: Socket, transport: 'unix' | 'tcp'): void => {
      if (this.#closing) {
        socket.destroy();
        return;
      }
      const id = this.#nextConnId++;
      this.#connections.set(id, new Connection(id, socket, transport, this, limits));
    });
    try {
      this.#servers.push(await listenUnix(config.socketPath, onSocket));
      this.#ownedFiles.push(config.socketPath);
      if (config.tcp !== null) {
        const server = await listenTcp(config.tcp, limits.token, this.portFile, onSocket);
        this.#servers.push(server);
        this.#ownedFiles.push(this.portFile);
        const addr = server.address();
        this.#tcpPort = typeof addr === 'object' && addr !== null ? addr.port : config.tcp.port;
      }
    } catch (err) {
      await this.#teardown();
      throw err;
    }
    this.log.info({ socket: config.socketPath, tcp: this.addresses.tcp, workers: config.workers }, 'agentd started');
  }

  dispatch(conn: Connection, req: number, body: Record<string, unknown>): void {
    this.#dispatch!(conn, req, body);
  }

  closed(conn: Connection, cancelTurns: boolean): void {
    this.#connections.delete(conn.id);
    this.#observers?.connClosed(conn.id);
    if (cancelTurns) this.#pool?.broadcast({ t: 'conn_closed', conn: conn.id });
  }

  close(): Promise<void> {
    this.#closed ??= this.#shutdown();
    return this.#closed;
  }

  async #shutdown(): Promise<void> {
    this.#closing = true;
    // Stop accepting now; a server's close completes only once its connections end (teardown).
    const serversClosed = Promise.all(this.#servers.map(closeServer));
    this.#observers?.closeAll();
    const pool = this.#pool;
    if (pool !== null) {
      pool.broadcast({ t: 'shutdown' });
      const deadline = sleep(this.config.shutdownGraceMs, undefined, { ref: false });
      const timedOut = await Promise.race([pool.idle().then(() => false), deadline.then(() => true)]);
      if (timedOut) this.log.warn({ inflight: pool.inflight }, 'shutdown grace period ended with turns still running');
    }
    await this.#teardown();
    await serversClosed;
  }

  async #teardown(): Promise<void> {
    this.#closing = true;
    // Let queued replies reach their sockets, then close them.
    await Promise.all([...this.#connections.values()].map((c) => c.endAndWait(CONNECTION_CLOSE_MS)));
    for (const server of this.#servers) if (server.listening) server.close();
    await this.#pool?.close();
    await this.#storage?.close();
    for (const f of this.#ownedFiles) rmSync(f, { force: true });
  }
}

/**
 * The agents of a database: seeded from the config file on the first start
 * only, then managed over the protocol. A stored agent that no longer
 * validates (its provider left the file, say) is still loaded; its turns
 * then fail with a clear error rather than the daemon refusing to start.
 */
function loadAgents(db: Db, config: ResolvedConfig, log: Logger): Record<string, AgentConfig> {
  const seeded = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'agents_seeded'").get();
  if (seeded === undefined) {
    const at = new Date().toISOString();
    const insert = db.prepare<[string, string, string, string]>('INSERT OR REPLACE INTO agents (name, config, created_at, updated_at) VALUES (?, ?, ?, ?)');
    db.transaction(() => {
      for (const [name, agent] of Object.entries(config.agents)) insert.run(name, JSON.stringify(agent), at, at);
      db.prepare("INSERT INTO meta (key, value) VALUES ('agents_seeded', ?)").run(at);
    })();
  }
  const providers = Object.keys(config.providers);
  const out: Record<string, AgentConfig> = {};
  for (const row of db.prepare<[], { name: string; config: string }>('SELECT name, config FROM agents ORDER BY name').all()) {
    const raw = JSON.parse(row.config) as Record<string, unknown>;
    const own = typeof raw.provider === 'string' ? [raw.provider] : [];
    try {
      out[row.name] = validateAgentConfig(raw, 'database', `agents.${row.name}`, [...providers, ...own]);
    } catch (err) {
      log.error({ agent: row.name, err: (err as Error).message }, 'a stored agent does not validate; it is not loaded');
    }
  }
  return out;
}

export async function startDaemon(config: ResolvedConfig): Promise<Daemon> {
  const daemon = new Daemon(config);
  await daemon.start();
  return daemon;
}
