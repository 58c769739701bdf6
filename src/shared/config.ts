/**
 * Daemon configuration: the file's shape, the defaults (names carry units),
 * and one validation pass that names the field and what is wrong. Later code
 * trusts the resolved, frozen result and never re-checks it.
 */
import { isPlainMap } from './args.ts';
import { bool, boundedInt, ConfigError, onlyKeys, positiveInt, string, stringList, stringMap } from './config-checks.ts';
import { HARNESS_NAME_RULE, isHarnessModuleName } from './harness-module.ts';
import type { StoreLocation } from './store-location.ts';
import type { ClusterSettings } from './cluster-settings.ts';

export { ConfigError };
export type { ClusterSettings };

export interface EchoOptions {
  /** Awaited, cancellable wait before each chunk, in milliseconds (at most ECHO_MAX.delay_ms). */
  delay_ms: number;
  /** CPU burned per chunk, in microseconds (models a compute-bound model; at most ECHO_MAX.cpu_us). */
  cpu_us: number;
}

/**
 * The echo model's maxima, 1 s each: cpu_us is burned synchronously on a
 * shard, so an unbounded value would freeze every conversation of that shard.
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
} as const;

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
  /** Agents `create_agent` may bring the daemon to; beyond it 429. */
  maxAgents: number;
  /** Event bus subscriptions `subscribe_event` may bring the daemon to; beyond it 429. */
  maxSubscriptions: number;
  /** Open `subscribe_events` streams one connection may hold; beyond it 429. */
  maxObservers: number;
  /** A shard whose event loop does not answer the watchdog for this long is replaced. */
  shardStallMs: number;
  /** Fired turns one chain (one publish or one finished turn, and all that follows) may start in total. */
  maxChainTurns: number;
  /** Turns one conversation may hold queued behind its running one. */
  maxQueuedTurns: number;
  /** The WAL is checkpointed with TRUNCATE (under the shards' write lock) before it reaches this size. */
  walMaxBytes: number;
  agents: Record<string, AgentConfig>;
  /** Where the file came from, for messages; null when none was read. */
  configFile: string | null;
  /** Cluster mode (issue 16): this node's settings; null on a single node. */
  cluster: ClusterSettings | null;
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
  authTimeoutMs: 5_000,
  maxConnections: 4_096,
  maxAgents: 1_000,
  maxSubscriptions: 100_000,
  maxObservers: 64,
  shardStallMs: 10_000,
  maxChainTurns: 1_000,
  maxQueuedTurns: 1_000,
  walMaxBytes: 64 * 1024 * 1024,
} as const;

const AGENT_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;

export function isValidAgentName(name: string): boolean {
  return AGENT_NAME.test(name);
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Parses "host:port" (IPv6 as "[::1]:port") or "off". */
export function parseTcp(value: string, source: string, field: string): TcpAddress | null {
  if (value === 'off') return null;
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new ConfigError(source, field, `must be "HOST:PORT" or "off", got ${JSON.stringify(value)}`);
  return { host: (m[1] ?? m[2])!, port };
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** Validates a file's worth of settings; the result holds only the keys present. */
export interface FileSettings {
  workers?: number;
  tcp?: TcpAddress | null;
  token?: string;
  tcp_insecure?: boolean;
  auth_timeout_ms?: number;
  max_connections?: number;
  max_body_bytes?: number;
  max_elements?: number;
  high_water_bytes?: number;
  hard_limit_bytes?: number;
  shutdown_grace_ms?: number;
  default_sender?: string;
  log_level?: string;
  providers?: Record<string, ProviderConfig>;
  persist?: boolean;
  /** `sqlite`, `sqlite:PATH` or a `postgres://` URL (see store-location.ts). */
  store?: string;
  memory_conversations?: number;
  memory_bytes?: number;
  storage_threads?: number;
  max_agents?: number;
  max_subscriptions?: number;
  max_observers?: number;
  shard_stall_ms?: number;
  max_chain_turns?: number;
  max_queued_turns?: number;
  wal_max_bytes?: number;
  agents?: Record<string, AgentConfig>;
  /** Checked against the store once that is known (validateClusterSettings, in resolveConfig). */
  cluster?: Record<string, unknown>;
}

const FILE_KEYS = [
  'workers', 'tcp', 'token', 'tcp_insecure', 'auth_timeout_ms', 'max_connections', 'max_body_bytes', 'max_elements', 'high_water_bytes', 'hard_limit_bytes',
  'shutdown_grace_ms', 'default_sender', 'log_level', 'providers', 'persist', 'store', 'memory_conversations', 'memory_bytes', 'storage_threads', 'agents',
  'max_agents', 'max_subscriptions', 'max_observers',
  'shard_stall_ms', 'max_chain_turns', 'max_queued_turns', 'wal_max_bytes', 'cluster',
];
const AGENT_KEYS = ['model', 'provider', 'description', 'system_prompt', 'max_iterations', 'thinking', 'skills', 'tools', 'harnesses', 'tool_timeout_ms', 'mcps', 'echo', 'session_search'];
const ECHO_KEYS = ['delay_ms', 'cpu_us'];
const PROVIDER_KEYS = ['type', 'base_url', 'api_key_env', 'headers', 'timeout_ms'];
const MCP_KEYS = ['command', 'args', 'url', 'env', 'headers', 'eager', 'auto_restart'];

function toolTimeout(v: unknown, source: string, field: string): number {
  const ms = positiveInt(v, source, field);
  if (ms > MAX_TOOL_TIMEOUT_MS) throw new ConfigError(source, field, `must be at most ${MAX_TOOL_TIMEOUT_MS} (one hour), got ${ms}`);
  return ms;
}

/**
 * Validates one agent's configuration field by field; a ConfigError names the
 * field. `providers` are the configured provider names, to check `provider`.
 */
export function validateAgentConfig(raw: unknown, source: string, path: string, providers: readonly string[] = []): AgentConfig {
  if (!isPlainMap(raw)) throw new ConfigError(source, path, 'must be an object');
  onlyKeys(raw, AGENT_KEYS, source, path);
  const echo: EchoOptions = { delay_ms: 0, cpu_us: 0 };
  if (raw.echo !== undefined) {
    if (!isPlainMap(raw.echo)) throw new ConfigError(source, `${path}.echo`, 'must be an object');
    onlyKeys(raw.echo, ECHO_KEYS, source, `${path}.echo`);
    if (raw.echo.delay_ms !== undefined) echo.delay_ms = boundedInt(raw.echo.delay_ms, source, `${path}.echo.delay_ms`, 0, ECHO_MAX.delay_ms);
    if (raw.echo.cpu_us !== undefined) echo.cpu_us = boundedInt(raw.echo.cpu_us, source, `${path}.echo.cpu_us`, 0, ECHO_MAX.cpu_us);
  }
  const model = raw.model === undefined ? AGENT_DEFAULTS.model : string(raw.model, source, `${path}.model`, false);
  const provider = raw.provider === undefined || raw.provider === null ? null : string(raw.provider, source, `${path}.provider`, false);
  if (model !== 'echo' && provider === null) {
    throw new ConfigError(source, `${path}.provider`, `is required for model "${model}" (only "echo" is built in)`);
  }
  if (provider !== null && !providers.includes(provider)) {
    throw new ConfigError(source, `${path}.provider`, `names no configured provider (configured: ${providers.join(', ') || 'none'})`);
  }
  const harnesses: HarnessConfig[] = [];
  if (raw.harnesses !== undefined) {
    if (!Array.isArray(raw.harnesses)) throw new ConfigError(source, `${path}.harnesses`, 'must be a list of {module, capabilities}');
    raw.harnesses.forEach((h, i) => {
      const at = `${path}.harnesses[${i}]`;
      if (!isPlainMap(h)) throw new ConfigError(source, at, 'must be an object {module, capabilities}');
      onlyKeys(h, ['module', 'capabilities'], source, at);
      const caps = h.capabilities === undefined ? [] : stringList(h.capabilities, source, `${at}.capabilities`);
      for (const c of caps) {
        if (!(CAPABILITIES as readonly string[]).includes(c)) throw new ConfigError(source, `${at}.capabilities`, `has unknown capability "${c}" (known: ${CAPABILITIES.join(', ')})`);
      }
      const module = string(h.module, source, `${at}.module`, false);
      if (!isHarnessModuleName(module)) throw new ConfigError(source, `${at}.module`, `${HARNESS_NAME_RULE}, got ${JSON.stringify(module)}`);
      harnesses.push({ module, capabilities: caps as Capability[] });
    });
  }
  const mcps: Record<string, McpConfig> = {};
  if (raw.mcps !== undefined) {
    if (!isPlainMap(raw.mcps)) throw new ConfigError(source, `${path}.mcps`, 'must be a map of name -> MCP server settings');
    for (const [name, m] of Object.entries(raw.mcps)) mcps[name] = validateMcpConfig(m, source, `${path}.mcps.${name}`, name);
  }
  return {
    model,
    provider,
    description: raw.description === undefined ? AGENT_DEFAULTS.description : string(raw.description, source, `${path}.description`),
    system_prompt: raw.system_prompt === undefined ? '' : string(raw.system_prompt, source, `${path}.system_prompt`),
    max_iterations:
      raw.max_iterations === undefined ? AGENT_DEFAULTS.max_iterations : positiveInt(raw.max_iterations, source, `${path}.max_iterations`),
    thinking: raw.thinking === undefined ? false : bool(raw.thinking, source, `${path}.thinking`),
    skills: raw.skills === undefined ? [] : stringList(raw.skills, source, `${path}.skills`),
    tools: raw.tools === undefined || raw.tools === null ? null : stringList(raw.tools, source, `${path}.tools`),
    harnesses,
    tool_timeout_ms: raw.tool_timeout_ms === undefined ? AGENT_DEFAULTS.tool_timeout_ms : toolTimeout(raw.tool_timeout_ms, source, `${path}.tool_timeout_ms`),
    mcps,
    echo,
    session_search: sessionSearchScope(raw.session_search, source, `${path}.session_search`),
  };
}

function sessionSearchScope(v: unknown, source: string, field: string): SessionSearchScope {
  if (v === undefined) return 'sender';
  if (!(SESSION_SEARCH_SCOPES as readonly unknown[]).includes(v)) {
    throw new ConfigError(source, field, `must be "sender" or "agent", got ${JSON.stringify(v)}`);
  }
  return v as SessionSearchScope;
}

/** One MCP server's settings: stdio (`command`) or Streamable HTTP (`url`), never both. */
export function validateMcpConfig(m: unknown, source: string, at: string, name: string): McpConfig {
  if (!MCP_SERVER_NAME.test(name)) throw new ConfigError(source, at, 'is not a valid MCP server name (1-48 letters, digits, "-", "_")');
  if (!isPlainMap(m)) throw new ConfigError(source, at, 'must be an object');
  onlyKeys(m, MCP_KEYS, source, at);
  const mcp: McpConfig = {};
  if (m.command !== undefined) mcp.command = string(m.command, source, `${at}.command`, false);
  if (m.args !== undefined) mcp.args = stringList(m.args, source, `${at}.args`);
  if (m.url !== undefined) mcp.url = string(m.url, source, `${at}.url`, false);
  if (m.env !== undefined) mcp.env = stringMap(m.env, source, `${at}.env`);
  if (m.headers !== undefined) mcp.headers = stringMap(m.headers, source, `${at}.headers`);
  if (m.eager !== undefined) mcp.eager = bool(m.eager, source, `${at}.eager`);
  if (m.auto_restart !== undefined) mcp.auto_restart = bool(m.auto_restart, source, `${at}.auto_restart`);
  if ((mcp.command === undefined) === (mcp.url === undefined)) {
    throw new ConfigError(source, at, 'needs exactly one of "command" (stdio) and "url" (Streamable HTTP)');
  }
  if (mcp.url !== undefined && !/^https?:\/\//.test(mcp.url)) throw new ConfigError(source, `${at}.url`, 'must be an http:// or https:// URL');
  return mcp;
}

export function validateProviders(raw: unknown, source: string): Record<string, ProviderConfig> {
  if (!isPlainMap(raw)) throw new ConfigError(source, 'providers', 'must be an object of name -> provider');
  const out: Record<string, ProviderConfig> = {};
  for (const [name, p] of Object.entries(raw)) {
    const at = `providers.${name}`;
    if (!isPlainMap(p)) throw new ConfigError(source, at, 'must be an object');
    onlyKeys(p, PROVIDER_KEYS, source, at);
    if (p.type !== 'openai') throw new ConfigError(source, `${at}.type`, 'must be "openai" (an OpenAI-compatible endpoint)');
    const baseUrl = string(p.base_url, source, `${at}.base_url`, false);
    if (!/^https?:\/\//.test(baseUrl)) throw new ConfigError(source, `${at}.base_url`, 'must be an http:// or https:// URL');
    out[name] = {
      type: 'openai',
      base_url: baseUrl,
      api_key_env: p.api_key_env === undefined ? null : string(p.api_key_env, source, `${at}.api_key_env`, false),
      headers: p.headers === undefined ? {} : stringMap(p.headers, source, `${at}.headers`),
      timeout_ms: p.timeout_ms === undefined ? DEFAULT_PROVIDER_TIMEOUT_MS : boundedInt(p.timeout_ms, source, `${at}.timeout_ms`, 1, MAX_TOOL_TIMEOUT_MS),
    };
  }
  return out;
}

export function validateFileSettings(raw: unknown, source: string): FileSettings {
  if (!isPlainMap(raw)) throw new ConfigError(source, '(top level)', 'must be a JSON object');
  onlyKeys(raw, FILE_KEYS, source, '');
  const out: FileSettings = {};
  if (raw.workers !== undefined) out.workers = positiveInt(raw.workers, source, 'workers');
  if (raw.tcp !== undefined) out.tcp = parseTcp(string(raw.tcp, source, 'tcp'), source, 'tcp');
  if (raw.token !== undefined) out.token = string(raw.token, source, 'token', false);
  if (raw.tcp_insecure !== undefined) out.tcp_insecure = bool(raw.tcp_insecure, source, 'tcp_insecure');
  if (raw.auth_timeout_ms !== undefined) out.auth_timeout_ms = positiveInt(raw.auth_timeout_ms, source, 'auth_timeout_ms');
  if (raw.max_connections !== undefined) out.max_connections = positiveInt(raw.max_connections, source, 'max_connections');
  if (raw.max_body_bytes !== undefined) out.max_body_bytes = positiveInt(raw.max_body_bytes, source, 'max_body_bytes');
  if (raw.max_elements !== undefined) out.max_elements = positiveInt(raw.max_elements, source, 'max_elements');
  if (raw.high_water_bytes !== undefined) out.high_water_bytes = positiveInt(raw.high_water_bytes, source, 'high_water_bytes');
  if (raw.hard_limit_bytes !== undefined) out.hard_limit_bytes = positiveInt(raw.hard_limit_bytes, source, 'hard_limit_bytes');
  if (raw.shutdown_grace_ms !== undefined) out.shutdown_grace_ms = positiveInt(raw.shutdown_grace_ms, source, 'shutdown_grace_ms', 0);
  if (raw.default_sender !== undefined) out.default_sender = string(raw.default_sender, source, 'default_sender', false);
  if (raw.log_level !== undefined) {
    const level = string(raw.log_level, source, 'log_level');
    if (!LOG_LEVELS.includes(level)) throw new ConfigError(source, 'log_level', `must be one of ${LOG_LEVELS.join(', ')}`);
    out.log_level = level;
  }
  if (raw.persist !== undefined) {
    if (typeof raw.persist !== 'boolean') throw new ConfigError(source, 'persist', `must be true or false, got ${JSON.stringify(raw.persist)}`);
    out.persist = raw.persist;
  }
  // Parsed against $AGENTD_HOME once that is known (resolveConfig).
  if (raw.store !== undefined) out.store = string(raw.store, source, 'store', false);
  if (raw.memory_conversations !== undefined) out.memory_conversations = positiveInt(raw.memory_conversations, source, 'memory_conversations');
  if (raw.memory_bytes !== undefined) out.memory_bytes = positiveInt(raw.memory_bytes, source, 'memory_bytes');
  if (raw.storage_threads !== undefined) out.storage_threads = positiveInt(raw.storage_threads, source, 'storage_threads');
  if (raw.max_agents !== undefined) out.max_agents = positiveInt(raw.max_agents, source, 'max_agents');
  if (raw.max_subscriptions !== undefined) out.max_subscriptions = positiveInt(raw.max_subscriptions, source, 'max_subscriptions');
  if (raw.max_observers !== undefined) out.max_observers = positiveInt(raw.max_observers, source, 'max_observers');
  // Below 100 ms a busy but healthy shard (a large commit) would be taken for a stalled one.
  if (raw.shard_stall_ms !== undefined) out.shard_stall_ms = positiveInt(raw.shard_stall_ms, source, 'shard_stall_ms', 100);
  if (raw.max_chain_turns !== undefined) out.max_chain_turns = positiveInt(raw.max_chain_turns, source, 'max_chain_turns');
  if (raw.max_queued_turns !== undefined) out.max_queued_turns = positiveInt(raw.max_queued_turns, source, 'max_queued_turns');
  if (raw.wal_max_bytes !== undefined) out.wal_max_bytes = positiveInt(raw.wal_max_bytes, source, 'wal_max_bytes');
  if (raw.cluster !== undefined) {
    if (!isPlainMap(raw.cluster)) throw new ConfigError(source, 'cluster', 'must be an object {nats, node, name, partitions, lease_ms}');
    out.cluster = raw.cluster;
  }
  if (raw.providers !== undefined) out.providers = validateProviders(raw.providers, source);
  const providerNames = Object.keys(out.providers ?? {});
  if (raw.agents !== undefined) {
    if (!isPlainMap(raw.agents)) throw new ConfigError(source, 'agents', 'must be an object of name -> agent config');
    const agents: Record<string, AgentConfig> = {};
    for (const [name, cfg] of Object.entries(raw.agents)) {
      if (!isValidAgentName(name)) {
        throw new ConfigError(source, `agents.${name}`, 'is not a valid agent name (1-64 of letters, digits, "-", "_", ".", not starting with ".")');
      }
      agents[name] = validateAgentConfig(cfg, source, `agents.${name}`, providerNames);
    }
    if (Object.keys(agents).length === 0) throw new ConfigError(source, 'agents', 'must name at least one agent');
    out.agents = agents;
  }
  return out;
}

export function defaultAgents(): Record<string, AgentConfig> {
  return { [DEFAULT_AGENT_NAME]: validateAgentConfig({}, 'defaults', DEFAULT_AGENT_NAME) };
}

/** Freezes a resolved config deeply, so nothing downstream can change it by accident. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

