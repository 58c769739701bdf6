/**
 * MCP servers of agents (PROTOCOL §4.10): list their state, add or replace
 * one, delete one, reconnect one, and stream their status changes. Settings
 * are part of the agent's config, so changes go through the agent service
 * (validated, stored, broadcast); the MCP thread follows through McpHub.sync.
 */
import { AgentdError, Code } from '../../shared/errors.ts';
import { isPlainMap } from '../../shared/args.ts';
import { commonView, type OpArgs } from './op-args.ts';
import { op, ROUTED, type DispatchContext, type OpTable } from './op-table.ts';
import { seesSecrets } from '../auth/principal.ts';
import { REDACTED } from '../../shared/redact.ts';
import type { McpInfo } from '../../shared/wire/ops.ts';

const hidden = (values: Record<string, string> | undefined): Record<string, string> | undefined =>
  values === undefined ? undefined : Object.fromEntries(Object.keys(values).map((k) => [k, REDACTED]));

/** An MCP server as a token that does not see secrets sees it: its `env` and `headers` values redacted. */
function withoutSecrets(m: McpInfo): McpInfo {
  const { env, headers, ...rest } = m.config;
  return { ...m, config: { ...rest, ...(env === undefined ? {} : { env: hidden(env) }), ...(headers === undefined ? {} : { headers: hidden(headers) }) } };
}

/** A JSON merge patch that turns `from` into exactly `to` (keys absent from `to` become null). */
export function replacingPatch(from: unknown, to: unknown): unknown {
  if (!isPlainMap(from) || !isPlainMap(to)) return to;
  const patch: Record<string, unknown> = {};
  for (const k of Object.keys(from)) if (!(k in to)) patch[k] = null;
  for (const [k, v] of Object.entries(to)) patch[k] = replacingPatch(from[k], v);
  return patch;
}

type ServerOp = 'delete_mcp' | 'reconnect_mcp';

function knownServer(ctx: DispatchContext, args: OpArgs<ServerOp>): { agent: string; name: string } {
  const agent = args.knownAgent(ctx.agents, 'agent');
  const name = args.nonEmptyStr('name');
  if (!Object.hasOwn(ctx.agents.get(agent)!.mcps, name)) throw new AgentdError(Code.NotFound, `agent "${agent}" has no MCP server "${name}"`);
  return { agent, name };
}

type McpOp = 'list_mcps' | 'upsert_mcp' | 'delete_mcp' | 'reconnect_mcp' | 'subscribe_mcp_events';

export const mcpOps: OpTable<McpOp> = {
  list_mcps: op((ctx, from, _req, args) => {
    const agent = args.optStr('agent');
    if (agent !== null && !ctx.agents.has(agent)) throw new AgentdError(Code.NotFound, `unknown agent "${agent}"`);
    const mcps = ctx.mcp.list(agent);
    return { mcps: seesSecrets(from.principal) ? mcps : mcps.map(withoutSecrets) };
  }),
  upsert_mcp: op(async (ctx, _from, _req, args) => {
    const agent = args.knownAgent(ctx.agents, 'agent');
    const { name, ...settings } = args.map('config', 'a map {name, command | url, ...}');
    if (typeof name !== 'string' || name === '') throw new AgentdError(Code.BadRequest, 'upsert_mcp.config.name must be a non-empty string');
    const current = ctx.agents.get(agent)!.mcps[name];
    await ctx.agentService.update(agent, { mcps: { [name]: current === undefined ? settings : replacingPatch(current, settings) } });
    return ctx.mcp.info(agent, name, ctx.agents.get(agent)!.mcps[name]!);
  }),
  delete_mcp: op(async (ctx, _from, _req, args) => {
    const { agent, name } = knownServer(ctx, commonView<ServerOp>(args));
    await ctx.agentService.update(agent, { mcps: { [name]: null } });
    return {};
  }),
  reconnect_mcp: op((ctx, _from, _req, args) => {
    const { agent, name } = knownServer(ctx, commonView<ServerOp>(args));
    ctx.mcp.reconnect(agent, name);
    return {};
  }),
  subscribe_mcp_events: op((ctx, from, req, args) => {
    const agent = args.optStr('agent');
    if (agent !== null && !ctx.agents.has(agent)) throw new AgentdError(Code.NotFound, `unknown agent "${agent}"`);
    ctx.mcp.events.add(from, req, agent);
    return ROUTED; // frames follow as mcp events; `close` or a disconnect ends it
  }),
};
