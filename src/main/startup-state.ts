/**
 * What main reads from the store at start-up: the agents (seeded from the
 * config file on the first start only, then managed over the protocol) and
 * the bus's subscriptions. A storage thread does the reading (the `prepare`
 * task, which also brings the schema up to date or refuses a newer one);
 * main validates what it gets, before any shard starts.
 */
import { type AgentConfig, type ResolvedConfig } from '../shared/config.ts';
import { defaultAgents, validateAgentConfig } from '../shared/config-checks.ts';
import type { StoredStartupState } from '../threads/storage/messages.ts';
import type { Logger } from '../shared/log.ts';
import type { SubscriptionInfo } from '../shared/wire/ops.ts';
import type { StoragePool } from './hosts/storage-pool.ts';

export interface StartupState {
  agents: Record<string, AgentConfig>;
  subscriptions: SubscriptionInfo[];
}

/** Prepares the store and reads the start-up state; with persistence off (no pool), the config's agents. */
export async function readStartupState(storage: StoragePool | null, config: ResolvedConfig, log: Logger): Promise<StartupState> {
  if (storage === null) return { agents: config.agents, subscriptions: [] };
  const stored = await storage.run<StoredStartupState>({ op: 'prepare', seedAgents: config.agents });
  return { agents: loadAgents(stored, config, log), subscriptions: stored.subscriptions };
}

/** Cluster mode: the agents and subscriptions as the shared store holds them now (another node changed them). */
export async function reloadStoredState(storage: StoragePool, config: ResolvedConfig, log: Logger): Promise<StartupState> {
  const stored = await storage.run<StoredStartupState>({ op: 'read_state' });
  // seededNow: true only skips the start-up report of the file's agents missing from the store.
  return { agents: loadAgents({ ...stored, seededNow: true }, config, log), subscriptions: stored.subscriptions };
}

/**
 * The stored agents. One that no longer validates (its provider left the
 * file, say) is not loaded, and says so in the log; the daemon still starts.
 */
function loadAgents(stored: StoredStartupState, config: ResolvedConfig, log: Logger): Record<string, AgentConfig> {
  const providers = Object.keys(config.providers);
  const out: Record<string, AgentConfig> = {};
  if (!stored.seededNow) reportUnseededAgents(config, new Set(stored.agents.map((r) => r.name)), log);
  for (const row of stored.agents) {
    const raw = JSON.parse(row.config) as Record<string, unknown>;
    const own = typeof raw.provider === 'string' ? [raw.provider] : [];
    try {
      out[row.name] = validateAgentConfig(raw, 'database', `agents.${row.name}`, [...providers, ...own]);
    } catch (err) {
      log.error({ agent: row.name, err: (err as Error).message }, 'a stored agent does not validate; it is not loaded');
    }
  }
  return out;
}

/**
 * The file's agents are seeded on the first start only; later, agents are
 * managed over the protocol. An agent added to the file since then is not
 * loaded: say so, with the command that adds it.
 */
function reportUnseededAgents(config: ResolvedConfig, stored: ReadonlySet<string>, log: Logger): void {
  // A file without agents gets the built-in default one: deleting it over the protocol is no news.
  if (JSON.stringify(config.agents) === JSON.stringify(defaultAgents())) return;
  for (const [name, agent] of Object.entries(config.agents)) {
    if (stored.has(name)) continue;
    log.warn({ agent: name, file: config.configFile, command: createCommand(name, agent) },
      `agent "${name}" is in the config file but not in the database (the file's agents are read on the first start only): it is not loaded; add it with agentctl agents create`);
  }
}

/** `agentctl agents create NAME '<config>'`, or `@FILE` when the config holds MCP secrets (which never go to the log). */
export function createCommand(name: string, agent: AgentConfig): string {
  const secret = Object.values(agent.mcps).some((m) => Object.keys(m.env ?? {}).length > 0 || Object.keys(m.headers ?? {}).length > 0);
  if (secret) return `agentctl agents create ${name} @FILE   (FILE: the file's "agents.${name}" entry, not shown here: it holds MCP env or header values)`;
  return `agentctl agents create ${name} '${JSON.stringify(agent).replaceAll("'", "'\\''")}'`;
}
