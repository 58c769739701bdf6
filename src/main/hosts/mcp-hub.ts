/**
 * Main's side of the MCP thread (src/threads/mcp/mcp-thread.ts), which owns every
 * MCP connection: it starts the thread, keeps it following the agents'
 * `mcps`, hands each shard a port to it, mirrors every connection's state for
 * `list_mcps`, and turns state changes into `subscribe_mcp_events` frames.
 * Main never talks to a server itself.
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { McpConfig } from '../../shared/config.ts';
import type { Logger } from '../../shared/log.ts';
import type { FromMcpThread, McpState, McpThreadInit, ToMcpThread } from '../../threads/mcp/messages.ts';
import type { AgentRegistry } from '../agent-registry.ts';
import { McpEventStreams } from './mcp-events.ts';
import { workerScript } from './worker-script.ts';
import type { McpInfo } from '../../shared/wire/ops.ts';

/** How long shutdown waits for the MCP thread to stop its servers before terminating it. */
const CLOSE_TIMEOUT_MS = 5_000;

export type { McpInfo };

export interface McpHubOptions {
  agents: AgentRegistry;
  home: string;
  logLevel: string;
  log: Logger;
}

const stateKey = (agent: string, name: string): string => `${agent}\0${name}`;

function mcpsOf(agents: AgentRegistry): Record<string, Record<string, McpConfig>> {
  const out: Record<string, Record<string, McpConfig>> = {};
  for (const [name, config] of Object.entries(agents.all())) if (Object.keys(config.mcps).length > 0) out[name] = config.mcps;
  return out;
}

export class McpHub {
  readonly events = new McpEventStreams();
  /** Resolves once the thread runs; rejects if it dies first. */
  ready: Promise<void> = Promise.resolve();
  readonly #o: McpHubOptions;
  readonly #worker: Worker;
  readonly #states = new Map<string, McpState>();
  #closedWaiter: (() => void) | null = null;
  #closing: Promise<void> | null = null;

  private constructor(opts: McpHubOptions, worker: Worker) {
    this.#o = opts;
    this.#worker = worker;
  }

  /**
   * Starts the MCP thread (eager servers start connecting); `ready` resolves
   * once it runs. Messages posted before then wait in its queue, so shards
   * can start meanwhile.
   */
  static start(opts: McpHubOptions): McpHub {
    const init: McpThreadInit = { logLevel: opts.logLevel, home: opts.home, agents: mcpsOf(opts.agents) };
    const worker = new Worker(workerScript('mcp-thread'), { workerData: init });
    const hub = new McpHub(opts, worker);
    hub.ready = new Promise<void>((resolve, reject) => {
      worker.on('message', (msg: FromMcpThread) => (msg.type === 'ready' ? resolve() : hub.#onMessage(msg)));
      worker.once('exit', (code) => reject(new Error(`the MCP thread exited with code ${code} during start-up`)));
    });
    worker.on('error', (err) => opts.log.error({ err: err.message }, 'the MCP thread failed'));
    worker.on('exit', (code) => {
      hub.#closedWaiter?.();
      if (hub.#closing === null) opts.log.error({ code }, 'the MCP thread exited; MCP tools are unavailable until restart');
    });
    return hub;
  }

  #post(msg: ToMcpThread, transfer: MessagePort[] = []): void {
    this.#worker.postMessage(msg, transfer);
  }

  #onMessage(msg: FromMcpThread): void {
    if (msg.type === 'closed') return this.#closedWaiter?.();
    if (msg.type !== 'state') return;
    const { state, removed } = msg;
    if (removed) this.#states.delete(stateKey(state.agent, state.name));
    else this.#states.set(stateKey(state.agent, state.name), state);
    this.events.publish({
      agent: state.agent, name: state.name, transport: state.transport, status: state.status, error: state.error,
      tool_count: state.tools.length, timestamp: new Date().toISOString(),
    });
  }

  /** A fresh port to the MCP thread for a shard (and for each replacement shard). */
  portForShard(): MessagePort {
    const { port1, port2 } = new MessageChannel();
    this.#post({ type: 'port', port: port1 }, [port1]);
    return port2;
  }

  /** The agents changed: the MCP thread follows their `mcps` (entries gone or changed are stopped). */
  sync(): void {
    this.#post({ type: 'configs', agents: mcpsOf(this.#o.agents) });
  }

  reconnect(agent: string, name: string): void {
    this.#post({ type: 'reconnect', agent, name });
  }

  /** Every configured server (of one agent), by agent then name, with its last known state. */
  list(agent: string | null): McpInfo[] {
    const out: McpInfo[] = [];
    const agents = agent === null ? Object.keys(this.#o.agents.all()).sort() : [agent];
    for (const a of agents) {
      const mcps = this.#o.agents.get(a)?.mcps ?? {};
      for (const name of Object.keys(mcps).sort()) out.push(this.info(a, name, mcps[name]!));
    }
    return out;
  }

  info(agent: string, name: string, config: McpConfig): McpInfo {
    const s = this.#states.get(stateKey(agent, name));
    const tools = s?.tools ?? [];
    return {
      agent, name, transport: config.url !== undefined ? 'http' : 'stdio', status: s?.status ?? 'disconnected', error: s?.error ?? '',
      tool_count: tools.length, tools: [...tools], config: structuredClone(config),
    };
  }

  /** Stops every server (stdio children included), then the thread. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.events.closeAll();
    const stopped = new Promise<void>((resolve) => (this.#closedWaiter = resolve));
    this.#post({ type: 'shutdown' });
    const timer = setTimeout(() => this.#closedWaiter?.(), CLOSE_TIMEOUT_MS);
    await stopped;
    clearTimeout(timer);
    await this.#worker.terminate();
  }
}
