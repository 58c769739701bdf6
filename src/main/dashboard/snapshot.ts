/**
 * The live view's snapshot (`get_dashboard`, the metrics listener's
 * `/snapshot` and `/events`): turn rates and latency from TurnRates, open
 * turns per shard from the ledger, the busiest conversations, agents, recent
 * failed turns, MCP servers and, in a cluster, its nodes and leases.
 */
import { VERSION } from '../../shared/version.ts';
import type { ActiveConversation, Dashboard, DashboardAgent } from '../../shared/wire/ops.ts';
import type { DispatchContext } from '../ops/op-table.ts';

export type { DashboardFeed } from './turn-rates.ts';

/** Conversations listed, busiest first. */
export const MAX_CONVERSATIONS = 20;

/** Running first, then the most queued, then the longest history. */
function busiestFirst(a: ActiveConversation, b: ActiveConversation): number {
  return Number(b.running) - Number(a.running) || b.queued - a.queued || b.message_count - a.message_count || (a.agent + a.sender < b.agent + b.sender ? -1 : 1);
}

export async function buildDashboard(ctx: DispatchContext): Promise<Dashboard> {
  const { rates, perShard } = ctx.dashboard;
  const now = Date.now();
  const sec = Math.floor(now / 1000);
  const active = await ctx.pool.activeConversations(null, null);
  active.sort(busiestFirst);
  const open = perShard();
  const agents: DashboardAgent[] = ctx.agents.list().map((a) => ({ name: a.name, model: a.model, mcps: a.mcps.length, ...rates.agent(a.name) }));
  rates.keepAgents(new Set(agents.map((a) => a.name)));
  const totals = rates.totals;
  return {
    time: new Date(now).toISOString(),
    version: VERSION,
    uptime_secs: Math.floor((now - ctx.startedAt) / 1000),
    workers: ctx.pool.count,
    connections: ctx.connections(),
    turns_per_sec: rates.rate(sec, 10),
    ...rates.latency(sec, 60),
    turns_total: totals.turns,
    errors_total: totals.errors,
    series: rates.series(sec),
    shards: open.running.map((running, shard) => ({ shard, running, queued: open.queued[shard] ?? 0 })),
    conversations: active.slice(0, MAX_CONVERSATIONS),
    conversations_in_memory: active.length,
    agents,
    errors: rates.recentErrors(),
    mcps: ctx.mcp.list(null).map((m) => ({ agent: m.agent, name: m.name, transport: m.transport, status: m.status, error: m.error, tool_count: m.tool_count })),
    cluster: ctx.clusterStats(),
  };
}
