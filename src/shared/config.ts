/**
 * Daemon configuration: the file's shape, the defaults (names carry units),
 * and one validation pass that names the field and what is wrong. Later code
 * trusts the resolved, frozen result and never re-checks it.
 */
import { isPlainMap } from './args.ts';

export interface EchoOptions {
  /** Awaited, cancellable wait before each chunk, in milliseconds. */
  delay_ms: number;
  /** CPU burned per chunk, in microseconds (models a compute-bound model). */
  cpu_us: number;
}

export interface AgentConfig {
  model: string;
  description: string;
  max_iterations: number;
  echo: EchoOptions;
}

export const AGENT_DEFAULTS = {
  model: 'echo',
  description: '',
  max_iterations: 16,
} as const;

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
  workers: number;
  maxBodyBytes: number;
  highWaterBytes: number;
  hardLimitBytes: number;
  shutdownGraceMs: number;
  defaultSender: string;
  logLevel: string;
  /** false only for benchmarks: nothing is stored, nothing survives a restart. */
  persist: boolean;
  /** Idle conversations kept in memory across all shards before the least recently used are evicted. */
  memoryConversations: number;
  /** Threads doing database work for main (list_conversations, search_sessions, subscriptions). */
  storageThreads: number;
  agents: Record<string, AgentConfig>;
  /** Where the file came from, for messages; null when none was read. */
  configFile: string | null;
}

export const DEFAULTS = {
  tcp: { host: '127.0.0.1', port: 6688 },
  maxBodyBytes: 16 * 1024 * 1024,
  highWaterBytes: 8 * 1024 * 1024,
  hardLimitBytes: 64 * 1024 * 1024,
  shutdownGraceMs: 5_000,
  defaultSender: 'user',
  logLevel: 'warn',
  persist: true,
  memoryConversations: 10_000,
  storageThreads: 2,
} as const;

export class ConfigError extends Error {
  constructor(source: string, field: string, what: string) {
    super(`${source}: ${field} ${what}`);
    this.name = 'ConfigError';
  }
}

const AGENT_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;

export function isValidAgentName(name: string): boolean {
  return AGENT_NAME.test(name);
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

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
  max_body_bytes?: number;
  high_water_bytes?: number;
  hard_limit_bytes?: number;
  shutdown_grace_ms?: number;
  default_sender?: string;
  log_level?: string;
  persist?: boolean;
  memory_conversations?: number;
  storage_threads?: number;
  agents?: Record<string, AgentConfig>;
}

const FILE_KEYS = [
  'workers', 'tcp', 'token', 'max_body_bytes', 'high_water_bytes', 'hard_limit_bytes',
  'shutdown_grace_ms', 'default_sender', 'log_level', 'persist', 'memory_conversations', 'storage_threads', 'agents',
];
const AGENT_KEYS = ['model', 'description', 'max_iterations', 'echo'];
const ECHO_KEYS = ['delay_ms', 'cpu_us'];

function positiveInt(v: unknown, source: string, field: string, min = 1): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
    throw new ConfigError(source, field, `must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  }
  return v;
}

function string(v: unknown, source: string, field: string, allowEmpty = true): string {
  if (typeof v !== 'string' || (!allowEmpty && v === '')) {
    throw new ConfigError(source, field, `must be a ${allowEmpty ? '' : 'non-empty '}string, got ${JSON.stringify(v)}`);
  }
  return v;
}

function onlyKeys(map: Record<string, unknown>, allowed: string[], source: string, path: string): void {
  for (const key of Object.keys(map)) {
    if (!allowed.includes(key)) {
      throw new ConfigError(source, path ? `${path}.${key}` : key, `is not a known option (known: ${allowed.join(', ')})`);
    }
  }
}

export function validateAgentConfig(raw: unknown, source: string, path: string): AgentConfig {
  if (!isPlainMap(raw)) throw new ConfigError(source, path, 'must be an object');
  onlyKeys(raw, AGENT_KEYS, source, path);
  const echo: EchoOptions = { delay_ms: 0, cpu_us: 0 };
  if (raw.echo !== undefined) {
    if (!isPlainMap(raw.echo)) throw new ConfigError(source, `${path}.echo`, 'must be an object');
    onlyKeys(raw.echo, ECHO_KEYS, source, `${path}.echo`);
    if (raw.echo.delay_ms !== undefined) echo.delay_ms = positiveInt(raw.echo.delay_ms, source, `${path}.echo.delay_ms`, 0);
    if (raw.echo.cpu_us !== undefined) echo.cpu_us = positiveInt(raw.echo.cpu_us, source, `${path}.echo.cpu_us`, 0);
  }
  return {
    model: raw.model === undefined ? AGENT_DEFAULTS.model : string(raw.model, source, `${path}.model`, false),
    description: raw.description === undefined ? AGENT_DEFAULTS.description : string(raw.description, source, `${path}.description`),
    max_iterations:
      raw.max_iterations === undefined ? AGENT_DEFAULTS.max_iterations : positiveInt(raw.max_iterations, source, `${path}.max_iterations`),
    echo,
  };
}

export function validateFileSettings(raw: unknown, source: string): FileSettings {
  if (!isPlainMap(raw)) throw new ConfigError(source, '(top level)', 'must be a JSON object');
  onlyKeys(raw, FILE_KEYS, source, '');
  const out: FileSettings = {};
  if (raw.workers !== undefined) out.workers = positiveInt(raw.workers, source, 'workers');
  if (raw.tcp !== undefined) out.tcp = parseTcp(string(raw.tcp, source, 'tcp'), source, 'tcp');
  if (raw.token !== undefined) out.token = string(raw.token, source, 'token', false);
  if (raw.max_body_bytes !== undefined) out.max_body_bytes = positiveInt(raw.max_body_bytes, source, 'max_body_bytes');
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
  if (raw.memory_conversations !== undefined) out.memory_conversations = positiveInt(raw.memory_conversations, source, 'memory_conversations');
  if (raw.storage_threads !== undefined) out.storage_threads = positiveInt(raw.storage_threads, source, 'storage_threads');
  if (raw.agents !== undefined) {
    if (!isPlainMap(raw.agents)) throw new ConfigError(source, 'agents', 'must be an object of name -> agent config');
    const agents: Record<string, AgentConfig> = {};
    for (const [name, cfg] of Object.entries(raw.agents)) {
      if (!isValidAgentName(name)) {
        throw new ConfigError(source, `agents.${name}`, 'is not a valid agent name (1-64 of letters, digits, "-", "_", ".", not starting with ".")');
      }
      agents[name] = validateAgentConfig(cfg, source, `agents.${name}`);
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
