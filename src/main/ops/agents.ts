/** Agents, skills and models: answered on main (agent changes also reach every shard). */
import { AgentdError, Code } from '../../shared/errors.ts';
import { PONG } from '../../shared/codec.ts';
import { op, type OpTable } from './op-table.ts';

export const agentOps: OpTable = {
  list_agents: op((ctx) => ({ agent_list: { agents: ctx.agents.list() } })),
  get_agent: op((ctx, _from, _req, args, read) => {
    const name = read.nonEmptyStr(args, 'name');
    const info = ctx.agents.info(name);
    if (info === undefined) throw new AgentdError(Code.NotFound, `unknown agent "${name}"`);
    return { agent_info: info };
  }),
  create_agent: op(async (ctx, _from, _req, args, read) => {
    const name = read.str(args, 'name');
    return { agent_info: await ctx.agentService.create(name, read.map(args, 'config')) };
  }),
  update_agent: op(async (ctx, _from, _req, args, read) => {
    const name = read.nonEmptyStr(args, 'name');
    return { agent_info: await ctx.agentService.update(name, read.map(args, 'config', 'a map (a JSON merge patch)')) };
  }),
  delete_agent: op(async (ctx, _from, _req, args, read) => {
    await ctx.agentService.delete(read.nonEmptyStr(args, 'name'));
    return PONG;
  }),
  list_models: op(async (ctx) => ({ model_list: { models: await ctx.agentService.models() } })),
  set_active_model: op(async (ctx, _from, _req, args, read) => {
    await ctx.agentService.setActiveModel(read.nonEmptyStr(args, 'model'));
    return PONG;
  }),
  list_skills: op(async (ctx) => ({ skill_list: { skills: (await ctx.skills.list()).map(({ name, description }) => ({ name, description })) } })),
  get_skill: op(async (ctx, _from, _req, args, read) => {
    const name = read.nonEmptyStr(args, 'name');
    const skill = await ctx.skills.get(name);
    if (skill === null) throw new AgentdError(Code.NotFound, `unknown skill "${name}"`);
    return { skill_body: { name: skill.name, body: skill.body } };
  }),
};
