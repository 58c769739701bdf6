/** The event bus and the agent event stream: subscriptions, publishing, observers. */
import { AgentdError, Code } from '../../shared/errors.ts';
import { PONG } from '../../shared/codec.ts';
import { op, ROUTED, type OpTable } from './op-table.ts';

export const busOps: OpTable = {
  subscribe_events: op((ctx, from, req, args, read) => {
    const agent = read.optStr(args, 'agent');
    if (agent !== null && !ctx.agents.has(agent)) throw new AgentdError(Code.NotFound, `unknown agent "${agent}"`);
    ctx.observers.add(from, req, agent);
    return ROUTED; // frames follow as agent events; `close` or a disconnect ends it
  }),
  close: op(
    (ctx, from, _req, args, read) => {
      const id = read.uint(args, 'request');
      if (!ctx.observers.close(from, id) && !ctx.mcp.events.close(from, id)) throw new AgentdError(Code.NotFound, `no open subscription with request id ${id} on this connection`);
      return PONG;
    },
    { duringShutdown: true },
  ),
  subscribe_event: op(async (ctx, _from, _req, args, read) => {
    const source = read.nonEmptyStr(args, 'source');
    const target = read.knownAgent(ctx, args, 'target_agent');
    const once = read.optBool(args, 'once') ?? false;
    return { subscription_info: await ctx.bus.subscribe(source, target, once) };
  }),
  unsubscribe_event: op(async (ctx, _from, _req, args, read) => {
    const id = read.uint(args, 'id');
    if (!(await ctx.bus.unsubscribe(id))) throw new AgentdError(Code.NotFound, `no subscription ${id}`);
    return PONG;
  }),
  list_subscriptions: op((ctx) => ({ subscription_list: { subscriptions: ctx.bus.list() } })),
  publish_event: op(async (ctx, _from, _req, args, read) => {
    const source = read.nonEmptyStr(args, 'source');
    const raw = args.payload;
    // The payload becomes a user message: text as is, anything else as JSON.
    const payload = typeof raw === 'string' ? raw : raw === undefined ? '' : JSON.stringify(raw);
    return { published: { fired: await ctx.bus.publish(source, payload, 0) } };
  }),
};
