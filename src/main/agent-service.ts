/**
 * Agent management (PROTOCOL §4, Agents, skills, models): every change is
 * validated field by field, stored, and sent to every shard (the changed
 * agent only) before it is acknowledged, so it reaches them before the next
 * turn of that agent starts (main's messages to a shard are ordered).
 */
import { AgentdError, Code } from '../shared/errors.ts';
import { isValidAgentName, type AgentConfig, type ProviderConfig } from '../shared/config.ts';
import { validateAgentConfig } from '../shared/config-checks.ts';
import { mergePatch } from '../shared/merge-patch.ts';
import { listModels } from '../shared/provider-http.ts';
import type { Logger } from '../shared/log.ts';
import type { AgentInfo, AgentRegistry } from './agent-registry.ts';
import { tooMany } from './limits.ts';
import type { EventBus } from './bus/event-bus.ts';
import type { ShardPool } from './hosts/shard-pool.ts';
import type { StoragePool } from './hosts/storage-pool.ts';
import { checkHarnessModules } from './hosts/harness-modules.ts';

export interface AgentServiceOptions {
  agents: AgentRegistry;
  pool: ShardPool;
  storage: StoragePool | null;
  bus: EventBus;
  providers: Record<string, ProviderConfig>;
  log: Logger;
  /** $AGENTD_HOME: harness modules are looked up in its `harness` folder. */
  home: string;
  /** `max_agents`: creating past it gets 429. */
  maxAgents: number;
  /** Called after every change of the agents (the MCP thread follows their `mcps`). */
  onChange?: () => void;
  /** `rename_agent`: the webhooks' agent filters are read again once the store renamed the agent. */
  webhooks?: { reload(): Promise<void> };
  /** Cluster mode: the other nodes are told of each change, and purge a deleted agent before its rows go. */
  cluster?: { agentChanged(name: string): void; purgeElsewhere(name: string): Promise<void> };
}

const MODEL_LIST_TIMEOUT_MS = 10_000;

export class AgentService {
  readonly #o: AgentServiceOptions;
  /** Names being created (stored, not yet registered): they count against the limit and against a second create. */
  readonly #creating = new Set<string>();

  constructor(opts: AgentServiceOptions) {
    this.#o = opts;
  }

  /** Field by field (a ConfigError is a 400 naming the field), then, without blocking main, that every harness module is installed. */
  async #validate(op: string, raw: unknown): Promise<AgentConfig> {
    const config = validateAgentConfig(raw, op, 'config', Object.keys(this.#o.providers));
    await checkHarnessModules(this.#o.home, config, op);
    return config;
  }

  async #save(name: string, config: AgentConfig): Promise<AgentInfo> {
    await this.#o.storage?.run({ op: 'agent_upsert', name, config: JSON.stringify(config) });
    this.#o.agents.set(name, config);
    this.#o.pool.broadcast({ type: 'agent', name, config });
    this.#o.onChange?.();
    this.#o.cluster?.agentChanged(name);
    return this.#o.agents.info(name)!;
  }

  async create(name: string, raw: unknown): Promise<AgentInfo> {
    if (!isValidAgentName(name)) {
      throw new AgentdError(Code.BadRequest, 'create_agent.name must be 1-64 letters, digits, "-", "_" or ".", not starting with "."');
    }
    if (this.#o.agents.has(name) || this.#creating.has(name)) throw new AgentdError(Code.Conflict, `agent "${name}" exists already`);
    if (this.#o.agents.size + this.#creating.size >= this.#o.maxAgents) throw tooMany('agents', this.#o.maxAgents, 'max_agents');
    // The name and the slot are held while the config is checked and saved, so concurrent creates cannot pass either.
    this.#creating.add(name);
    try {
      const config = await this.#validate('create_agent', raw);
      return await this.#save(name, config);
    } finally {
      this.#creating.delete(name);
    }
  }

  /**
   * `reload_config`: the config file's entry for `name`, as it is (not a
   * patch): creates the agent or replaces its config. Checked as create_agent
   * and update_agent check theirs.
   */
  async put(name: string, raw: unknown): Promise<AgentInfo> {
    if (!this.#o.agents.has(name)) return this.create(name, raw);
    return this.#save(name, await this.#validate('reload_config', raw));
  }

  /** `reload_config`: the providers agents may name from now on (main's copy; shards get theirs as a message). */
  setProviders(providers: Record<string, ProviderConfig>): void {
    this.#o.providers = providers;
  }

  /** `reload_config`: a new `max_agents`, for creates from now on. */
  setMaxAgents(max: number): void {
    this.#o.maxAgents = max;
  }

  async update(name: string, patch: unknown): Promise<AgentInfo> {
    const current = this.#o.agents.get(name);
    if (current === undefined) throw new AgentdError(Code.NotFound, `unknown agent "${name}"`);
    const config = await this.#validate('update_agent', mergePatch(current, patch));
    // The agent may have been deleted while the module was checked.
    if (!this.#o.agents.has(name)) throw new AgentdError(Code.NotFound, `unknown agent "${name}"`);
    return this.#save(name, config);
  }

  /** Refuses new turns at once, cancels running ones, then deletes the agent with its conversations and subscriptions. */
  async delete(name: string): Promise<void> {
    if (!this.#o.agents.has(name)) throw new AgentdError(Code.NotFound, `unknown agent "${name}"`);
    this.#o.agents.remove(name);
    this.#o.pool.broadcast({ type: 'agent', name, config: null });
    this.#o.onChange?.();
    await this.#o.pool.purgeAgent(name);
    // Cluster mode: no node may still write for the agent once its conversations are deleted.
    await this.#o.cluster?.purgeElsewhere(name);
    await this.#o.storage?.run({ op: 'agent_delete', name });
    await this.#o.bus.removeAgent(name, { stored: false });
    this.#o.cluster?.agentChanged(name);
  }

  /**
   * Renames an agent, keeping its conversations, subscriptions and webhook
   * filters. New turns for it are refused from the start (404); refused with
   * 409 if any turn of it is running or queued here. Its conversations are
   * forgotten on every shard (and, in a cluster, on every node) before the
   * store renames them, so none is held under the old name; its pairs hash
   * to other shards under the new one, and load from the store there.
   */
  async rename(name: string, newName: string): Promise<AgentInfo> {
    const config = this.#o.agents.get(name);
    if (config === undefined) throw new AgentdError(Code.NotFound, `unknown agent "${name}"`);
    if (!isValidAgentName(newName)) throw new AgentdError(Code.BadRequest, 'rename_agent.new_name must be 1-64 letters, digits, "-", "_" or ".", not starting with "."');
    if (this.#o.agents.has(newName) || this.#creating.has(newName)) throw new AgentdError(Code.Conflict, `agent "${newName}" exists already`);
    this.#creating.add(newName);
    this.#o.agents.remove(name);
    this.#o.pool.broadcast({ type: 'agent', name, config: null });
    let renamed = false;
    try {
      const busy = (await this.#o.pool.activeConversations(name, null)).filter((c) => c.running || c.queued > 0);
      if (busy.length > 0) throw new AgentdError(Code.Conflict, `agent "${name}" has turns running or queued (sender "${busy[0]!.sender}"): rename it once they have ended`);
      await this.#o.pool.purgeAgent(name);
      await this.#o.cluster?.purgeElsewhere(name);
      const stored = (await this.#o.storage?.run<boolean>({ op: 'agent_rename', name, newName })) ?? true;
      if (!stored) throw new AgentdError(Code.NotFound, `unknown agent "${name}" (the store has no such agent)`);
      renamed = true;
    } finally {
      this.#creating.delete(newName);
      const now = renamed ? newName : name;
      this.#o.agents.set(now, config);
      this.#o.pool.broadcast({ type: 'agent', name: now, config });
      // Other nodes may have purged it already: they read it back from the store.
      if (!renamed) this.#o.cluster?.agentChanged(name);
    }
    this.#o.onChange?.();
    this.#o.bus.renameAgent(name, newName);
    await this.#o.webhooks?.reload();
    this.#o.cluster?.agentChanged(name);
    this.#o.cluster?.agentChanged(newName);
    return this.#o.agents.info(newName)!;
  }

  /** `echo` and whatever each configured endpoint offers; `active` is the default agent's model. */
  async models(): Promise<{ name: string; active: boolean }[]> {
    const active = this.#o.agents.activeModel();
    const names = new Set<string>(['echo']);
    const lists = await Promise.allSettled(
      Object.entries(this.#o.providers).map(async ([provider, cfg]) => {
        try {
          return await listModels(cfg, AbortSignal.timeout(MODEL_LIST_TIMEOUT_MS));
        } catch (err) {
          this.#o.log.warn({ provider, err: (err as Error).message }, 'listing models failed');
          throw err;
        }
      }),
    );
    for (const l of lists) if (l.status === 'fulfilled') for (const m of l.value) names.add(m);
    if (lists.length > 0 && lists.every((l) => l.status === 'rejected')) {
      throw new AgentdError(Code.Internal, `no provider answered: ${(lists[0] as PromiseRejectedResult).reason instanceof Error ? ((lists[0] as PromiseRejectedResult).reason as Error).message : ''}`);
    }
    return [...names].sort().map((name) => ({ name, active: name === active }));
  }

  /** Points the default agent at `model`, served by the first provider that offers it (its current one first). */
  async setActiveModel(model: string): Promise<void> {
    const name = this.#o.agents.defaultAgent;
    if (name === null) throw new AgentdError(Code.NotFound, 'there is no agent to set a model on');
    const current = this.#o.agents.get(name)!;
    if (model === 'echo') {
      await this.#save(name, { ...current, model, provider: null });
      return;
    }
    const order = Object.keys(this.#o.providers).sort((a, b) => (a === current.provider ? -1 : b === current.provider ? 1 : 0));
    for (const provider of order) {
      let offered: string[];
      try {
        offered = await listModels(this.#o.providers[provider]!, AbortSignal.timeout(MODEL_LIST_TIMEOUT_MS));
      } catch {
        continue;
      }
      if (offered.includes(model)) {
        await this.#save(name, { ...current, model, provider });
        return;
      }
    }
    throw new AgentdError(Code.NotFound, `no configured provider offers model "${model}"`);
  }
}
