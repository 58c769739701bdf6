/**
 * What every operation handler is given, and how an area declares its
 * operations: a table from operation name to handler, each typed by the wire
 * contract (shared/wire/ops.ts). A handler reads its arguments through a view
 * bound to its operation (op-args.ts) and returns its operation's reply
 * value, which dispatch wraps in the reply variant (shared/wire/frames.ts).
 */
import type { ClusterStats, DrainReport, OperationName, ReplyOf, Stats } from '../../shared/wire/ops.ts';
import type { FrameBody } from '../../shared/wire/frames.ts';
import type { OpArgs } from './op-args.ts';
import type { AgentRegistry } from '../agent-registry.ts';
import type { ShardPool } from '../hosts/shard-pool.ts';
import type { StoragePool } from '../hosts/storage-pool.ts';
import type { EventBus } from '../bus/event-bus.ts';
import type { AgentService } from '../agent-service.ts';
import type { SkillCatalogue } from '../skills.ts';
import type { ObserverHub, ObserverSink } from '../bus/observers.ts';
import type { McpHub } from '../hosts/mcp-hub.ts';
import type { ScheduleEngine } from '../schedules/schedule-engine.ts';
import type { WebhookHub } from '../webhooks/webhook-hub.ts';
import type { Principal } from '../auth/principal.ts';
import type { TokenService } from '../auth/token-service.ts';
import type { DashboardFeed } from '../dashboard/turn-rates.ts';
import type { ConfigReloader } from '../reload.ts';

/** Whoever sent the request: a socket connection or an in-process caller. */
export interface Requester extends ObserverSink {
  /** Routes the shard's frames back: unique among live requesters. */
  readonly id: number;
  /** Sends the request's single LAST frame, encoded by main. */
  reply(req: number, value: FrameBody): void;
  /** Resolves once the bytes queued for it went out (a slow reader caught up); absent where nothing queues. */
  drained?(): Promise<void>;
  /** What its token lets it do; absent: the admin (a trusted transport, a harness, a call another node forwarded after checking it). */
  readonly principal?: Principal;
}

export interface DispatchContext {
  pool: ShardPool;
  /** Database work off main; null when persistence is off. */
  storage: StoragePool | null;
  bus: EventBus;
  observers: ObserverHub;
  agentService: AgentService;
  skills: SkillCatalogue;
  agents: AgentRegistry;
  /** MCP servers: the MCP thread's state and management. */
  mcp: McpHub;
  defaultSender: string;
  startedAt: number;
  connections(): number;
  /** Connections per listener, refusals and the connection cap, for get_stats. */
  transportStats(): Pick<Stats, 'connections_by_listener' | 'refused_connections' | 'unauthenticated_connections' | 'unauthenticated_evicted'>;
  /** The configured limits, as `get_stats` reports them (see limits.ts); `reload_config` changes some in place. */
  limits: Record<string, number>;
  /** `reload_config`: reads the config file again and applies what can change live. */
  reloader: ConfigReloader;
  /** True once shutdown began: new work gets 503. */
  closing(): boolean;
  /** Cluster mode: `drain` (hand every partition to the other nodes); null on a single node. */
  drain: (() => Promise<DrainReport>) | null;
  /** Cluster mode: this node's view of the cluster for get_stats; null on a single node. */
  clusterStats(): ClusterStats | null;
  /** Schedules: time as an event source (main/schedules/). */
  schedules: ScheduleEngine;
  /** Outbound webhooks (main/webhooks/). */
  webhooks: WebhookHub;
  /** `webhook_hosts`: the hosts a webhook URL may name (empty: any). */
  webhookHosts: readonly string[];
  /** Scoped tokens (main/auth/). */
  tokens: TokenService;
  /** The live view's sources (`get_dashboard`, main/dashboard/). */
  dashboard: DashboardFeed;
}

/** Returned by handlers whose reply comes later as frames (from a shard, or an observer stream). */
export const ROUTED = Symbol('routed');

/** The operation's reply value (or a promise of it), or ROUTED; throws an AgentdError to refuse. */
export type Answer<Op extends OperationName> = ReplyOf<Op> | Promise<ReplyOf<Op>> | typeof ROUTED;

export type Handler<Op extends OperationName> = (ctx: DispatchContext, from: Requester, req: number, args: OpArgs<Op>) => Answer<Op>;

export interface OpSpec<Op extends OperationName> {
  handler: Handler<Op>;
  /** Still served while shutting down. */
  duringShutdown: boolean;
}

/** An area's operations, each handled as its contract says. */
export type OpTable<Ops extends OperationName> = { readonly [Op in Ops]: OpSpec<Op> };

export function op<Op extends OperationName>(handler: Handler<Op>, opts: { duringShutdown?: boolean } = {}): OpSpec<Op> {
  return { handler, duringShutdown: opts.duringShutdown ?? false };
}
