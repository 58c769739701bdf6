/**
 * Daemon configuration: the file's shape, the defaults (names carry units),
 * and one validation pass that names the field and what is wrong. Later code
 * trusts the resolved, frozen result and never re-checks it.
 */
import { isPlainMap } from './args.ts';
import { z } from 'zod';
import { atLeast, between, ConfigError, flag, httpUrl, onlyKeys, parseFields, string, stringList, stringTable, strings, text } from './config-checks.ts';
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

/**
 * The file's own settings, checked by zod; `providers` and `agents` are
 * checked by hand below (a provider named by an agent must exist), and
 * `cluster` against the store once that is known (validateClusterSettings).
 */
const FILE_SCHEMA = z
  .strictObject({
    workers: atLeast(1),
    tcp: text(),
    token: text(false),
    tcp_insecure: flag(),
    auth_timeout_ms: atLeast(1),
    max_connections: atLeast(1),
    max_body_bytes: atLeast(1),
    max_elements: atLeast(1),
    high_water_bytes: atLeast(1),
    hard_limit_bytes: atLeast(1),
    shutdown_grace_ms: atLeast(0),
    default_sender: text(false),
    log_level: text().refine((level) => LOG_LEVELS.includes(level), { error: `must be one of ${LOG_LEVELS.join(', ')}` }),
    providers: z.unknown(),
    persist: flag(),
    /** `sqlite`, `sqlite:PATH` or a `postgres://` URL, parsed against $AGENTD_HOME once that is known (resolveConfig). */
    store: text(false),
    memory_conversations: atLeast(1),
    memory_bytes: atLeast(1),
    storage_threads: atLeast(1),
    agents: z.unknown(),
    max_agents: atLeast(1),
    max_subscriptions: atLeast(1),
    max_observers: atLeast(1),
    // Below 100 ms a busy but healthy shard (a large commit) would be taken for a stalled one.
    shard_stall_ms: atLeast(100),
    max_chain_turns: atLeast(1),
    max_queued_turns: atLeast(1),
    wal_max_bytes: atLeast(1),
    cluster: z.custom<Record<string, unknown>>(isPlainMap, { error: 'must be an object {nats, node, name, partitions, lease_ms}' }),
  })
  .partial();

type FileFields = z.output<typeof FILE_SCHEMA>;

/** A file's worth of settings; the result holds only the keys present. */
export interface FileSettings extends Omit<FileFields, 'tcp' | 'providers' | 'agents'> {
  tcp?: TcpAddress | null;
  providers?: Record<string, ProviderConfig>;
  agents?: Record<string, AgentConfig>;
}


const AGENT_SCHEMA = z.strictObject({
  model: text(false).default(AGENT_DEFAULTS.model),
  provider: text(false).nullable().default(null),
  description: text().default(AGENT_DEFAULTS.description),
  system_prompt: text().default(''),
  max_iterations: atLeast(1).default(AGENT_DEFAULTS.max_iterations),
  thinking: flag().default(false),
  skills: strings().default(() => []),
  tools: strings().nullable().default(null),
  harnesses: z.unknown().optional(),
  tool_timeout_ms: atLeast(1)
    .max(MAX_TOOL_TIMEOUT_MS, { error: (iss) => `must be at most ${MAX_TOOL_TIMEOUT_MS} (one hour), got ${JSON.stringify(iss.input)}` })
    .default(AGENT_DEFAULTS.tool_timeout_ms),
  mcps: z.unknown().optional(),
  echo: z.unknown().optional(),
  session_search: z.enum(SESSION_SEARCH_SCOPES, { error: (iss) => `must be "sender" or "agent", got ${JSON.stringify(iss.input)}` }).default('sender'),
});

const ECHO_SCHEMA = z.strictObject({ delay_ms: between(0, ECHO_MAX.delay_ms).default(0), cpu_us: between(0, ECHO_MAX.cpu_us).default(0) });

/**
 * Validates one agent's configuration field by field; a ConfigError names the
 * field. `providers` are the configured provider names, to check `provider`.
 */
export function validateAgentConfig(raw: unknown, source: string, path: string, providers: readonly string[] = []): AgentConfig {
  if (!isPlainMap(raw)) throw new ConfigError(source, path, 'must be an object');
  const f = parseFields(AGENT_SCHEMA, raw, source, path);
  if (f.model !== 'echo' && f.provider === null) {
    throw new ConfigError(source, `${path}.provider`, `is required for model "${f.model}" (only "echo" is built in)`);
  }
  if (f.provider !== null && !providers.includes(f.provider)) {
    throw new ConfigError(source, `${path}.provider`, `names no configured provider (configured: ${providers.join(', ') || 'none'})`);
  }
  if (f.echo !== undefined && !isPlainMap(f.echo)) throw new ConfigError(source, `${path}.echo`, 'must be an object');
  const echo: EchoOptions = parseFields(ECHO_SCHEMA, f.echo ?? {}, source, `${path}.echo`);
  const harnesses = f.harnesses === undefined ? [] : validateHarnesses(f.harnesses, source, `${path}.harnesses`);
  const mcps: Record<string, McpConfig> = {};
  if (f.mcps !== undefined) {
    if (!isPlainMap(f.mcps)) throw new ConfigError(source, `${path}.mcps`, 'must be a map of name -> MCP server settings');
    for (const [name, m] of Object.entries(f.mcps)) mcps[name] = validateMcpConfig(m, source, `${path}.mcps.${name}`, name);
  }
  const { model, provider, description, system_prompt, max_iterations, thinking, skills, tools, tool_timeout_ms, session_search } = f;
  return { model, provider, description, system_prompt, max_iterations, thinking, skills, tools, harnesses, tool_timeout_ms, mcps, echo, session_search };
}

/** A harness list: each a module name in $AGENTD_HOME/harness and the capabilities it is granted. */
function validateHarnesses(raw: unknown, source: string, path: string): HarnessConfig[] {
  if (!Array.isArray(raw)) throw new ConfigError(source, path, 'must be a list of {module, capabilities}');
  return raw.map((h: unknown, i) => {
    const at = `${path}[${i}]`;
    if (!isPlainMap(h)) throw new ConfigError(source, at, 'must be an object {module, capabilities}');
    onlyKeys(h, ['module', 'capabilities'], source, at);
    const caps = h.capabilities === undefined ? [] : stringList(h.capabilities, source, `${at}.capabilities`);
    for (const c of caps) {
      if (!(CAPABILITIES as readonly string[]).includes(c)) throw new ConfigError(source, `${at}.capabilities`, `has unknown capability "${c}" (known: ${CAPABILITIES.join(', ')})`);
    }
    const module = string(h.module, source, `${at}.module`, false);
    if (!isHarnessModuleName(module)) throw new ConfigError(source, `${at}.module`, `${HARNESS_NAME_RULE}, got ${JSON.stringify(module)}`);
    return { module, capabilities: caps as Capability[] };
  });
}

const MCP_SCHEMA = z
  .strictObject({ command: text(false), args: strings(), url: httpUrl(), env: stringTable(), headers: stringTable(), eager: flag(), auto_restart: flag() })
  .partial();

/** One MCP server's settings: stdio (`command`) or Streamable HTTP (`url`), never both. */
export function validateMcpConfig(m: unknown, source: string, at: string, name: string): McpConfig {
  if (!MCP_SERVER_NAME.test(name)) throw new ConfigError(source, at, 'is not a valid MCP server name (1-48 letters, digits, "-", "_")');
  if (!isPlainMap(m)) throw new ConfigError(source, at, 'must be an object');
  const mcp: McpConfig = parseFields(MCP_SCHEMA, m, source, at);
  if ((mcp.command === undefined) === (mcp.url === undefined)) {
    throw new ConfigError(source, at, 'needs exactly one of "command" (stdio) and "url" (Streamable HTTP)');
  }
  return mcp;
}

const PROVIDER_SCHEMA = z.strictObject({
  type: z.literal('openai', { error: 'must be "openai" (an OpenAI-compatible endpoint)' }),
  base_url: httpUrl(),
  api_key_env: text(false).optional(),
  headers: stringTable().optional(),
  timeout_ms: between(1, MAX_TOOL_TIMEOUT_MS).optional(),
});

export function validateProviders(raw: unknown, source: string): Record<string, ProviderConfig> {
  if (!isPlainMap(raw)) throw new ConfigError(source, 'providers', 'must be an object of name -> provider');
  const out: Record<string, ProviderConfig> = {};
  for (const [name, p] of Object.entries(raw)) {
    if (!isPlainMap(p)) throw new ConfigError(source, `providers.${name}`, 'must be an object');
    const { base_url, api_key_env, headers, timeout_ms } = parseFields(PROVIDER_SCHEMA, p, source, `providers.${name}`);
    out[name] = { type: 'openai', base_url, api_key_env: api_key_env ?? null, headers: headers ?? {}, timeout_ms: timeout_ms ?? DEFAULT_PROVIDER_TIMEOUT_MS };
  }
  return out;
}

export function validateFileSettings(raw: unknown, source: string): FileSettings {
  if (!isPlainMap(raw)) throw new ConfigError(source, '(top level)', 'must be a JSON object');
  const { tcp, providers, agents, ...fields } = parseFields(FILE_SCHEMA, raw, source, '');
  const out: FileSettings = fields;
  if (tcp !== undefined) out.tcp = parseTcp(tcp, source, 'tcp');
  if (providers !== undefined) out.providers = validateProviders(providers, source);
  const providerNames = Object.keys(out.providers ?? {});
  if (agents !== undefined) out.agents = validateAgents(agents, source, providerNames);
  return out;
}

function validateAgents(raw: unknown, source: string, providerNames: readonly string[]): Record<string, AgentConfig> {
  if (!isPlainMap(raw)) throw new ConfigError(source, 'agents', 'must be an object of name -> agent config');
  const agents: Record<string, AgentConfig> = {};
  for (const [name, cfg] of Object.entries(raw)) {
    if (!isValidAgentName(name)) {
      throw new ConfigError(source, `agents.${name}`, 'is not a valid agent name (1-64 of letters, digits, "-", "_", ".", not starting with ".")');
    }
    agents[name] = validateAgentConfig(cfg, source, `agents.${name}`, providerNames);
  }
  if (Object.keys(agents).length === 0) throw new ConfigError(source, 'agents', 'must name at least one agent');
  return agents;
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

