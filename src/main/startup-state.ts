/**
 * What main reads from the database at start-up, the one time it touches the
 * database synchronously: the agents (seeded from the config file on the
 * first start only, then managed over the protocol) and the bus's
 * subscriptions.
 */
import { defaultAgents, validateAgentConfig, type AgentConfig, type ResolvedConfig } from '../shared/config.ts';
import { prepareDatabaseFile, type Db } from '../shared/db.ts';
import { startupStatements } from '../shared/daemon-sql.ts';
import type { Logger } from '../shared/log.ts';
import type { SubscriptionInfo } from './event-bus.ts';

export interface StartupState {
  agents: Record<string, AgentConfig>;
  subscriptions: SubscriptionInfo[];
}

/** Brings the database's schema up to date and reads the start-up state; with persistence off, the config's agents. */
export function readStartupState(dbPath: string | null, config: ResolvedConfig, log: Logger): StartupState {
  let state: StartupState = { agents: config.agents, subscriptions: [] };
  if (dbPath === null) return state;
  prepareDatabaseFile(dbPath, (db) => {
    const sql = startupStatements(db);
    const subscriptions = sql.subscriptions.all().map((r) => ({ ...r, once: r.once === 1 }));
    state = { agents: loadAgents(db, config, log), subscriptions };
  });
  return state;
}

/**
 * The agents of a database. A stored agent that no longer validates (its
 * provider left the file, say) is not loaded, and says so in the log; the
 * daemon still starts.
 */
function loadAgents(db: Db, config: ResolvedConfig, log: Logger): Record<string, AgentConfig> {
  const sql = startupStatements(db);
  const seededBefore = sql.agentsSeeded.get() !== undefined;
  if (!seededBefore) {
    const at = new Date().toISOString();
    db.transaction(() => {
      for (const [name, agent] of Object.entries(config.agents)) sql.seedAgent.run(name, JSON.stringify(agent), at, at);
      sql.markAgentsSeeded.run(at);
    })();
  }
  const providers = Object.keys(config.providers);
  const out: Record<string, AgentConfig> = {};
  const rows = sql.agents.all();
  if (seededBefore) reportUnseededAgents(config, new Set(rows.map((r) => r.name)), log);
  for (const row of rows) {
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
