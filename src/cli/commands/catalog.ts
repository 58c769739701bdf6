/** Models and skills (PROTOCOL §4.7, §4.8). */
import { type Command, type Context } from '../command.ts';

const modelsList: Command = {
  name: 'models list',
  usage: '',
  summary: 'list the models the daemon can use; * marks the active one (also: `agentctl models`)',
  example: 'agentctl models list',
  arity: [0, 0],
  async run({ client, json, out }: Context) {
    const r = await client.call('list_models', {});
    if (json) return out.json(r);
    for (const m of r.models) out.line(m.active ? `* ${out.out.bold(m.name)}` : `  ${m.name}`);
  },
};

const modelsSet: Command = {
  name: 'models set',
  usage: 'MODEL',
  summary: 'point the default agent (assistant, else the first by name) at a model',
  example: 'agentctl models set gpt-4o-mini',
  arity: [1, 1],
  async run({ client, args, json, out }: Context) {
    const r = await client.call('set_active_model', { model: args[0]! });
    if (json) out.json(r);
    else out.line(`active model: ${args[0]!}`);
  },
};

const skillsList: Command = {
  name: 'skills list',
  usage: '',
  summary: 'list the skills in $AGENTD_HOME/skills (also: `agentctl skills`)',
  example: 'agentctl skills list',
  arity: [0, 0],
  async run({ client, json, out }: Context) {
    const r = await client.call('list_skills', {});
    if (json) return out.json(r);
    if (r.skills.length === 0) return out.line('no skills (add $AGENTD_HOME/skills/NAME/SKILL.md)');
    out.table([['NAME', 'DESCRIPTION'], ...r.skills.map((s) => [s.name, s.description])]);
  },
};

const skillsShow: Command = {
  name: 'skills show',
  usage: 'NAME',
  summary: 'print a skill\'s body',
  example: 'agentctl skills show deploy',
  arity: [1, 1],
  async run({ client, args, json, out }: Context) {
    const r = await client.getSkill(args[0]!);
    if (json) out.json(r);
    else out.write(r.body.endsWith('\n') ? r.body : `${r.body}\n`);
  },
};

export const catalogCommands: Command[] = [modelsList, modelsSet, skillsList, skillsShow];
