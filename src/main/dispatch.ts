/**
 * The one dispatch function every transport calls (and the harness host, for
 * capability calls): it routes a client message by its operation. Main answers what needs
 * no shard; anything addressed to a pair goes down that pair's ordered
 * channel to its shard, which answers with frames it encodes itself.
 * Nothing here queues or throttles a request before its handler.
 */
import { AgentdError, Code, toWireError } from '../shared/errors.ts';
import { PONG } from '../shared/codec.ts';
import { isPlainMap, nonEmptyStr, optBool, optEnum, optStr, optUint, refuse, str, type Args } from '../shared/args.ts';
import { OnBusy, SEARCH_LIMITS, type ToolChoice } from '../shared/protocol.ts';
import type { StorageTask, TurnRequest } from '../shared/threads.ts';
import { VERSION } from '../shared/version.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { ShardPool } from './shard-pool.ts';
import type { StoragePool } from './storage-pool.ts';
import type { EventBus } from './event-bus.ts';
import type { AgentService } from './agent-service.ts';
import type { SkillCatalogue } from './skills.ts';
import type { ObserverHub, ObserverSink } from './observers.ts';

/** Whoever sent the request: a socket connection or an in-process caller. */
export interface Requester extends ObserverSink {
  /** Routes the shard's frames back: unique among live requesters. */
  readonly id: number;
  /** Sends the request's single LAST frame, encoded by main. */
  reply(req: number, value: unknown): void;
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
  defaultSender: string;
  startedAt: number;
  connections(): number;
  /** Connections per listener, refusals and the connection cap, for get_stats. */
  transportStats(): Record<string, unknown>;
  /** True once shutdown began: new work gets 503. */
  closing(): boolean;
}

export type Dispatch = (from: Requester, req: number, body: Record<string, unknown>) => void;

/** Returned by handlers whose reply comes from a shard. */
const ROUTED = Symbol('routed');
type Handler = (from: Requester, req: number, args: Args) => unknown;

interface OpSpec {
  handler: Handler;
  /** Still served while shutting down. */
  duringShutdown: boolean;
}

export function createDispatch(ctx: DispatchContext): Dispatch {
  const { pool, agents } = ctx;
  const sender = (op: string, args: Args): string => optStr(op, args, 'sender') || ctx.defaultSender;
  const knownAgent = (op: string, args: Args, field = 'agent'): string => {
    const name = nonEmptyStr(op, args, field);
    if (!agents.has(name)) throw new AgentdError(Code.NotFound, `unknown agent "${name}"`);
    return name;
  };
  const toolChoice = (op: string, args: Args): ToolChoice | null => {
    const v = args.tool_choice;
    if (v === undefined || v === null) return null;
    if (typeof v === 'string' || isPlainMap(v)) return v;
    throw new AgentdError(Code.BadRequest, `${op}.tool_choice must be a string or a map`);
  };

  const turn = (mode: 'stream' | 'send'): Handler => (from, req, args) => {
    const op = mode;
    refuse(op, args, ['cwd', 'tools'], 'the daemon reads no client filesystem and clients declare no tools');
    const agent = knownAgent(op, args);
    const msg: TurnRequest = {
      t: 'turn',
      conn: from.id,
      req,
      mode,
      agent,
      sender: sender(op, args),
      content: str(op, args, 'content'),
      guest: mode === 'stream' ? optStr(op, args, 'guest') || null : null,
      ephemeral: mode === 'stream' ? (optBool(op, args, 'ephemeral') ?? false) : false,
      correlationId: mode === 'stream' ? (optUint(op, args, 'correlation_id') ?? null) : null,
      onBusy: optEnum(op, args, 'on_busy', OnBusy) ?? 'enqueue',
      toolChoice: toolChoice(op, args),
      depth: 0,
    };
    pool.request(pool.shardFor(agent, msg.sender), msg, mode === 'stream' ? 'stream' : 'rr');
    return ROUTED;
  };

  const ops = new Map<string, OpSpec>();
  const op = (name: string, handler: Handler, duringShutdown = false): void => {
    ops.set(name, { handler, duringShutdown });
  };

  op('ping', () => PONG, true);
  // On a transport without a token, or after authenticating, `auth` is a no-op.
  op('auth', () => PONG, true);
  op('stream', turn('stream'));
  op('send', turn('send'));
  op('kill', (from, req, args) => {
    const agent = nonEmptyStr('kill', args, 'agent');
    const s = sender('kill', args);
    if (!agents.has(agent)) throw new AgentdError(Code.NotFound, `no conversation for agent "${agent}" and sender "${s}"`);
    pool.request(pool.shardFor(agent, s), { t: 'kill', conn: from.id, req, agent, sender: s }, 'rr');
    return ROUTED;
  });
  op('compact', (from, req, args) => {
    const agent = knownAgent('compact', args);
    const s = sender('compact', args);
    pool.request(pool.shardFor(agent, s), { t: 'compact', conn: from.id, req, agent, sender: s, prompt: optStr('compact', args, 'prompt') || null }, 'rr');
    return ROUTED;
  });
  for (const [name, t] of [['get_conversation_history', 'history'], ['delete_conversation', 'delete']] as const) {
    op(name, (from, req, args) => {
      const agent = knownAgent(name, args);
      const s = sender(name, args);
      pool.request(pool.shardFor(agent, s), { t, conn: from.id, req, agent, sender: s }, 'rr');
      return ROUTED;
    });
  }
  const read = (task: StorageTask, empty: unknown): Promise<unknown> | unknown => (ctx.storage === null ? empty : ctx.storage.run(task));
  op('list_conversations', (_from, _req, args) =>
    read(
      { op: 'list_conversations', agent: optStr('list_conversations', args, 'agent') || null, sender: optStr('list_conversations', args, 'sender') || null },
      { conversation_list: { conversations: [] } },
    ),
  );
  op('search_sessions', (_from, _req, args) => {
    const o = 'search_sessions';
    const query = str(o, args, 'query');
    const limit = Math.min(SEARCH_LIMITS.maxLimit, Math.max(1, optUint(o, args, 'limit') ?? SEARCH_LIMITS.defaultLimit));
    const task = {
      op: o,
      query,
      limit,
      contextBefore: optUint(o, args, 'context_before') ?? SEARCH_LIMITS.defaultContext,
      contextAfter: optUint(o, args, 'context_after') ?? SEARCH_LIMITS.defaultContext,
      agent: optStr(o, args, 'agent') || null,
      sender: optStr(o, args, 'sender') || null,
    } as const;
    if (query.trim() === '') return { session_hits: { hits: [] } };
    return read(task, { session_hits: { hits: [] } });
  });
  op('get_stats', async () => {
    const active = await pool.activeConversations(null, null);
    return {
      stats: {
        version: VERSION,
        uptime_secs: Math.floor((Date.now() - ctx.startedAt) / 1000),
        active_conversations: active.length,
        registered_agents: agents.size,
        active_model: agents.activeModel(),
        workers: pool.count,
        subscriptions: ctx.bus.size,
        connections: ctx.connections(),
        ...ctx.transportStats(),
      },
    };
  }, true);
  op('list_active_conversations', async (_from, _req, args) => {
    const agent = optStr('list_active_conversations', args, 'agent') || null;
    const s = optStr('list_active_conversations', args, 'sender') || null;
    const conversations = await pool.activeConversations(agent, s);
    conversations.sort((a, b) => (a.agent === b.agent ? (a.sender < b.sender ? -1 : 1) : a.agent < b.agent ? -1 : 1));
    return { active_conversations: { conversations } };
  });
  op('subscribe_events', (from, req, args) => {
    const agent = optStr('subscribe_events', args, 'agent') || null;
    if (agent !== null && !agents.has(agent)) throw new AgentdError(Code.NotFound, `unknown agent "${agent}"`);
    ctx.observers.add(from, req, agent);
    return ROUTED; // frames follow as agent events; `close` or a disconnect ends it
  });
  op('close', (from, _req, args) => {
    const id = optUint('close', args, 'request');
    if (id === undefined) throw new AgentdError(Code.BadRequest, 'close.request is required');
    if (!ctx.observers.close(from, id)) throw new AgentdError(Code.NotFound, `no open subscription with request id ${id} on this connection`);
    return PONG;
  }, true);
  op('subscribe_event', async (_from, _req, args) => {
    const source = nonEmptyStr('subscribe_event', args, 'source');
    const target = knownAgent('subscribe_event', args, 'target_agent');
    const once = optBool('subscribe_event', args, 'once') ?? false;
    return { subscription_info: await ctx.bus.subscribe(source, target, once) };
  });
  op('unsubscribe_event', async (_from, _req, args) => {
    const id = optUint('unsubscribe_event', args, 'id');
    if (id === undefined) throw new AgentdError(Code.BadRequest, 'unsubscribe_event.id is required');
    if (!(await ctx.bus.unsubscribe(id))) throw new AgentdError(Code.NotFound, `no subscription ${id}`);
    return PONG;
  });
  op('list_subscriptions', () => ({ subscription_list: { subscriptions: ctx.bus.list() } }));
  op('publish_event', async (_from, _req, args) => {
    const source = nonEmptyStr('publish_event', args, 'source');
    const raw = args.payload;
    // The payload becomes a user message: text as is, anything else as JSON.
    const payload = typeof raw === 'string' ? raw : raw === undefined ? '' : JSON.stringify(raw);
    return { published: { fired: await ctx.bus.publish(source, payload, 0) } };
  });
  op('list_agents', () => ({ agent_list: { agents: agents.list() } }));
  op('get_agent', (_from, _req, args) => {
    const info = agents.info(nonEmptyStr('get_agent', args, 'name'));
    if (info === undefined) throw new AgentdError(Code.NotFound, `unknown agent "${String(args.name)}"`);
    return { agent_info: info };
  });
  op('create_agent', async (_from, _req, args) => {
    const name = str('create_agent', args, 'name');
    if (!isPlainMap(args.config)) throw new AgentdError(Code.BadRequest, 'create_agent.config must be a map');
    return { agent_info: await ctx.agentService.create(name, args.config) };
  });
  op('update_agent', async (_from, _req, args) => {
    const name = nonEmptyStr('update_agent', args, 'name');
    if (!isPlainMap(args.config)) throw new AgentdError(Code.BadRequest, 'update_agent.config must be a map (a JSON merge patch)');
    return { agent_info: await ctx.agentService.update(name, args.config) };
  });
  op('delete_agent', async (_from, _req, args) => {
    await ctx.agentService.delete(nonEmptyStr('delete_agent', args, 'name'));
    return PONG;
  });
  op('list_models', async () => ({ model_list: { models: await ctx.agentService.models() } }));
  op('set_active_model', async (_from, _req, args) => {
    await ctx.agentService.setActiveModel(nonEmptyStr('set_active_model', args, 'model'));
    return PONG;
  });
  op('list_skills', async () => ({ skill_list: { skills: (await ctx.skills.list()).map(({ name, description }) => ({ name, description })) } }));
  op('get_skill', async (_from, _req, args) => {
    const name = nonEmptyStr('get_skill', args, 'name');
    const skill = await ctx.skills.get(name);
    if (skill === null) throw new AgentdError(Code.NotFound, `unknown skill "${name}"`);
    return { skill_body: { name: skill.name, body: skill.body } };
  });

  const fail = (from: Requester, req: number, err: unknown): void => from.reply(req, { error: toWireError(err) });

  return (from, req, body) => {
    const keys = Object.keys(body);
    if (keys.length !== 1) {
      const why = keys.length === 0 ? 'no operation' : `${keys.length} operations (${keys.slice(0, 4).join(', ')})`;
      return fail(from, req, new AgentdError(Code.BadRequest, `a request holds exactly one operation; got ${why}`));
    }
    const name = keys[0]!;
    const spec = ops.get(name);
    if (spec === undefined) return fail(from, req, new AgentdError(Code.BadRequest, `unknown operation "${name}"`));
    if (!spec.duringShutdown && ctx.closing()) {
      return fail(from, req, new AgentdError(Code.ShuttingDown, 'the daemon is shutting down and takes no new work'));
    }
    const args = body[name];
    if (!isPlainMap(args)) return fail(from, req, new AgentdError(Code.BadRequest, `the argument of "${name}" must be a map`));
    let out: unknown;
    try {
      out = spec.handler(from, req, args);
    } catch (err) {
      return fail(from, req, err);
    }
    if (out === ROUTED) return;
    if (out instanceof Promise) {
      out.then((v) => from.reply(req, v), (err: unknown) => fail(from, req, err));
      return;
    }
    from.reply(req, out);
  };
}
