/** Agents, skills and models: answered on main (agent changes also reach every shard). */
import { AgentdError, Code } from '../../shared/errors.ts';
import { seesSecrets } from '../auth/principal.ts';
import type { AgentInfo } from '../../shared/wire/ops.ts';
import { op, type OpTable, type Requester } from './op-table.ts';

/** An agent as the requester may see it: without its configuration unless it sees secrets (auth/authorize.ts). */
const shown = (from: Requester, info: AgentInfo): AgentInfo => (seesSecrets(from.principal) ? info : { ...info, config: {} });

type AgentOp = 'list_agents' | 'get_agent' | 'create_agent' | 'update_agent' | 'delete_agent' | 'rename_agent' | 'list_models' | 'set_active_model' | 'list_skills' | 'get_skill';

export const agentOps: OpTable<AgentOp> = {
  list_agents: op((ctx, from) => ({ agents: ctx.agents.list().map((a) => shown(from, a)) })),
  get_agent: op((ctx, from, _req, args) => {
    const name = args.nonEmptyStr('name');
    const info = ctx.agents.info(name);
    if (info === undefined) throw new AgentdError(Code.NotFound, `unknown agent "${name}"`);
    return shown(from, info);
  }),
  create_agent: op(async (ctx, _from, _req, args) => {
    const name = args.str('name');
    return await ctx.agentService.create(name, args.map('config'));
  }),
  update_agent: op(async (ctx, _from, _req, args) => {
    const name = args.nonEmptyStr('name');
    return await ctx.agentService.update(name, args.map('config', 'a map (a JSON merge patch)'));
  }),
  delete_agent: op(async (ctx, _from, _req, args) => {
    await ctx.agentService.delete(args.nonEmptyStr('name'));
    return {};
  }),
  rename_agent: op(async (ctx, _from, _req, args) => await ctx.agentService.rename(args.nonEmptyStr('name'), args.str('new_name'))),
  list_models: op(async (ctx) => ({ models: await ctx.agentService.models() })),
  set_active_model: op(async (ctx, _from, _req, args) => {
    await ctx.agentService.setActiveModel(args.nonEmptyStr('model'));
    return {};
  }),
  list_skills: op(async (ctx) => ({ skills: (await ctx.skills.list()).map(({ name, description }) => ({ name, description })) })),
  get_skill: op(async (ctx, _from, _req, args) => {
    const name = args.nonEmptyStr('name');
    const skill = await ctx.skills.get(name);
    if (skill === null) throw new AgentdError(Code.NotFound, `unknown skill "${name}"`);
    return { name: skill.name, body: skill.body };
  }),
};
