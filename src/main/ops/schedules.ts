/** Schedules: time as an event source for the bus (PROTOCOL §4.11). */
import { AgentdError, Code } from '../../shared/errors.ts';
import { checkName, scheduleFromArgs, scheduleInfo } from '../schedules/schedule-spec.ts';
import { op, type OpTable } from './op-table.ts';

type ScheduleOp = 'create_schedule' | 'list_schedules' | 'delete_schedule';

export const scheduleOps: OpTable<ScheduleOp> = {
  create_schedule: op(async (ctx, _from, _req, args) => scheduleInfo(await ctx.schedules.create(scheduleFromArgs(args, Date.now())))),
  list_schedules: op(async (ctx) => ({ schedules: (await ctx.schedules.list()).map(scheduleInfo) })),
  delete_schedule: op(async (ctx, _from, _req, args) => {
    const name = checkName('delete_schedule', args.nonEmptyStr('name'));
    if (!(await ctx.schedules.delete(name))) throw new AgentdError(Code.NotFound, `no schedule "${name}"`);
    return {};
  }),
};
