/** The daemon itself: liveness, authentication (a no-op once through) and statistics. */
import { VERSION } from '../../shared/version.ts';
import { AgentdError, Code } from '../../shared/errors.ts';
import type { Stats } from '../../shared/wire/ops.ts';
import { buildDashboard } from '../dashboard/snapshot.ts';
import { op, type DispatchContext, type OpTable } from './op-table.ts';

/** What `get_stats` answers (the metrics read it too). */
export async function collectStats(ctx: DispatchContext): Promise<Stats> {
  const active = await ctx.pool.activeConversations(null, null);
  const cluster = ctx.clusterStats();
  return {
    version: VERSION,
    uptime_secs: Math.floor((Date.now() - ctx.startedAt) / 1000),
    active_conversations: active.length,
    conversation_bytes: active.reduce((sum, c) => sum + c.memory_bytes, 0),
    registered_agents: ctx.agents.size,
    active_model: ctx.agents.activeModel(),
    workers: ctx.pool.count,
    subscriptions: ctx.bus.size,
    connections: ctx.connections(),
    ...ctx.transportStats(),
    observers: ctx.observers.count,
    limits: ctx.limits,
    ...ctx.bus.stats(),
    ...ctx.pool.stats(),
    ...(ctx.storage?.stats() ?? { searches_in_progress: 0, searches_timed_out: 0, searches_cancelled: 0 }),
    ...(cluster === null ? {} : { cluster }),
  };
}

export const adminOps: OpTable<'ping' | 'auth' | 'get_stats' | 'get_dashboard' | 'reload_config' | 'drain'> = {
  ping: op(() => ({}), { duringShutdown: true }),
  // On a transport without a token, or after authenticating, `auth` is a no-op.
  auth: op(() => ({}), { duringShutdown: true }),
  get_stats: op(collectStats, { duringShutdown: true }),
  get_dashboard: op(buildDashboard, { duringShutdown: true }),
  reload_config: op((ctx) => ctx.reloader.reload()),
  drain: op((ctx) => {
    if (ctx.drain === null) throw new AgentdError(Code.BadRequest, 'drain is for a cluster node (started with --cluster): a single daemon has no other node to hand its conversations to');
    return ctx.drain();
  }),
};
