/**
 * Daemon configuration: the file's shape and the defaults (names carry
 * units). Validation, which names the field and what is wrong, is in
 * config-checks.ts, which main alone loads (with zod); later code trusts the
 * resolved, frozen result and never re-checks it.
 */
import type { StoreLocation } from './store-location.ts';

export interface EchoOptions {
  /** Awaited, cancellable wait before each chunk, in milliseconds (at most ECHO_MAX.delay_ms). */
  delay_ms: number;
  /** CPU burned per chunk, in microseconds (models a compute-bound model; at most ECHO_MAX.cpu_us). */
  cpu_us: number;
}

/**
 * The echo model's maxima, 1 s each: a chunk's wait and burn hold its
 * conversation, so an unbounded value would hold it for ever.
 */
export const ECHO_MAX = { delay_ms: 1_000, cpu_us: 1_000_000 } as const;

/** The capabilities a harness may be granted (PROTOCOL §5). */
export const CAPABILITIES = ['peers.list', 'sessions.search', 'skills.list', 'skills.get'] as const;
export type Capability = (typeof CAPABILITIES)[number];

export interface HarnessConfig {
  /** The name of a JS module in $AGENTD_HOME/harness exporting `tools` ("notes": harness/notes.mjs or .js); never a path. */
  module: string;
  capabilities: Capability[];
}

/**
 * An MCP server's settings, stored with the agent (its env and headers may
 * hold secrets): stdio (`command`, `args`, `env`) or Streamable HTTP (`url`,
 * `headers`), exactly one of `command` and `url`.
 */
export interface McpConfig {
  command?: string;
  args?: string[];
  url?: string;
  env?: Record<string, string>;
  headers?: Record<string, string>;
  /** Connect at start-up (and on every change) instead of at the first turn that needs it; default false. */
  eager?: boolean;
  /** Reconnect with backoff when the server dies or a connection attempt fails; default true. */
  auto_restart?: boolean;
}

/** An MCP server name: it prefixes the server's tool names (`<server>__<tool>`). */
export const MCP_SERVER_NAME = /^[A-Za-z0-9_-]{1,48}$/;

export interface AgentConfig {
  model: string;
  /** The provider serving `model`; null for the built-in `echo`. */
  provider: string | null;
  description: string;
  system_prompt: string;
  max_iterations: number;
  thinking: boolean;
  /** Skills the agent's harness may see; empty means all. */
  skills: string[];
  /** Exactly these tools when set; null means the built-ins plus every harness tool. */
  tools: string[] | null;
  harnesses: HarnessConfig[];
  /** How long one harness tool call may run before it fails and its harness thread is replaced. */
  tool_timeout_ms: number;
  mcps: Record<string, McpConfig>;
  echo: EchoOptions;
  /**
   * Whose conversations the agent's `search_sessions` tool and `sessions.search`
   * capability see: `sender` (default) only the calling conversation's sender's;
   * `agent` all of the agent's senders (memory shared across counterparties).
   */
  session_search: SessionSearchScope;
  /**
   * Tokens of history past which a turn first compacts the conversation; 0 is off;
   * null takes the model's default (models/context-windows.ts: off where the window is unknown, and for echo).
   */
  compact_threshold: number | null;
  /** Tools whose calls wait for `approve_tool` before they run: names, or ["*"] for every tool. */
  approve_tools: string[];
  /** A call waiting for approval longer than this is denied ("approval timed out"). */
  approval_timeout_ms: number;
}

export const SESSION_SEARCH_SCOPES = ['sender', 'agent'] as const;
export type SessionSearchScope = (typeof SESSION_SEARCH_SCOPES)[number];

export interface ProviderConfig {
  type: 'openai';
  base_url: string;
  /** The name of the environment variable holding the API key; the key itself is never stored. */
  api_key_env: string | null;
  headers: Record<string, string>;
  /** Longest wait for the connection, the first byte, and each next chunk; the turn ends with an error past it. */
  timeout_ms: number;
}

/** The default provider `timeout_ms`: two minutes. */
export const DEFAULT_PROVIDER_TIMEOUT_MS = 120_000;

export const AGENT_DEFAULTS = {
  model: 'echo',
  description: '',
  max_iterations: 16,
  tool_timeout_ms: 60_000,
  approval_timeout_ms: 600_000,
} as const;

/** The largest `compact_threshold`: far beyond any model's context window. */
export const MAX_COMPACT_THRESHOLD = 100_000_000;

/** The longest harness tool time limit: one hour (and well inside a timer's 2^31 ms). */
export const MAX_TOOL_TIMEOUT_MS = 3_600_000;

export const DEFAULT_AGENT_NAME = 'assistant';

export interface TcpAddress {
  host: string;
  port: number;
}

/** Everything a running daemon needs, all fields required. */
export interface ResolvedConfig {
  home: string;
  socketPath: string;
  /** null: TCP is off. */
  tcp: TcpAddress | null;
  /** Required as the first request on TCP connections when set (PROTOCOL §6). */
  token: string | null;
  /** TCP without a token (loopback only); otherwise a token is created in $AGENTD_HOME/token when none is set. */
  tcpInsecure: boolean;
  /** A connection that has not authenticated by then is closed. */
  authTimeoutMs: number;
  /** Open connections per listener (Unix socket, TCP) before new ones get 429. */
  maxConnections: number;
  workers: number;
  maxBodyBytes: number;
  /** Array and map entries one request body may announce in total (bounded decoding). */
  maxElements: number;
  highWaterBytes: number;
  hardLimitBytes: number;
  shutdownGraceMs: number;
  defaultSender: string;
  logLevel: string;
  providers: Record<string, ProviderConfig>;
  /** false only for benchmarks: nothing is stored, nothing survives a restart. */
  persist: boolean;
  /** Where conversations, agents and subscriptions are stored (when `persist`): SQLite in $AGENTD_HOME by default. */
  store: StoreLocation;
  /** Idle conversations kept in memory across all shards before the least recently used are evicted. */
  memoryConversations: number;
  /** Approximate bytes of conversation history kept in memory across all shards before the least recently used idle ones are evicted. */
  memoryBytes: number;
  /** Threads doing database work for main (list_conversations, search_sessions, subscriptions). */
  storageThreads: number;
  /** How long one search_sessions may take, from its arrival, before it ends with 504. */
  searchTimeoutMs: number;
  /** Agents `create_agent` may bring the daemon to; beyond it 429. */
  maxAgents: number;
  /** Event bus subscriptions `subscribe_event` may bring the daemon to; beyond it 429. */
  maxSubscriptions: number;
  /** Open `subscribe_events` streams one connection may hold; beyond it 429. */
  maxObservers: number;
  /** Requests one connection may have in flight (dispatched, last frame not yet handed to its socket). */
  maxInflightPerConnection: number;
  /** A shard whose event loop does not answer the watchdog for this long is replaced. */
  shardStallMs: number;
  /** Fired turns one chain (one publish or one finished turn, and all that follows) may start in total. */
  maxChainTurns: number;
  /** Turns one conversation may hold queued behind its running one. */
  maxQueuedTurns: number;
  /** The WAL is checkpointed with TRUNCATE (under the shards' write lock) before it reaches this size. */
  walMaxBytes: number;
  /** How long an ended run can still be read (get_run) and joined (join_run). */
  runRetentionMs: number;
  /** Largest `publish_event` payload (UTF-8 bytes of its text); beyond it 413. */
  maxEventPayloadBytes: number;
  /** Unsent output past which a connection's agent events are dropped; it is cut if its peer then reads nothing for 3 s. */
  observerBacklogBytes: number;
  /** A connection past observerBacklogBytes whose peer reads nothing for this long is cut (a slow consumer). */
  observerStallMs: number;
  agents: Record<string, AgentConfig>;
  /** Where the file came from, for messages; null when none was read. */
  configFile: string | null;
  /** Cluster mode: this node's settings; null on a single node. */
  cluster: ClusterSettings | null;
  /** Schedules `create_schedule` may bring the daemon (the cluster) to; beyond it 429. */
  maxSchedules: number;
  /** Webhooks `create_webhook` may bring the daemon (the cluster) to; beyond it 429. */
  maxWebhooks: number;
  /** Pending webhook deliveries the outbox holds; past it new events are dropped for webhooks (counted). */
  maxWebhookOutbox: number;
  /** A failed delivery's first retry waits about this long; each next one twice as long (with jitter). */
  webhookBackoffMs: number;
  /** Most time one delivery attempt may take. */
  webhookTimeoutMs: number;
  /** Hosts webhook URLs may name (`*.example.com` for a domain's hosts); empty: any. */
  webhookHosts: readonly string[];
  /** The Prometheus metrics listener; null: off. Off loopback it asks for the token. */
  metrics: TcpAddress | null;
  /** The HTTP listener (REST + SSE, docs/http.md); null: off. Off loopback it needs a token. */
  http: TcpAddress | null;
  /** `http_event_sources`: inbound webhook sources (`POST /v1/events/{source}`) and the secret each one's HMAC signatures are made with. */
  httpEventSources: Readonly<Record<string, { readonly secret: string }>>;
  /** Where traces go (an OTLP/HTTP traces endpoint URL); null: off, and no tracing code is loaded. */
  otlp: string | null;
}

export const DEFAULTS = {
  tcp: { host: '127.0.0.1', port: 6688 },
  maxBodyBytes: 16 * 1024 * 1024,
  maxElements: 100_000,
  highWaterBytes: 8 * 1024 * 1024,
  hardLimitBytes: 64 * 1024 * 1024,
  shutdownGraceMs: 5_000,
  defaultSender: 'user',
  logLevel: 'warn',
  persist: true,
  memoryConversations: 10_000,
  memoryBytes: 256 * 1024 * 1024,
  storageThreads: 2,
  searchTimeoutMs: 5_000,
  authTimeoutMs: 5_000,
  maxConnections: 4_096,
  maxAgents: 1_000,
  maxSubscriptions: 100_000,
  maxObservers: 64,
  maxInflightPerConnection: 1024,
  shardStallMs: 10_000,
  maxChainTurns: 1_000,
  maxQueuedTurns: 1_000,
  walMaxBytes: 64 * 1024 * 1024,
  maxSchedules: 1_000,
  maxWebhooks: 100,
  maxWebhookOutbox: 10_000,
  webhookBackoffMs: 10_000,
  webhookTimeoutMs: 10_000,
  runRetentionMs: 600_000,
  maxEventPayloadBytes: 1024 * 1024,
  observerBacklogBytes: 4 * 1024 * 1024,
  observerStallMs: 3_000,
} as const;

const AGENT_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;

export function isValidAgentName(name: string): boolean {
  return AGENT_NAME.test(name);
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Freezes a resolved config deeply, so nothing downstream can change it by accident. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** A node's cluster settings: `cluster` in agentd.json, or `--cluster URL --node NAME` (validated in cluster-settings.ts). */
export interface ClusterSettings {
  /** The cluster's name: its NATS key-value bucket and the prefix of its subjects (several clusters may share one NATS). */
  name: string;
  /** NATS server URLs (nats:// or tls://), the first reachable one used. */
  nats: string[];
  /** This node's name: unique in the cluster. */
  node: string;
  /** Fixed for the life of the cluster. */
  partitions: number;
  /** How long a silent node keeps its partitions from the others. */
  lease_ms: number;
}
