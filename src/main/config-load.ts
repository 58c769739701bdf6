/**
 * Builds the resolved configuration from defaults, the config file, the
 * environment and command-line flags (in rising priority). Runs at
 * start-up, before anything listens, and again at each reload (SIGHUP,
 * `reload_config`: main/reload.ts), operator-driven and rare: synchronous
 * reads of one small file are fine here.
 */
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism, homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { DEFAULT_AGENT_NAME, DEFAULTS, deepFreeze, type ClusterSettings, type ResolvedConfig, type TcpAddress } from '../shared/config.ts';
import { ConfigError, defaultAgents, parseTcp, validateFileSettings, type FileSettings } from '../shared/config-checks.ts';
import { validateClusterSettings } from '../shared/cluster-settings.ts';
import { parseStoreUrl, type StoreLocation } from '../shared/store-location.ts';
import { checkHarnessModulesAtStart } from './hosts/harness-modules.ts';

export interface StartFlags {
  home?: string;
  workers?: number;
  /** "HOST:PORT" or "off". */
  tcp?: string;
  config?: string;
  logLevel?: string;
  /** `--metrics HOST:PORT | off`: the Prometheus metrics listener. */
  metrics?: string;
  /** `--http HOST:PORT | off`: the HTTP listener (REST + SSE). */
  http?: string;
  /** `--tcp-insecure`: TCP without a token (loopback addresses only). */
  tcpInsecure?: boolean;
  /** `--store URL`: overrides the file's `store`. */
  store?: string;
  /** `--cluster URL[,URL…]`: cluster mode on these NATS servers (overrides the file's `cluster.nats`). */
  cluster?: string;
  /** `--node NAME`: this node's name in the cluster (overrides the file's `cluster.node`). */
  node?: string;
}

export { ConfigError, DEFAULT_AGENT_NAME };

function readConfigFile(path: string): FileSettings {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(path, '(file)', `cannot be read: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(path, '(file)', `is not valid JSON: ${(err as Error).message}`);
  }
  return validateFileSettings(raw, path);
}

export function resolveConfig(flags: StartFlags, env: NodeJS.ProcessEnv = process.env): ResolvedConfig {
  const home = resolve(flags.home ?? env.AGENTD_HOME ?? join(homedir(), '.agentd'));
  const explicit = flags.config !== undefined ? resolve(flags.config) : null;
  const implicit = join(home, 'agentd.json');
  const configFile = explicit ?? (existsSync(implicit) ? implicit : null);
  const file = configFile === null ? {} : readConfigFile(configFile);
  if (file.agents !== undefined) checkHarnessModulesAtStart(home, file.agents, configFile!);

  let tcp: TcpAddress | null = file.tcp === undefined ? { ...DEFAULTS.tcp } : file.tcp;
  if (flags.tcp !== undefined) tcp = parseTcp(flags.tcp, '--tcp', 'value');
  const token = env.AGENTD_TOKEN || file.token || null;
  const workers = flags.workers ?? file.workers ?? availableParallelism();
  if (!Number.isSafeInteger(workers) || workers < 1) throw new ConfigError('--workers', 'value', 'must be an integer >= 1');
  const highWaterBytes = file.high_water_bytes ?? DEFAULTS.highWaterBytes;
  const hardLimitBytes = file.hard_limit_bytes ?? DEFAULTS.hardLimitBytes;
  if (hardLimitBytes < highWaterBytes) {
    throw new ConfigError(configFile ?? 'config', 'hard_limit_bytes', `must be >= high_water_bytes (${highWaterBytes})`);
  }

  const store = flags.store !== undefined
    ? parseStoreUrl(flags.store, home, '--store', 'value')
    : parseStoreUrl(file.store ?? 'sqlite', home, configFile ?? 'config', 'store');
  const persist = file.persist ?? DEFAULTS.persist;
  const cluster = clusterSettings(flags, file, configFile, store, persist);

  return deepFreeze({
    home,
    socketPath: join(home, 'run', 'agentd.sock'),
    tcp,
    token,
    tcpInsecure: flags.tcpInsecure === true || file.tcp_insecure === true,
    metrics: parseTcp(flags.metrics ?? file.metrics ?? 'off', flags.metrics !== undefined ? '--metrics' : configFile ?? 'config', flags.metrics !== undefined ? 'value' : 'metrics'),
    http: parseTcp(flags.http ?? file.http ?? 'off', flags.http !== undefined ? '--http' : configFile ?? 'config', flags.http !== undefined ? 'value' : 'http'),
    otlp: file.otlp === undefined || file.otlp === 'off' ? null : file.otlp,
    authTimeoutMs: file.auth_timeout_ms ?? DEFAULTS.authTimeoutMs,
    maxConnections: file.max_connections ?? DEFAULTS.maxConnections,
    workers,
    maxBodyBytes: file.max_body_bytes ?? DEFAULTS.maxBodyBytes,
    maxElements: file.max_elements ?? DEFAULTS.maxElements,
    highWaterBytes,
    hardLimitBytes,
    shutdownGraceMs: file.shutdown_grace_ms ?? DEFAULTS.shutdownGraceMs,
    defaultSender: file.default_sender ?? DEFAULTS.defaultSender,
    logLevel: flags.logLevel ?? env.AGENTD_LOG_LEVEL ?? file.log_level ?? DEFAULTS.logLevel,
    providers: file.providers ?? {},
    persist,
    store,
    memoryConversations: file.memory_conversations ?? DEFAULTS.memoryConversations,
    memoryBytes: file.memory_bytes ?? DEFAULTS.memoryBytes,
    storageThreads: file.storage_threads ?? DEFAULTS.storageThreads,
    searchTimeoutMs: file.search_timeout_ms ?? DEFAULTS.searchTimeoutMs,
    maxAgents: file.max_agents ?? DEFAULTS.maxAgents,
    maxSubscriptions: file.max_subscriptions ?? DEFAULTS.maxSubscriptions,
    maxObservers: file.max_observers ?? DEFAULTS.maxObservers,
    maxInflightPerConnection: file.max_inflight_per_connection ?? DEFAULTS.maxInflightPerConnection,
    shardStallMs: file.shard_stall_ms ?? DEFAULTS.shardStallMs,
    maxChainTurns: file.max_chain_turns ?? DEFAULTS.maxChainTurns,
    maxQueuedTurns: file.max_queued_turns ?? DEFAULTS.maxQueuedTurns,
    walMaxBytes: file.wal_max_bytes ?? DEFAULTS.walMaxBytes,
    runRetentionMs: file.run_retention_ms ?? DEFAULTS.runRetentionMs,
    maxEventPayloadBytes: file.max_event_payload_bytes ?? DEFAULTS.maxEventPayloadBytes,
    observerBacklogBytes: file.observer_backlog_bytes ?? DEFAULTS.observerBacklogBytes,
    observerStallMs: file.observer_stall_ms ?? DEFAULTS.observerStallMs,
    agents: file.agents ?? defaultAgents(),
    configFile,
    cluster,
    maxSchedules: file.max_schedules ?? DEFAULTS.maxSchedules,
    maxWebhooks: file.max_webhooks ?? DEFAULTS.maxWebhooks,
    maxWebhookOutbox: file.max_webhook_outbox ?? DEFAULTS.maxWebhookOutbox,
    webhookBackoffMs: file.webhook_backoff_ms ?? DEFAULTS.webhookBackoffMs,
    webhookTimeoutMs: file.webhook_timeout_ms ?? DEFAULTS.webhookTimeoutMs,
    webhookHosts: file.webhook_hosts ?? [],
    httpEventSources: file.http_event_sources ?? {},
  });
}

/**
 * Cluster mode from the file's `cluster` and the `--cluster`/`--node` flags
 * (which override its `nats` and `node`); null when neither asks for it.
 */
function clusterSettings(flags: StartFlags, file: FileSettings, configFile: string | null, store: StoreLocation, persist: boolean): ClusterSettings | null {
  if (flags.cluster === undefined && file.cluster === undefined) {
    if (flags.node !== undefined) throw new ConfigError('--node', 'value', 'needs --cluster URL (or "cluster" in agentd.json): a node name only means something in a cluster');
    return null;
  }
  const source = flags.cluster !== undefined || flags.node !== undefined ? '--cluster/--node' : configFile!;
  const raw: Record<string, unknown> = { ...file.cluster };
  if (flags.cluster !== undefined) raw.nats = flags.cluster;
  if (flags.node !== undefined) raw.node = flags.node;
  if (raw.node === undefined) throw new ConfigError(source, 'cluster.node', 'is required in cluster mode (--node NAME or "cluster": {"node": …}): each node needs a name of its own');
  if (!persist) throw new ConfigError(source, 'cluster', 'needs a shared PostgreSQL store; it cannot run with "persist": false');
  return validateClusterSettings(raw, source, store);
}
