/**
 * Harnesses: the code that gives an agent its tools. Built-in tools (`peers`,
 * `search_sessions`, `skill`) run in the shard; harness modules run in the
 * shard's harness thread (harness-thread.ts), away from the shard's memory
 * and environment, and reach the daemon only through the capabilities their
 * config grants: each capability call comes back to the shard, which checks
 * the grant, fixes the calling agent, and forwards it as a comlink call to
 * main's harness host, which narrows every answer (PROTOCOL §5).
 */
import * as Comlink from 'comlink';
import type { MessagePort } from 'node:worker_threads';
import type { AgentConfig, Capability, HarnessConfig, ProviderConfig } from '../../shared/config.ts';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import type { HarnessHostApi } from '../../shared/threads/harness-host-api.ts';
import type { ToolSpec } from '../../models/types.ts';
import type { Capabilities, Tool, ToolContext, ToolSet } from './tools.ts';
import { NO_PARAMETERS } from '../../threads/harness/messages.ts';
import { HarnessThread, type HarnessCall } from './harness-thread-client.ts';
import { harnessEnv } from '../../threads/harness/harness-env.ts';
import type { Cancellation } from '../turn/cancellation.ts';
import type { McpTools } from './mcp-tools.ts';

export class Harness {
  readonly #host: Comlink.Remote<HarnessHostApi>;
  readonly #thread: HarnessThread;
  /** Tools per agent config: a changed config is a new object, so it is rebuilt. */
  readonly #toolSets = new WeakMap<AgentConfig, Promise<ToolSet>>();
  /** Built-ins plus harness tools, before `config.tools` selects. */
  readonly #ownSets = new WeakMap<AgentConfig, Promise<ToolSet>>();
  /** Each module's tool list, as its thread described it. */
  readonly #modules = new Map<string, Promise<ToolSpec[]>>();
  /** The MCP thread (mcp-tools.ts); null where there is none (in-process benches). */
  readonly #mcp: McpTools | null;

  constructor(port: MessagePort, home: string, providers: Record<string, ProviderConfig>, mcp: McpTools | null = null) {
    this.#host = Comlink.wrap<HarnessHostApi>(nodeEndpoint(port));
    port.unref(); // pending capability calls keep their turns alive, not the thread
    this.#thread = new HarnessThread(home, harnessEnv(process.env, providers), (call, cap, args) => this.#granted(call, cap, args));
    this.#mcp = mcp;
  }

  /** A capability request from harness code: only what the call's harness was granted, always as the call's agent. */
  #granted(call: HarnessCall, capability: string, args: unknown[]): Promise<unknown> {
    if (!(call.granted as string[]).includes(capability)) {
      return Promise.reject(new Error(`capability "${capability}" was not granted to harness module "${call.module}"`));
    }
    return this.#host.call({ agent: call.agent, sender: call.sender }, capability as Capability, args);
  }

  /** The capability functions for the running turn's pair (`ctx.agent`, `ctx.sender`), only those in `granted`. */
  capabilities(who: { agent: string; sender: string }, granted: readonly Capability[]): Capabilities {
    const call = (cap: Capability, ...args: unknown[]): Promise<unknown> => this.#host.call({ agent: who.agent, sender: who.sender }, cap, args);
    const caps: Capabilities = {};
    if (granted.includes('peers.list')) caps.peers = { list: () => call('peers.list') };
    if (granted.includes('sessions.search')) caps.sessions = { search: (query, opts = {}) => call('sessions.search', query, opts) };
    if (granted.includes('skills.list') || granted.includes('skills.get')) {
      caps.skills = {};
      if (granted.includes('skills.list')) caps.skills.list = () => call('skills.list');
      if (granted.includes('skills.get')) caps.skills.get = (name) => call('skills.get', name);
    }
    return caps;
  }

  /**
   * The agent's tools: built-ins plus its harness modules' and MCP servers'
   * tools, or exactly `config.tools` when set. MCP tools are asked for at
   * every turn (servers come and go); the rest is built once per config.
   */
  toolsFor(agent: string, config: AgentConfig, cancel?: Cancellation): Promise<ToolSet> {
    if (this.#mcp !== null && Object.keys(config.mcps).length > 0) return this.#withMcp(this.#mcp, agent, config, cancel);
    let set = this.#toolSets.get(config);
    if (set === undefined) {
      set = this.#own(config).then((all) => selectTools(all, config.tools));
      this.#toolSets.set(config, set);
      set.catch(() => this.#toolSets.delete(config)); // a failed load is retried next turn
    }
    return set;
  }

  async #withMcp(mcp: McpTools, agent: string, config: AgentConfig, cancel?: Cancellation): Promise<ToolSet> {
    const signal = cancel?.signal ?? new AbortController().signal;
    const [own, mcpTools] = await Promise.all([this.#own(config), mcp.toolsFor(agent, config.tool_timeout_ms, signal)]);
    const all = new Map(own);
    for (const tool of mcpTools) if (!all.has(tool.name)) all.set(tool.name, tool);
    return selectTools(all, config.tools);
  }

  #own(config: AgentConfig): Promise<ToolSet> {
    let set = this.#ownSets.get(config);
    if (set === undefined) {
      set = this.#build(config);
      this.#ownSets.set(config, set);
      set.catch(() => this.#ownSets.delete(config));
    }
    return set;
  }

  async #build(config: AgentConfig): Promise<ToolSet> {
    const all = new Map<string, Tool>();
    for (const tool of this.#builtins()) all.set(tool.name, tool);
    for (const h of config.harnesses) {
      for (const spec of await this.#describe(h.module)) all.set(spec.name, this.#remote(h, spec, config.tool_timeout_ms));
    }
    return all;
  }

  #builtins(): Tool[] {
    const caps = (ctx: ToolContext): Capabilities => this.capabilities(ctx, ['peers.list', 'sessions.search', 'skills.list', 'skills.get']);
    return [
      {
        name: 'peers',
        description: 'List the agents of this daemon you can work with: name, description, model.',
        parameters: NO_PARAMETERS,
        run: async (_args, ctx) => JSON.stringify(await caps(ctx).peers!.list()),
      },
      {
        name: 'search_sessions',
        description: "Search your past conversations by words; returns the best matches with the messages around them.",
        parameters: {
          type: 'object',
          properties: { query: { type: 'string', description: 'words to look for' }, limit: { type: 'integer', minimum: 1, maximum: 20 } },
          required: ['query'],
        },
        run: async (args, ctx) => {
          const { query, limit } = (args ?? {}) as { query?: unknown; limit?: unknown };
          if (typeof query !== 'string') throw new Error('query must be a string');
          return JSON.stringify(await caps(ctx).sessions!.search(query, typeof limit === 'number' ? { limit } : {}));
        },
      },
      {
        name: 'skill',
        description: "Without a name, list the skills you may use; with a name, read that skill's instructions.",
        parameters: { type: 'object', properties: { name: { type: 'string' } } },
        run: async (args, ctx) => {
          const { name } = (args ?? {}) as { name?: unknown };
          if (name === undefined || name === '') return JSON.stringify(await caps(ctx).skills!.list!());
          if (typeof name !== 'string') throw new Error('name must be a string');
          return ((await caps(ctx).skills!.get!(name)) as { body: string }).body;
        },
      },
    ];
  }

  #describe(module: string): Promise<ToolSpec[]> {
    let specs = this.#modules.get(module);
    if (specs === undefined) {
      specs = this.#thread.describe(module);
      specs.catch(() => this.#modules.delete(module)); // a failed load is retried next turn
      this.#modules.set(module, specs);
    }
    return specs;
  }

  /** A harness tool as the agent loop sees it: each run is a call into the harness thread. */
  #remote(h: HarnessConfig, spec: ToolSpec, timeoutMs: number): Tool {
    const granted = [...h.capabilities];
    return {
      ...spec,
      run: (args, ctx) => this.#thread.call({ module: h.module, tool: spec.name, args, agent: ctx.agent, sender: ctx.sender, granted }, timeoutMs, ctx.signal),
    };
  }
}

/** Exactly the named tools (names not found are left out), or all when `names` is null. */
function selectTools(all: ToolSet, names: readonly string[] | null): ToolSet {
  if (names === null) return all;
  const only = new Map<string, Tool>();
  for (const name of names) {
    const tool = all.get(name);
    if (tool !== undefined) only.set(name, tool);
  }
  return only;
}
