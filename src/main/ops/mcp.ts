/**
 * MCP servers of agents (PROTOCOL §4.10): list their state, add or replace
 * one, delete one, reconnect one, and stream their status changes. Settings
 * are part of the agent's config, so changes go through the agent service
 * (validated, stored, broadcast); the MCP thread follows through McpHub.sync.
 */
import { AgentdError, Code } from '../../shared/errors.ts';
import { isPlainMap, type Args } from '../../shared/args.ts';
import { PONG } from '../../shared/codec.ts';
import { op, ROUTED, type ArgReader, type DispatchContext, type OpTable } from './op-table.ts';

/** A JSON merge patch that turns `from` into exactly `to` (keys absent from `to` become null). */
export function replacingPatch(from: unknown, to: unknown): unknown {
  if (!isPlainMap(from) || !isPlainMap(to)) return to;
  const patch: Record<string, unknown> = {};
  for (const k of Object.keys(from)) if (!(k in to)) patch[k] = null;
  for (const [k, v] of Object.entries(to)) patch[k] = replacingPatch(from[k], v);
  return patch;
}

function knownServer(ctx: DispatchContext, args: Args, read: ArgReader): { agent: string; name: string } {
  const agent = read.knownAgent(ctx, args);
  const name = read.nonEmptyStr(args, 'name');
  if (!Object.hasOwn(ctx.agents.get(agent)!.mcps, name)) throw new AgentdError(Code.NotFound, `agent "${agent}" has no MCP server "${name}"`);
  return { agent, name };
}

export const mcpOps: OpTable = {
  list_mcps: op((ctx, _from, _req, args, read) => {
    const agent = read.optStr(args, 'agent');
    if (agent !== null && !ctx.agents.has(agent)) throw new AgentdError(Code.NotFound, `unknown agent "${agent}"`);
    return { mcp_list: { mcps: ctx.mcp.list(agent) } };
  }),
  upsert_mcp: op(async (ctx, _from, _req, args, read) => {
    const agent = read.knownAgent(ctx, args);
    const { name, ...settings } = read.map(args, 'config', 'a map {name, command | url, ...}');
    if (typeof name !== 'string' || name === '') throw new AgentdError(Code.BadRequest, 'upsert_mcp.config.name must be a non-empty string');
    const current = ctx.agents.get(agent)!.mcps[name];
    await ctx.agentService.update(agent, { mcps: { [name]: current === undefined ? settings : replacingPatch(current, settings) } });
    return { mcp_info: ctx.mcp.info(agent, name, ctx.agents.get(agent)!.mcps[name]!) };
  }),
  delete_mcp: op(async (ctx, _from, _req, args, read) => {
    const { agent, name } = knownServer(ctx, args, read);
    await ctx.agentService.update(agent, { mcps: { [name]: null } });
    return PONG;
  }),
  reconnect_mcp: op((ctx, _from, _req, args, read) => {
    const { agent, name } = knownServer(ctx, args, read);
    ctx.mcp.reconnect(agent, name);
    return PONG;
  }),
  subscribe_mcp_events: op((ctx, from, req, args, read) => {
    const agent = read.optStr(args, 'agent');
    if (agent !== null && !ctx.agents.has(agent)) throw new AgentdError(Code.NotFound, `unknown agent "${agent}"`);
    ctx.mcp.events.add(from, req, agent);
    return ROUTED; // frames follow as mcp events; `close` or a disconnect ends it
  }),
};
