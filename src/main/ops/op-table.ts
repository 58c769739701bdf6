/**
 * What every operation handler is given, and how an area declares its
 * operations: a table from operation name to handler. Each handler gets an
 * argument reader already bound to its operation's name, so every 400 names
 * the operation and field without the handler spelling it out.
 */
import { AgentdError, Code } from '../../shared/errors.ts';
import { isPlainMap, nonEmptyStr, optBool, optEnum, optStr, optUint, refuse, str, type Args } from '../../shared/args.ts';
import type { ToolChoice } from '../../shared/protocol.ts';
import type { ClusterStats } from '../../shared/wire/ops.ts';
import type { AgentRegistry } from '../agent-registry.ts';
import type { ShardPool } from '../hosts/shard-pool.ts';
import type { StoragePool } from '../hosts/storage-pool.ts';
import type { EventBus } from '../bus/event-bus.ts';
import type { AgentService } from '../agent-service.ts';
import type { SkillCatalogue } from '../skills.ts';
import type { ObserverHub, ObserverSink } from '../bus/observers.ts';
import type { McpHub } from '../hosts/mcp-hub.ts';

/** Whoever sent the request: a socket connection or an in-process caller. */
export interface Requester extends ObserverSink {
  /** Routes the shard's frames back: unique among live requesters. */
  readonly id: number;
  /** Sends the request's single LAST frame, encoded by main. */
  reply(req: number, value: unknown): void;
  /** Resolves once the bytes queued for it went out (a slow reader caught up); absent where nothing queues. */
  drained?(): Promise<void>;
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
  transportStats(): Record<string, unknown>;
  /** The configured limits, as `get_stats` reports them (see limits.ts). */
  limits: Readonly<Record<string, number>>;
  /** True once shutdown began: new work gets 503. */
  closing(): boolean;
  /** Cluster mode: this node's view of the cluster for get_stats; null on a single node. */
  clusterStats(): ClusterStats | null;
}

/** Returned by handlers whose reply comes later as frames (from a shard, or an observer stream). */
export const ROUTED = Symbol('routed');

/** Returns the reply (or a promise of it), or ROUTED; throws an AgentdError to refuse. */
export type Handler = (ctx: DispatchContext, from: Requester, req: number, args: Args, read: ArgReader) => unknown;

export interface OpSpec {
  handler: Handler;
  /** Still served while shutting down. */
  duringShutdown: boolean;
}

export type OpTable = Readonly<Record<string, OpSpec>>;

export function op(handler: Handler, opts: { duringShutdown?: boolean } = {}): OpSpec {
  return { handler, duringShutdown: opts.duringShutdown ?? false };
}

/** Field readers for one operation's arguments (see shared/args.ts). */
export class ArgReader {
  readonly op: string;

  constructor(op: string) {
    this.op = op;
  }

  str(args: Args, field: string): string {
    return str(this.op, args, field);
  }

  nonEmptyStr(args: Args, field: string): string {
    return nonEmptyStr(this.op, args, field);
  }

  /** An optional string where empty means absent. */
  optStr(args: Args, field: string): string | null {
    return optStr(this.op, args, field) || null;
  }

  optBool(args: Args, field: string): boolean | undefined {
    return optBool(this.op, args, field);
  }

  optUint(args: Args, field: string): number | undefined {
    return optUint(this.op, args, field);
  }

  uint(args: Args, field: string): number {
    const v = optUint(this.op, args, field);
    if (v === undefined) throw new AgentdError(Code.BadRequest, `${this.op}.${field} is required`);
    return v;
  }

  optEnum<T extends string>(args: Args, field: string, allowed: readonly T[]): T | undefined {
    return optEnum(this.op, args, field, allowed);
  }

  refuse(args: Args, fields: readonly string[], why: string): void {
    refuse(this.op, args, fields, why);
  }

  /** A map argument; `what` says what it holds. */
  map(args: Args, field: string, what = 'a map'): Args {
    const v = args[field];
    if (!isPlainMap(v)) throw new AgentdError(Code.BadRequest, `${this.op}.${field} must be ${what}`);
    return v;
  }

  toolChoice(args: Args): ToolChoice | null {
    const v = args.tool_choice;
    if (v === undefined || v === null) return null;
    if (typeof v === 'string' || isPlainMap(v)) return v;
    throw new AgentdError(Code.BadRequest, `${this.op}.tool_choice must be a string or a map`);
  }

  /** `sender`, or the daemon's default when absent or empty. */
  sender(ctx: DispatchContext, args: Args): string {
    return this.optStr(args, 'sender') ?? ctx.defaultSender;
  }

  /** An agent name that must name an existing agent (404 otherwise). */
  knownAgent(ctx: DispatchContext, args: Args, field = 'agent'): string {
    const name = this.nonEmptyStr(args, field);
    if (!ctx.agents.has(name)) throw new AgentdError(Code.NotFound, `unknown agent "${name}"`);
    return name;
  }
}
