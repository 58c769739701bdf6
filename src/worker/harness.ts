/**
 * Harnesses: the code that gives an agent its tools, in the shard. Built-in
 * tools (`peers`, `search_sessions`, `skill`) and custom harness modules both
 * reach the daemon only through capability functions, each a comlink call to
 * main's harness host, which narrows every answer (PROTOCOL §5). A module's
 * tools get exactly the capabilities its config grants, nothing else.
 *
 * A harness module is a JS file exporting `tools` (or a default export with
 * `tools`, or a default array): each `{name, description, parameters, run(args, ctx)}`
 * where `parameters` is a JSON schema and `ctx` is `{agent, sender, signal, capabilities}`.
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as Comlink from 'comlink';
import type { MessagePort } from 'node:worker_threads';
import type { AgentConfig, Capability, HarnessConfig } from '../shared/config.ts';
import { nodeEndpoint } from '../shared/comlink-node.ts';
import type { HarnessHostApi } from '../shared/threads.ts';
import type { Capabilities, Tool, ToolContext, ToolSet } from './tools.ts';
import type { Cancellation } from './cancellation.ts';
import type { McpTools } from './mcp-tools.ts';

const NO_PARAMETERS = { type: 'object', properties: {}, additionalProperties: false };

export class Harness {
  readonly #host: Comlink.Remote<HarnessHostApi>;
  readonly #home: string;
  /** Tools per agent config: a changed config is a new object, so it is rebuilt. */
  readonly #toolSets = new WeakMap<AgentConfig, Promise<ToolSet>>();
  /** Built-ins plus harness tools, before `config.tools` selects. */
  readonly #ownSets = new WeakMap<AgentConfig, Promise<ToolSet>>();
  readonly #modules = new Map<string, Promise<Tool[]>>();
  /** The MCP thread (mcp-tools.ts); null where there is none (in-process benches). */
  readonly #mcp: McpTools | null;

  constructor(port: MessagePort, home: string, mcp: McpTools | null = null) {
    this.#host = Comlink.wrap<HarnessHostApi>(nodeEndpoint(port));
    port.unref(); // pending capability calls keep their turns alive, not the thread
    this.#home = home;
    this.#mcp = mcp;
  }

  /** The capability functions for `agent`, only those in `granted`. */
  capabilities(agent: string, granted: readonly Capability[]): Capabilities {
    const call = (cap: Capability, ...args: unknown[]): Promise<unknown> => this.#host.call(agent, cap, args);
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
      set = this.#own(agent, config).then((all) => selectTools(all, config.tools));
      this.#toolSets.set(config, set);
      set.catch(() => this.#toolSets.delete(config)); // a failed load is retried next turn
    }
    return set;
  }

  async #withMcp(mcp: McpTools, agent: string, config: AgentConfig, cancel?: Cancellation): Promise<ToolSet> {
    const [own, mcpTools] = await Promise.all([this.#own(agent, config), mcp.toolsFor(agent, cancel?.signal ?? new AbortController().signal)]);
    const all = new Map(own);
    for (const tool of mcpTools) if (!all.has(tool.name)) all.set(tool.name, tool);
    return selectTools(all, config.tools);
  }

  #own(agent: string, config: AgentConfig): Promise<ToolSet> {
    let set = this.#ownSets.get(config);
    if (set === undefined) {
      set = this.#build(agent, config);
      this.#ownSets.set(config, set);
      set.catch(() => this.#ownSets.delete(config));
    }
    return set;
  }

  async #build(agent: string, config: AgentConfig): Promise<ToolSet> {
    const all = new Map<string, Tool>();
    for (const tool of this.#builtins(agent)) all.set(tool.name, tool);
    for (const h of config.harnesses) {
      const caps = this.capabilities(agent, h.capabilities);
      for (const tool of await this.#load(h)) {
        all.set(tool.name, { ...tool, run: (args, ctx) => tool.run(args, { ...ctx, capabilities: caps }) });
      }
    }
    return all;
  }

  #builtins(agent: string): Tool[] {
    const caps = this.capabilities(agent, ['peers.list', 'sessions.search', 'skills.list', 'skills.get']);
    return [
      {
        name: 'peers',
        description: 'List the agents of this daemon you can work with: name, description, model.',
        parameters: NO_PARAMETERS,
        run: async () => JSON.stringify(await caps.peers!.list()),
      },
      {
        name: 'search_sessions',
        description: "Search your past conversations by words; returns the best matches with the messages around them.",
        parameters: {
          type: 'object',
          properties: { query: { type: 'string', description: 'words to look for' }, limit: { type: 'integer', minimum: 1, maximum: 20 } },
          required: ['query'],
        },
        run: async (args) => {
          const { query, limit } = (args ?? {}) as { query?: unknown; limit?: unknown };
          if (typeof query !== 'string') throw new Error('query must be a string');
          return JSON.stringify(await caps.sessions!.search(query, typeof limit === 'number' ? { limit } : {}));
        },
      },
      {
        name: 'skill',
        description: "Without a name, list the skills you may use; with a name, read that skill's instructions.",
        parameters: { type: 'object', properties: { name: { type: 'string' } } },
        run: async (args) => {
          const { name } = (args ?? {}) as { name?: unknown };
          if (name === undefined || name === '') return JSON.stringify(await caps.skills!.list!());
          if (typeof name !== 'string') throw new Error('name must be a string');
          return ((await caps.skills!.get!(name)) as { body: string }).body;
        },
      },
    ];
  }

  #load(h: HarnessConfig): Promise<Tool[]> {
    const path = isAbsolute(h.module) ? h.module : resolve(this.#home, h.module);
    let loaded = this.#modules.get(path);
    if (loaded === undefined) {
      loaded = import(pathToFileURL(path).href).then((mod: Record<string, unknown>) => toolsOf(mod, h.module));
      loaded.catch(() => this.#modules.delete(path));
      this.#modules.set(path, loaded);
    }
    return loaded;
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

function toolsOf(mod: Record<string, unknown>, name: string): Tool[] {
  const def = mod.default as { tools?: unknown } | unknown[] | undefined;
  const list = mod.tools ?? (Array.isArray(def) ? def : def?.tools);
  if (!Array.isArray(list)) throw new Error(`harness module ${name} exports no "tools" list`);
  return list.map((t: unknown, i) => {
    const tool = t as Partial<Tool> & { run?: (args: unknown, ctx: ToolContext) => unknown };
    if (typeof tool?.name !== 'string' || typeof tool.run !== 'function') throw new Error(`harness module ${name}: tools[${i}] needs a name and a run function`);
    return {
      name: tool.name,
      description: typeof tool.description === 'string' ? tool.description : '',
      parameters: tool.parameters ?? NO_PARAMETERS,
      run: tool.run as Tool['run'],
    };
  });
}
