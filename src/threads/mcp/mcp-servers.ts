/**
 * Every MCP connection of the daemon, by agent and server name, in the MCP
 * thread. It follows the agents' configs (a changed entry is a new
 * connection), starts connections at first need or eagerly, and maps the
 * names tools are offered under back to their server.
 */
import type { McpConfig } from '../../shared/config.ts';
import type { McpState, McpToolSpec } from './messages.ts';
import { offeredToolNames, type McpToolRef } from './mcp-names.ts';
import { McpConnection } from './mcp-connection.ts';

/** How long a turn waits for its agent's servers to connect before it runs without the ones still connecting. */
export const CONNECT_WAIT_MS = 15_000;

export interface McpServersOptions {
  home: string;
  /** A connection's state changed; `removed`: it was stopped for good (agent or entry gone or changed). */
  report(state: McpState, removed: boolean): void;
}

export class McpServers {
  readonly #o: McpServersOptions;
  readonly #byAgent = new Map<string, Map<string, McpConnection>>();

  constructor(opts: McpServersOptions) {
    this.#o = opts;
  }

  /** Makes the connections match `agents`: stops what is gone or changed, adds what is new (starting eager ones). */
  apply(agents: Record<string, Record<string, McpConfig>>): void {
    for (const [agent, conns] of this.#byAgent) {
      for (const [name, conn] of conns) {
        const wanted = agents[agent]?.[name];
        if (wanted === undefined || JSON.stringify(wanted) !== JSON.stringify(conn.config)) this.#remove(agent, name, conn);
      }
    }
    for (const [agent, servers] of Object.entries(agents)) {
      for (const [name, config] of Object.entries(servers)) {
        if (this.#byAgent.get(agent)?.has(name)) continue;
        const conn = new McpConnection({ agent, name, config, home: this.#o.home, changed: (c) => this.#changed(c) });
        let conns = this.#byAgent.get(agent);
        if (conns === undefined) this.#byAgent.set(agent, (conns = new Map()));
        conns.set(name, conn);
        this.#o.report(this.#state(conn), false);
        if (config.eager === true) void conn.ensure();
      }
    }
  }

  #remove(agent: string, name: string, conn: McpConnection): void {
    const conns = this.#byAgent.get(agent)!;
    conns.delete(name);
    if (conns.size === 0) this.#byAgent.delete(agent);
    void conn.stop().then(() => this.#o.report({ ...conn.state(), status: 'disconnected', error: '' }, true));
  }

  /** False when there is no such connection. */
  reconnect(agent: string, name: string): boolean {
    const conn = this.#byAgent.get(agent)?.get(name);
    if (conn === undefined) return false;
    void conn.restart();
    return true;
  }

  #changed(conn: McpConnection): void {
    // The other servers' offered names can change too (a collision suffix), so report the whole agent.
    for (const c of this.#byAgent.get(conn.agent)?.values() ?? []) this.#o.report(this.#state(c), false);
  }

  #state(conn: McpConnection): McpState {
    const names = [...this.#offered(conn.agent)].filter(([, ref]) => ref.server === conn.name).map(([offered]) => offered);
    return { ...conn.state(), tools: names };
  }

  #offered(agent: string): Map<string, McpToolRef> {
    const lists = new Map<string, string[]>();
    for (const c of this.#byAgent.get(agent)?.values() ?? []) if (c.status === 'connected') lists.set(c.name, c.tools.map((t) => t.name));
    return offeredToolNames(lists);
  }

  /**
   * The agent's MCP tools for a turn: servers not yet started are started and
   * awaited (up to CONNECT_WAIT_MS, or until `signal` aborts); a server that
   * failed or is waiting out its backoff is left out.
   */
  async toolsFor(agent: string, signal: AbortSignal): Promise<McpToolSpec[]> {
    const conns = [...(this.#byAgent.get(agent)?.values() ?? [])];
    const pending = conns.filter((c) => c.status !== 'connected' && !c.retrying).map((c) => c.ensure());
    if (pending.length > 0) await settleWithin(Promise.all(pending), CONNECT_WAIT_MS, signal);
    signal.throwIfAborted();
    const byName = new Map(conns.map((c) => [c.name, c]));
    const specs: McpToolSpec[] = [];
    for (const [offered, ref] of this.#offered(agent)) {
      const tool = byName.get(ref.server)?.tools.find((t) => t.name === ref.tool);
      if (tool === undefined) continue;
      specs.push({ name: offered, description: tool.description ?? tool.title ?? '', parameters: tool.inputSchema as Record<string, unknown>, server: ref.server });
    }
    return specs;
  }

  async call(agent: string, offered: string, args: unknown, timeoutMs: number, signal: AbortSignal): Promise<{ output: string; isError: boolean }> {
    const ref = this.#offered(agent).get(offered);
    const conn = ref === undefined ? undefined : this.#byAgent.get(agent)?.get(ref.server);
    if (ref === undefined || conn === undefined) throw new Error(`MCP tool "${offered}" is not available (its server is not connected)`);
    return conn.call(ref.tool, args, timeoutMs, signal);
  }

  async closeAll(): Promise<void> {
    const all = [...this.#byAgent.values()].flatMap((m) => [...m.values()]);
    this.#byAgent.clear();
    await Promise.all(all.map((c) => c.stop()));
  }
}

/** Waits for `p` at most `ms`, or until `signal` aborts; never rejects. */
function settleWithin(p: Promise<unknown>, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    p.then(done, done);
  });
}
