/**
 * The agents main knows: names for routing checks (404 before any `start`),
 * `agent_info` for the agent operations, and the configs shards receive at
 * start (after that, each change as an `agent` message).
 */
import type { AgentConfig } from '../shared/config.ts';
import type { AgentInfo } from '../shared/wire/ops.ts';

export type { AgentInfo };

export class AgentRegistry {
  /** A Map, changed in place: a change costs the same however many agents there are. */
  readonly #agents: Map<string, AgentConfig>;
  readonly #preferredDefault: string;

  constructor(agents: Record<string, AgentConfig>, preferredDefault: string) {
    this.#agents = new Map(Object.entries(agents));
    this.#preferredDefault = preferredDefault;
  }

  /** The agent `list_models` and `set_active_model` speak of: `assistant` if it exists, else the first by name. */
  get defaultAgent(): string | null {
    if (this.has(this.#preferredDefault)) return this.#preferredDefault;
    return [...this.#agents.keys()].sort()[0] ?? null;
  }

  get size(): number {
    return this.#agents.size;
  }

  has(name: string): boolean {
    return this.#agents.has(name);
  }

  get(name: string): AgentConfig | undefined {
    return this.#agents.get(name);
  }

  /** Every config, as a shard receives them when it starts (later changes reach it one agent at a time). */
  all(): Record<string, AgentConfig> {
    return Object.fromEntries(this.#agents);
  }

  set(name: string, config: AgentConfig): void {
    this.#agents.set(name, config);
  }

  remove(name: string): void {
    this.#agents.delete(name);
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
      config: structuredClone(c),
    };
  }

  list(): AgentInfo[] {
    return [...this.#agents.keys()]
      .sort()
      .map((n) => this.info(n)!);
  }

  activeModel(): string {
    const d = this.defaultAgent;
    return d === null ? '' : this.#agents.get(d)!.model;
  }
}
