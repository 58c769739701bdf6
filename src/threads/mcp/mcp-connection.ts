/**
 * One MCP connection of one (agent, server), owned by the MCP thread: an SDK
 * client over stdio (the server runs under mcp-supervisor.mjs, so it never
 * outlives the daemon) or Streamable HTTP. Its status moves
 * disconnected -> connecting -> connected | failed; a lost connection is
 * `disconnected`. With `auto_restart` (the default) a failed attempt or a lost
 * connection is retried after a backoff that doubles up to a ceiling and
 * resets once connected. Every error it reports has the server's secrets redacted.
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type Tool as SdkTool } from '@modelcontextprotocol/sdk/types.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { McpConfig } from '../../shared/config.ts';
import type { McpState, McpStatus, McpTransport } from './messages.ts';
import { Redactor } from '../../shared/redact.ts';
import { resultText, type McpCallResult } from './mcp-results.ts';

const FROM_SOURCE = import.meta.url.endsWith('.ts');
/** Plain JS in the source tree either way: built, it is not compiled into dist/. */
const SUPERVISOR = fileURLToPath(new URL(FROM_SOURCE ? './mcp-supervisor.mjs' : '../../../../src/threads/mcp/mcp-supervisor.mjs', import.meta.url));

export const RETRY_FIRST_MS = 100;
export const RETRY_MAX_MS = 30_000;
const CONNECT_TIMEOUT_MS = 30_000;
const STDERR_TAIL_CHARS = 400;
/** What the SDK's HTTP transport reports when the server is gone. */
const HTTP_TRANSPORT_FAILURE = /SSE stream disconnected|fetch failed|Maximum reconnection attempts/;

export interface ConnectionOptions {
  agent: string;
  name: string;
  config: McpConfig;
  home: string;
  /** Called on every status change. */
  changed(conn: McpConnection): void;
}

export class McpConnection {
  readonly agent: string;
  readonly name: string;
  readonly config: McpConfig;
  readonly #o: ConnectionOptions;
  readonly #redactor: Redactor;
  status: McpStatus = 'disconnected';
  error = '';
  tools: SdkTool[] = [];
  #client: Client | null = null;
  #transport: Transport | null = null;
  #attempt: Promise<void> | null = null;
  #retry: NodeJS.Timeout | null = null;
  #backoffMs = RETRY_FIRST_MS;
  #stopped = false;
  #stderrTail = '';

  constructor(opts: ConnectionOptions) {
    this.#o = opts;
    this.agent = opts.agent;
    this.name = opts.name;
    this.config = opts.config;
    this.#redactor = new Redactor([...Object.values(opts.config.env ?? {}), ...Object.values(opts.config.headers ?? {})]);
  }

  get transport(): McpTransport {
    return this.config.url !== undefined ? 'http' : 'stdio';
  }

  /** A retry is scheduled: a turn does not wait for it. */
  get retrying(): boolean {
    return this.#retry !== null;
  }

  state(): McpState {
    return { agent: this.agent, name: this.name, transport: this.transport, status: this.status, error: this.error, tools: [] };
  }

  /** The server's `env` and `headers` values, and any Bearer or Authorization value, replaced (shared/redact.ts). */
  redact(text: string): string {
    return this.#redactor.all(text);
  }

  /** Connects unless connected; resolves once this attempt has settled (connected or failed). */
  ensure(): Promise<void> {
    if (this.#stopped || this.status === 'connected') return Promise.resolve();
    if (this.#attempt !== null) return this.#attempt;
    this.#clearRetry();
    this.#attempt = this.#connect().finally(() => (this.#attempt = null));
    return this.#attempt;
  }

  /** Drops the current connection (stopping a stdio server) and connects afresh, backoff reset. */
  async restart(): Promise<void> {
    this.#clearRetry();
    this.#backoffMs = RETRY_FIRST_MS;
    await this.#attempt?.catch(() => {});
    await this.#drop();
    this.#set('disconnected', '');
    void this.ensure();
  }

  /** Stops for good: no retry, the server (stdio) stopped. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#clearRetry();
    await this.#drop();
    this.tools = [];
    this.status = 'disconnected';
  }

  async #connect(): Promise<void> {
    this.#set('connecting', '');
    const client = new Client({ name: 'agentd', version: '0.1.0' });
    const transport = this.#makeTransport();
    this.#client = client;
    this.#transport = transport;
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
      const tools = await listAllTools(client);
      if (this.#client !== client) return; // stopped or restarted meanwhile
      client.onclose = () => this.#lost(client, 'the server closed the connection');
      if (this.transport === 'http') client.onerror = (err) => this.#httpError(client, err);
      this.tools = tools;
      this.#backoffMs = RETRY_FIRST_MS;
      this.#set('connected', '');
    } catch (err) {
      if (this.#client !== client) return;
      await this.#drop();
      this.#set('failed', this.#describe(err));
      this.#scheduleRetry();
    }
  }

  #makeTransport(): Transport {
    if (this.config.url !== undefined) {
      return new StreamableHTTPClientTransport(new URL(this.config.url), { requestInit: { headers: this.config.headers ?? {} } });
    }
    const env = { PATH: process.env.PATH ?? '', ...this.config.env };
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [SUPERVISOR, this.config.command!, ...(this.config.args ?? [])],
      env: { ...env, AGENTD_MCP_ENV_KEYS: JSON.stringify(Object.keys(env)) },
      stderr: 'pipe',
      cwd: this.#o.home,
    });
    this.#stderrTail = '';
    transport.stderr?.on('data', (d: Buffer) => (this.#stderrTail = (this.#stderrTail + d.toString()).slice(-STDERR_TAIL_CHARS)));
    return transport;
  }

  /** Closes the client; a stdio server's supervisor gets SIGTERM first, so closing does not wait on a server ignoring EOF. */
  async #drop(): Promise<void> {
    const client = this.#client;
    const transport = this.#transport;
    this.#client = null;
    this.#transport = null;
    if (client === null) return;
    client.onclose = undefined;
    client.onerror = undefined;
    const pid = transport instanceof StdioClientTransport ? transport.pid : null;
    if (pid !== null) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    await client.close().catch(() => {});
  }

  #lost(client: Client, why: string): void {
    if (this.#client !== client || this.#stopped) return;
    this.#client = null;
    this.#transport = null;
    client.onclose = undefined;
    client.onerror = undefined;
    void client.close().catch(() => {});
    this.tools = [];
    this.#set('disconnected', this.#withStderr(why));
    this.#scheduleRetry();
  }

  /**
   * Over HTTP a dead server shows only as errors of the transport (a broken
   * response stream, a refused request): those end the connection, which also
   * fails the calls waiting on it at once instead of at their timeout.
   */
  #httpError(client: Client, err: Error): void {
    if (err instanceof TypeError || HTTP_TRANSPORT_FAILURE.test(err.message)) this.#lost(client, this.#describe(err));
  }

  #scheduleRetry(): void {
    if (this.#stopped || this.config.auto_restart === false || this.#retry !== null) return;
    const wait = this.#backoffMs;
    this.#backoffMs = Math.min(this.#backoffMs * 2, RETRY_MAX_MS);
    this.#retry = setTimeout(() => {
      this.#retry = null;
      void this.ensure();
    }, wait);
  }

  #clearRetry(): void {
    if (this.#retry !== null) clearTimeout(this.#retry);
    this.#retry = null;
  }

  #set(status: McpStatus, error: string): void {
    if (this.#stopped) return;
    this.status = status;
    this.error = this.redact(error);
    if (status !== 'connected') this.tools = [];
    this.#o.changed(this);
  }

  #describe(err: unknown): string {
    return this.#withStderr(err instanceof Error ? err.message : String(err));
  }

  #withStderr(why: string): string {
    const tail = this.#stderrTail.trim();
    return this.redact(tail === '' ? why : `${why} (stderr: ${tail})`);
  }

  /** Calls a tool; an `isError` result comes back with `isError` set. Throws on failure, timeout or cancellation. */
  async call(tool: string, args: unknown, timeoutMs: number, signal: AbortSignal): Promise<{ output: string; isError: boolean }> {
    if (this.status !== 'connected') await this.ensure();
    const client = this.#client;
    if (this.status !== 'connected' || client === null) throw new Error(`MCP server "${this.name}" is not connected${this.error ? `: ${this.error}` : ''}`);
    if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new Error('the arguments of an MCP tool must be a JSON object');
    try {
      const result = (await client.callTool({ name: tool, arguments: args as Record<string, unknown> }, undefined, { signal, timeout: timeoutMs })) as McpCallResult;
      return { output: this.redact(resultText(result)), isError: result.isError === true };
    } catch (err) {
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('cancelled');
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
        throw new Error(`MCP tool "${tool}" of server "${this.name}" timed out after ${timeoutMs} ms (tool_timeout_ms)`);
      }
      // Over HTTP a dead server shows only as a failed request: treat a transport failure as a lost connection.
      if (this.transport === 'http' && (!(err instanceof McpError) || err.code === ErrorCode.ConnectionClosed)) this.#lost(client, this.#describe(err));
      throw new Error(this.#describe(err));
    }
  }
}

/** The most tools agentd takes from one server, and pages of `tools/list` it reads (PROTOCOL, MCP servers). */
export const MAX_TOOLS_PER_SERVER = 1_000;
export const MAX_TOOL_PAGES = 100;

/**
 * Every page of the server's tools. A server that pages for ever, or offers
 * more tools than a model could use, fails its connection with a clear error
 * instead of growing the MCP thread's memory until it is removed.
 */
async function listAllTools(client: Client): Promise<SdkTool[]> {
  const tools: SdkTool[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    if (++pages > MAX_TOOL_PAGES) throw new Error(`tools/list still had more pages after ${MAX_TOOL_PAGES}; agentd reads at most ${MAX_TOOL_PAGES}`);
    const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: CONNECT_TIMEOUT_MS });
    if (tools.length + page.tools.length > MAX_TOOLS_PER_SERVER) throw new Error(`the server offers more than ${MAX_TOOLS_PER_SERVER} tools, the most agentd takes from one server`);
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools;
}
