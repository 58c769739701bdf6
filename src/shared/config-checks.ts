/**
 * Configuration validation (the file, agents, providers, MCP servers; the
 * checks the cluster settings and store-location.ts share): each problem is
 * a ConfigError that names the source, the field and what is wrong. The zod
 * schemas say it in the same words as the hand-written checks, which remain
 * where a rule spans fields or the order of checks shapes the message. Only
 * main loads this module: shards and the CLI read config.ts without zod.
 */
import { z } from 'zod';
import { isPlainMap } from './args.ts';
import { ConfigError } from './errors.ts';
import { HARNESS_NAME_RULE, isHarnessModuleName } from './harness-module.ts';
import {
  AGENT_DEFAULTS,
  CAPABILITIES,
  DEFAULT_AGENT_NAME,
  DEFAULT_PROVIDER_TIMEOUT_MS,
  ECHO_MAX,
  isValidAgentName,
  LOG_LEVELS,
  MAX_COMPACT_THRESHOLD,
  MAX_TOOL_TIMEOUT_MS,
  MCP_SERVER_NAME,
  SESSION_SEARCH_SCOPES,
  type AgentConfig,
  type Capability,
  type EchoOptions,
  type HarnessConfig,
  type McpConfig,
  type ProviderConfig,
  type TcpAddress,
} from './config.ts';

// The class lives with the other error classes, so that modules outside main can throw it without loading zod.
export { ConfigError };

export function positiveInt(v: unknown, source: string, field: string, min = 1): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
    throw new ConfigError(source, field, `must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  }
  return v;
}

export function boundedInt(v: unknown, source: string, field: string, min: number, max: number): number {
  if (typeof v === 'number' && Number.isInteger(v) && v > max) {
    throw new ConfigError(source, field, `must be an integer >= ${min} and <= ${max}, got ${JSON.stringify(v)}`);
  }
  return positiveInt(v, source, field, min);
}

export function string(v: unknown, source: string, field: string, allowEmpty = true): string {
  if (typeof v !== 'string' || (!allowEmpty && v === '')) {
    throw new ConfigError(source, field, `must be a ${allowEmpty ? '' : 'non-empty '}string, got ${JSON.stringify(v)}`);
  }
  return v;
}

export function onlyKeys(map: Record<string, unknown>, allowed: string[], source: string, path: string): void {
  for (const key of Object.keys(map)) {
    if (!allowed.includes(key)) {
      throw new ConfigError(source, path ? `${path}.${key}` : key, `is not a known option (known: ${allowed.join(', ')})`);
    }
  }
}

export function stringList(v: unknown, source: string, field: string): string[] {
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new ConfigError(source, field, 'must be a list of strings');
  return [...v] as string[];
}

const got = (iss: { input?: unknown }): string => `got ${JSON.stringify(iss.input)}`;

/** zod: an integer >= `min` (a safe integer: zod's int refuses anything beyond). */
export function atLeast(min: number): z.ZodInt {
  const error = (iss: { input?: unknown }): string => `must be an integer >= ${min}, ${got(iss)}`;
  return z.int({ error }).min(min, { error });
}

/** zod: an integer >= `min` and <= `max`, said as boundedInt says it. */
export function between(min: number, max: number): z.ZodInt {
  const low = (iss: { input?: unknown }): string => `must be an integer >= ${min}, ${got(iss)}`;
  const high = (iss: { input?: unknown }): string => `must be an integer >= ${min} and <= ${max}, ${got(iss)}`;
  // An integer past zod's safe range is too big too: say the bound, as for any other.
  return z.int({ error: (iss) => (iss.code === 'too_big' ? high(iss) : low(iss)) }).min(min, { error: low }).max(max, { error: high });
}

/** zod: a list of strings. */
export function strings(): z.ZodType<string[]> {
  const list = (v: unknown): boolean => Array.isArray(v) && v.every((x) => typeof x === 'string');
  return z.custom<string[]>(list, { error: 'must be a list of strings' }).transform((v) => [...v]);
}

/** zod: a map of strings (headers, environment). */
export function stringTable(): z.ZodType<Record<string, string>> {
  const table = (v: unknown): boolean => isPlainMap(v) && Object.values(v).every((x) => typeof x === 'string');
  return z.custom<Record<string, string>>(table, { error: 'must be a map of strings' }).transform((v) => ({ ...v }));
}

/** zod: an http:// or https:// URL. */
export function httpUrl(): z.ZodString {
  return text(false).regex(/^https?:\/\//, { error: 'must be an http:// or https:// URL' });
}

/** zod: a string, or a non-empty one. */
export function text(allowEmpty = true): z.ZodString {
  const error = (iss: { input?: unknown }): string => `must be a ${allowEmpty ? '' : 'non-empty '}string, ${got(iss)}`;
  return allowEmpty ? z.string({ error }) : z.string({ error }).min(1, { error });
}

/** zod: true or false. */
export function flag(): z.ZodBoolean {
  return z.boolean({ error: (iss) => `must be true or false, ${got(iss)}` });
}

/**
 * Parses `raw` (a plain object) with a strict object schema; the first
 * problem becomes a ConfigError naming its field (an unknown key first, as
 * onlyKeys reports it).
 */
export function parseFields<S extends z.ZodObject>(schema: S, raw: Record<string, unknown>, source: string, path: string): z.output<S> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues;
  const unknown = issues.find((i) => i.code === 'unrecognized_keys');
  if (unknown !== undefined) onlyKeys(raw, Object.keys(schema.shape), source, path);
  const first = issues[0]!;
  const field = [path, ...first.path.map(String)].filter((p) => p !== '').join('.');
  throw new ConfigError(source, field, first.message);
}

/** Parses "host:port" (IPv6 as "[::1]:port") or "off". */
export function parseTcp(value: string, source: string, field: string): TcpAddress | null {
  if (value === 'off') return null;
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new ConfigError(source, field, `must be "HOST:PORT" or "off", got ${JSON.stringify(value)}`);
  return { host: (m[1] ?? m[2])!, port };
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
    metrics: text(),
    http: text(),
    otlp: text().refine((v) => v === 'off' || (/^https?:\/\//.test(v) && URL.canParse(v)), { error: 'must be "off" or the http(s) URL of an OTLP/HTTP traces endpoint, e.g. "http://127.0.0.1:4318/v1/traces"' }),
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
    search_timeout_ms: atLeast(1),
    agents: z.unknown(),
    max_agents: atLeast(1),
    max_subscriptions: atLeast(1),
    max_observers: atLeast(1),
    max_inflight_per_connection: atLeast(1),
    // Below 100 ms a busy but healthy shard (a large commit) would be taken for a stalled one.
    shard_stall_ms: atLeast(100),
    max_chain_turns: atLeast(1),
    max_queued_turns: atLeast(1),
    wal_max_bytes: atLeast(1),
    run_retention_ms: atLeast(1),
    max_event_payload_bytes: atLeast(1),
    observer_backlog_bytes: atLeast(1),
    observer_stall_ms: atLeast(1),
    cluster: z.custom<Record<string, unknown>>(isPlainMap, { error: 'must be an object {nats, node, name, partitions, lease_ms}' }),
    max_schedules: atLeast(1),
    max_webhooks: atLeast(1),
    max_webhook_outbox: atLeast(1),
    webhook_backoff_ms: atLeast(1),
    webhook_timeout_ms: atLeast(1),
    webhook_hosts: strings(),
    http_event_sources: z.record(text(false), z.strictObject({ secret: text(false) })),
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
  compact_threshold: between(0, MAX_COMPACT_THRESHOLD).nullable().default(null),
  approve_tools: strings().default(() => []),
  // A timer's bound: 2^31-1 ms (about 24 days).
  approval_timeout_ms: between(1, 0x7fffffff).default(AGENT_DEFAULTS.approval_timeout_ms),
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
  const { model, provider, description, system_prompt, max_iterations, thinking, skills, tools, tool_timeout_ms, session_search, compact_threshold, approve_tools, approval_timeout_ms } = f;
  return { model, provider, description, system_prompt, max_iterations, thinking, skills, tools, harnesses, tool_timeout_ms, mcps, echo, session_search, compact_threshold, approve_tools, approval_timeout_ms };
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
