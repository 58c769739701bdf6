/**
 * The daemon's limits on what clients can create: how `get_stats` reports
 * them, and the one 429 every limit answers with, naming the limit and the
 * config key that raises it.
 */
import { AgentdError, Code } from '../shared/errors.ts';
import type { ResolvedConfig } from '../shared/config.ts';

/** The `limits` map of `get_stats`: one entry per limit; add a line here for a new one. */
export function limitsOf(config: ResolvedConfig): Readonly<Record<string, number>> {
  return Object.freeze({
    max_agents: config.maxAgents,
    max_subscriptions: config.maxSubscriptions,
    max_observers_per_connection: config.maxObservers,
    max_inflight_per_connection: config.maxInflightPerConnection,
    max_connections: config.maxConnections,
    max_queued_turns: config.maxQueuedTurns,
    max_chain_turns: config.maxChainTurns,
    max_elements: config.maxElements,
    max_schedules: config.maxSchedules,
    max_webhooks: config.maxWebhooks,
    max_webhook_outbox: config.maxWebhookOutbox,
    max_event_payload_bytes: config.maxEventPayloadBytes,
  });
}

/** The 429 of a reached limit, e.g. `too many agents: the limit is 1000 (config key max_agents)`. */
export function tooMany(what: string, limit: number, configKey: string): AgentdError {
  return new AgentdError(Code.TooMany, `too many ${what}: the limit is ${limit} (config key ${configKey})`);
}
