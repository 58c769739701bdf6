/** Agents: list, show, create, update, delete (PROTOCOL §4.6). */
import type { AgentInfo } from '../../client/index.ts';
import { type Command, type Context, parseJsonArg, UsageError } from '../command.ts';
import { clip, type Output } from '../output.ts';

function configArg(value: string | undefined, what: string): Record<string, unknown> {
  if (value === undefined) return {};
  const v = parseJsonArg(value, what);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new UsageError(`${what} must be a JSON object, got ${JSON.stringify(v)}`);
  return v as Record<string, unknown>;
}

function printAgent(out: Output, a: AgentInfo): void {
  const s = out.out;
  out.line(s.bold(a.name) + (a.description !== '' ? `  ${a.description}` : ''));
  out.table([
    ['  model', a.model],
    ['  max_iterations', String(a.max_iterations)],
    ['  thinking', String(a.thinking)],
    ['  skills', a.skills.length > 0 ? a.skills.join(', ') : s.dim('(all)')],
    ['  mcps', a.mcps.length > 0 ? a.mcps.join(', ') : s.dim('(none)')],
  ]);
  out.line(s.dim('  config (secrets included):'));
  out.line(JSON.stringify(a.config, null, 2).replace(/^/gm, '    '));
}

const list: Command = {
  name: 'agents list',
  usage: '',
  summary: 'list the agents (also: `agentctl agents`)',
  example: 'agentctl agents list',
  arity: [0, 0],
  async run({ client, json, out }: Context) {
    const r = await client.call('list_agents', {});
    if (json) return out.json(r);
    if (r.agents.length === 0) return out.line('no agents');
    out.table([['NAME', 'MODEL', 'DESCRIPTION'], ...r.agents.map((a) => [a.name, a.model, clip(a.description, 70)])]);
  },
};

const show: Command = {
  name: 'agents show',
  usage: 'NAME',
  summary: 'show one agent and its whole configuration',
  example: 'agentctl agents show assistant',
  arity: [1, 1],
  async run({ client, args, json, out }: Context) {
    const a = await client.getAgent(args[0]!);
    if (json) out.json(a);
    else printAgent(out, a);
  },
};

const create: Command = {
  name: 'agents create',
  usage: 'NAME [CONFIG]',
  summary: 'create an agent; CONFIG is a JSON object or @FILE (default {}: the echo model)',
  details: 'Keys: model, provider, description, system_prompt, max_iterations, thinking, skills, tools,\nharnesses, mcps, echo (docs/PROTOCOL.md §4.6). Unknown keys are refused.',
  example: 'agentctl agents create writer \'{"description": "writes", "model": "echo"}\'',
  arity: [1, 2],
  async run({ client, args, json, out }: Context) {
    const a = await client.createAgent(args[0]!, configArg(args[1], 'CONFIG'));
    if (json) out.json(a);
    else out.line(`created agent ${a.name} (model ${a.model})`);
  },
};

const update: Command = {
  name: 'agents update',
  usage: 'NAME PATCH',
  summary: 'change an agent with a JSON merge patch (a JSON object or @FILE; null removes a key)',
  example: 'agentctl agents update writer \'{"description": "writes well", "mcps": {"fs": null}}\'',
  arity: [2, 2],
  async run({ client, args, json, out }: Context) {
    const a = await client.updateAgent(args[0]!, configArg(args[1], 'PATCH'));
    if (json) out.json(a);
    else printAgent(out, a);
  },
};

const del: Command = {
  name: 'agents delete',
  usage: 'NAME',
  summary: 'delete an agent, its conversations and the subscriptions that target it',
  example: 'agentctl agents delete writer',
  arity: [1, 1],
  async run({ client, args, json, out }: Context) {
    const r = await client.call('delete_agent', { name: args[0]! });
    if (json) out.json(r);
    else out.line(`deleted agent ${args[0]!}`);
  },
};

const rename: Command = {
  name: 'agents rename',
  usage: 'NAME NEW_NAME',
  summary: 'rename an agent, keeping its conversations, subscriptions and webhook filters (refused while it has turns running)',
  example: 'agentctl agents rename writer editor',
  arity: [2, 2],
  async run({ client, args, json, out }: Context) {
    const r = await client.renameAgent(args[0]!, args[1]!);
    if (json) out.json(r);
    else out.line(`renamed agent ${args[0]!} to ${r.name}`);
  },
};

export const agentCommands: Command[] = [list, show, create, update, del, rename];
