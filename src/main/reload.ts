/**
 * Changes without a restart (`reload_config`, SIGHUP): the configuration is
 * resolved again from the same flags and environment the daemon started with,
 * and what changed is applied where it can be applied live (agents,
 * providers, some limits, the log level); the rest is named as needing a
 * restart. A file that does not resolve (invalid JSON, a schema error)
 * changes nothing: its ConfigError is the 400 that says why.
 */
import type { ProviderConfig, ResolvedConfig } from '../shared/config.ts';
import type { Logger } from '../shared/log.ts';
import type { ReloadReport } from '../shared/wire/admin.ts';
import { AgentdError, Code } from '../shared/errors.ts';
import type { AgentService } from './agent-service.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { ShardPool } from './hosts/shard-pool.ts';
import type { EventBus } from './bus/event-bus.ts';
import type { ScheduleEngine } from './schedules/schedule-engine.ts';
import type { WebhookHub } from './webhooks/webhook-hub.ts';
import type { ConnectionLimiter } from './net/connection-limit.ts';
import { limitsOf } from './limits.ts';

/** What a shard started after a reload (a replaced one) is given: the providers and log level in force. */
export interface LiveSettings {
  providers: Record<string, ProviderConfig>;
  logLevel: string;
}

export interface ReloadTargets {
  log: Logger;
  live: LiveSettings;
  agents: AgentRegistry;
  agentService: AgentService;
  pool: ShardPool;
  bus: EventBus;
  schedules: ScheduleEngine;
  webhooks: WebhookHub;
  limiter: ConnectionLimiter;
  /** `get_stats`' limits (and `max_event_payload_bytes`, read from it per publish): updated in place. */
  limits: Record<string, number>;
}

/** The settings applied live, by ResolvedConfig key, each with what applies it. */
type Apply = (t: ReloadTargets, c: ResolvedConfig) => void;
const LIVE_LIMITS: Partial<Record<keyof ResolvedConfig, Apply>> = {
  maxAgents: (t, c) => t.agentService.setMaxAgents(c.maxAgents),
  maxSubscriptions: (t, c) => t.bus.setMaxSubscriptions(c.maxSubscriptions),
  maxSchedules: (t, c) => t.schedules.setMaxSchedules(c.maxSchedules),
  maxWebhooks: (t, c) => t.webhooks.setMaxWebhooks(c.maxWebhooks),
  maxConnections: (t, c) => (t.limiter.max = c.maxConnections),
  maxEventPayloadBytes: () => {}, // read from `limits` at each publish
};

/** Keys compared apart from the generic walk: applied by their own steps below. */
const OWN_STEPS = new Set<keyof ResolvedConfig>(['agents', 'providers', 'logLevel', 'configFile', 'socketPath']);

/** `maxAgents` → `max_agents`: the config file's name of a setting. */
const fileKey = (k: string): string => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

export class ConfigReloader {
  /** What the daemon started with: a setting that needs a restart is named while the file differs from it. */
  readonly #started: ResolvedConfig;
  /** What is in force now: the live settings as last applied. */
  #current: ResolvedConfig;
  readonly #reread: () => ResolvedConfig;
  readonly #t: ReloadTargets;
  /** Reloads run one at a time: a second waits for the first, then reads the file itself. */
  #last: Promise<unknown> = Promise.resolve();

  constructor(current: ResolvedConfig, reread: () => ResolvedConfig, targets: ReloadTargets) {
    this.#started = current;
    this.#current = current;
    this.#reread = reread;
    this.#t = targets;
  }

  reload(): Promise<ReloadReport> {
    const run = this.#last.then(() => this.#reload());
    this.#last = run.catch(() => undefined);
    return run;
  }

  /** SIGHUP: the outcome logged (setting names and the file's error, never values); null when the file was refused. */
  async reloadAndLog(): Promise<ReloadReport | null> {
    try {
      const report = await this.reload();
      this.#t.log.warn({ applied: report.applied, restart_required: report.restart_required }, 'configuration reloaded');
      return report;
    } catch (err) {
      this.#t.log.error({ err: (err as Error).message }, 'configuration reload failed');
      return null;
    }
  }

  async #reload(): Promise<ReloadReport> {
    let next: ResolvedConfig;
    try {
      next = this.#reread();
    } catch (err) {
      if (!(err instanceof AgentdError)) throw err;
      throw new AgentdError(Code.BadRequest, `${err.message}; nothing was changed`);
    }
    const old = this.#current;
    const agentChanges = Object.keys(next.agents).filter((n) => !same(old.agents[n], next.agents[n])).sort();
    const created = agentChanges.filter((n) => !this.#t.agents.has(n)).length;
    if (this.#t.agents.size + created > next.maxAgents) {
      throw new AgentdError(Code.BadRequest, `${next.configFile ?? 'config'}: agents would be ${this.#t.agents.size + created}, past max_agents (${next.maxAgents}); nothing was changed`);
    }
    this.#checkProviders(next, agentChanges);
    const applied: string[] = [];
    const restart: string[] = [];
    for (const key of Object.keys(next) as (keyof ResolvedConfig)[]) {
      if (OWN_STEPS.has(key)) continue;
      const apply = LIVE_LIMITS[key];
      if (apply === undefined) {
        if (!same(this.#started[key], next[key])) restart.push(fileKey(key));
      } else if (!same(old[key], next[key])) {
        apply(this.#t, next);
        applied.push(fileKey(key));
      }
    }
    Object.assign(this.#t.limits, pick(limitsOf(next), applied));
    if (!same(old.providers, next.providers)) applied.push('providers');
    if (old.logLevel !== next.logLevel) applied.push('log_level');
    if (applied.includes('providers') || applied.includes('log_level')) this.#settings(next);
    this.#current = { ...next, agents: old.agents };
    for (const name of agentChanges) {
      await this.#t.agentService.put(name, next.agents[name]);
      // Recorded one by one: an agent that fails to apply is read again by the next reload.
      this.#current = { ...this.#current, agents: { ...this.#current.agents, [name]: next.agents[name]! } };
      applied.push(`agents.${name}`);
    }
    return { applied, restart_required: restart };
  }

  /** Refuses a file whose providers leave a registered agent (not replaced by the file) without its provider. */
  #checkProviders(next: ResolvedConfig, replaced: readonly string[]): void {
    for (const info of this.#t.agents.list()) {
      const provider = info.config.provider;
      if (provider === null || provider in next.providers || replaced.includes(info.name)) continue;
      throw new AgentdError(Code.BadRequest, `${next.configFile ?? 'config'}: providers has no "${provider}", which agent "${info.name}" uses; nothing was changed`);
    }
  }

  /** Providers and log level: main's first, then every shard's (in order before their next turn). */
  #settings(next: ResolvedConfig): void {
    this.#t.log.level = next.logLevel;
    this.#t.live.providers = next.providers;
    this.#t.live.logLevel = next.logLevel;
    this.#t.agentService.setProviders(next.providers);
    this.#t.pool.broadcast({ type: 'settings', providers: next.providers, logLevel: next.logLevel });
  }
}

/** The limits named by the applied file keys. */
function pick(limits: Readonly<Record<string, number>>, keys: readonly string[]): Record<string, number> {
  return Object.fromEntries(Object.entries(limits).filter(([k]) => keys.includes(k)));
}
