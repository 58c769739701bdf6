/** The event bus and the agent event stream: subscriptions, publishing, observers. */
import { AgentdError, Code } from '../../shared/errors.ts';
import { op, ROUTED, type OpTable } from './op-table.ts';

type BusOp = 'subscribe_events' | 'close' | 'subscribe_event' | 'unsubscribe_event' | 'list_subscriptions' | 'publish_event';

export const busOps: OpTable<BusOp> = {
  subscribe_events: op((ctx, from, req, args) => {
    const agent = args.optStr('agent');
    if (agent !== null && !ctx.agents.has(agent)) throw new AgentdError(Code.NotFound, `unknown agent "${agent}"`);
    ctx.observers.add(from, req, agent);
    return ROUTED; // frames follow as agent events; `close` or a disconnect ends it
  }),
  close: op(
    (ctx, from, _req, args) => {
      const id = args.uint('request');
      if (!ctx.observers.close(from, id) && !ctx.mcp.events.close(from, id)) throw new AgentdError(Code.NotFound, `no open subscription with request id ${id} on this connection`);
      return {};
    },
    { duringShutdown: true },
  ),
  subscribe_event: op(async (ctx, _from, _req, args) => {
    const source = args.name('source');
    const target = args.knownAgent(ctx.agents, 'target_agent');
    const once = args.optBool('once') ?? false;
    return await ctx.bus.subscribe(source, target, once);
  }),
  unsubscribe_event: op(async (ctx, _from, _req, args) => {
    const id = args.uint('id');
    if (!(await ctx.bus.unsubscribe(id))) throw new AgentdError(Code.NotFound, `no subscription ${id}`);
    return {};
  }),
  list_subscriptions: op((ctx) => ({ subscriptions: ctx.bus.list() })),
  publish_event: op(async (ctx, _from, _req, args) => {
    const source = args.name('source');
    const raw = args.raw('payload');
    // The payload becomes a user message: text as is, anything else as JSON.
    const payload = typeof raw === 'string' ? raw : raw === undefined ? '' : JSON.stringify(raw);
    // Every fire stores and answers the payload in its own conversation: bounding it bounds what one publish multiplies.
    const max = ctx.limits.max_event_payload_bytes!;
    const bytes = payload.length > max / 3 ? Buffer.byteLength(payload, 'utf8') : payload.length;
    if (bytes > max) throw new AgentdError(Code.TooLarge, `publish_event.payload of ${bytes} bytes exceeds the limit of ${max} bytes (config key max_event_payload_bytes)`);
    return { fired: await ctx.bus.publish(source, payload, 0) };
  }),
};
