/**
 * The agents main knows: names for routing checks (404 before any `start`),
 * `agent_info` for the agent operations, and the configs shards receive at
 * start and after every change.
 */
import type { AgentConfig } from '../shared/config.ts';

export interface AgentInfo {
  name: string;
  description: string;
  model: string;
  max_iterations: number;
  thinking: boolean;
  skills: string[];
  /** The names of the agent's MCP servers (their settings stay in `config`). */
  mcps: string[];
  /** The whole stored configuration, secrets included; cleared wherever a harness receives it. */
  config: Record<string, unknown>;
}

export class AgentRegistry {
  #agents: Record<string, AgentConfig>;
  readonly #preferredDefault: string;

  constructor(agents: Record<string, AgentConfig>, preferredDefault: string) {
    this.#agents = { ...agents };
    this.#preferredDefault = preferredDefault;
  }

  /** The agent `list_models` and `set_active_model` speak of: `assistant` if it exists, else the first by name. */
  get defaultAgent(): string | null {
    if (this.has(this.#preferredDefault)) return this.#preferredDefault;
    return Object.keys(this.#agents).sort()[0] ?? null;
  }

  get size(): number {
    return Object.keys(this.#agents).length;
  }

  has(name: string): boolean {
    return Object.hasOwn(this.#agents, name);
  }

  get(name: string): AgentConfig | undefined {
    return this.has(name) ? this.#agents[name] : undefined;
  }

  /** The configs as shards receive them (a new object after every change). */
  all(): Record<string, AgentConfig> {
    return this.#agents;
  }

  set(name: string, config: AgentConfig): void {
    this.#agents = { ...this.#agents, [name]: config };
  }

  remove(name: string): void {
    const { [name]: _gone, ...rest } = this.#agents;
    this.#agents = rest;
  }

  info(name: string): AgentInfo | undefined {
    const c = this.get(name);
    if (c === undefined) return undefined;
    return {
      name,
      description: c.description,
      model: c.model,
      max_iterations: c.max_iterations,
      thinking: c.thinking,
      skills: [...c.skills],
      mcps: Object.keys(c.mcps),
      config: structuredClone(c) as unknown as Record<string, unknown>,
    };
  }

  list(): AgentInfo[] {
    return Object.keys(this.#agents)
      .sort()
      .map((n) => this.info(n)!);
  }

  activeModel(): string {
    const d = this.defaultAgent;
    return d === null ? '' : this.#agents[d]!.model;
  }
}
