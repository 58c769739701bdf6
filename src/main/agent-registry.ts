/**
 * The agents main knows: names for routing checks (404 before any `start`)
 * and `agent_info` for the agent operations. Shards get a copy of the
 * configs at start and with every change.
 */
import type { AgentConfig } from '../shared/config.ts';

export interface AgentInfo {
  name: string;
  description: string;
  model: string;
  max_iterations: number;
  thinking: boolean;
  skills: string[];
  mcps: string[];
  config: Record<string, unknown>;
}

export class AgentRegistry {
  #agents: Record<string, AgentConfig>;
  /** The agent whose model `list_models` calls active: the default agent, else the first by name. */
  readonly defaultAgent: string;

  constructor(agents: Record<string, AgentConfig>, defaultAgent: string) {
    this.#agents = agents;
    this.defaultAgent = agents[defaultAgent] !== undefined ? defaultAgent : Object.keys(agents).sort()[0]!;
  }

  get size(): number {
    return Object.keys(this.#agents).length;
  }

  has(name: string): boolean {
    return Object.hasOwn(this.#agents, name);
  }

  /** The configs as shards receive them. */
  all(): Record<string, AgentConfig> {
    return this.#agents;
  }

  info(name: string): AgentInfo | undefined {
    if (!this.has(name)) return undefined;
    const c = this.#agents[name]!;
    return {
      name,
      description: c.description,
      model: c.model,
      max_iterations: c.max_iterations,
      thinking: false,
      skills: [],
      mcps: [],
      config: structuredClone(c) as unknown as Record<string, unknown>,
    };
  }

  list(): AgentInfo[] {
    return Object.keys(this.#agents)
      .sort()
      .map((n) => this.info(n)!);
  }

  activeModel(): string {
    return this.#agents[this.defaultAgent]!.model;
  }

  models(): { name: string; active: boolean }[] {
    const active = this.activeModel();
    const names = new Set(['echo', ...Object.values(this.#agents).map((a) => a.model)]);
    return [...names].sort().map((name) => ({ name, active: name === active }));
  }
}
