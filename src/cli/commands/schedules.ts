/** Schedules: list, add, rm (PROTOCOL §4.11). */
import type { CreateScheduleArgs, ScheduleInfo } from '../../client/index.ts';
import { type Command, type Context, type Flags, parseUint, restText, UsageError } from '../command.ts';

/** What a schedule's ticks are, in one word and its value. */
function when(s: ScheduleInfo): string {
  if (s.cron !== null) return `cron ${s.cron}${s.timezone !== null ? ` (${s.timezone})` : ''}`;
  if (s.every_ms !== null) return `every ${s.every_ms} ms`;
  return `at ${s.at}`;
}

/** The schedule the flags describe: exactly one of --cron, --every, --at. */
export function timingOf(flags: Flags): Pick<CreateScheduleArgs, 'cron' | 'every_ms' | 'at' | 'timezone' | 'catch_up'> {
  const given = [flags.cron, flags.every, flags.at].filter((f) => f !== undefined).length;
  if (given !== 1) throw new UsageError('schedules add takes exactly one of --cron EXPR, --every MS and --at TIME');
  const timing: Pick<CreateScheduleArgs, 'cron' | 'every_ms' | 'at' | 'timezone' | 'catch_up'> = {};
  if (flags.cron !== undefined) timing.cron = flags.cron;
  if (flags.every !== undefined) timing.every_ms = parseUint(flags.every, '--every');
  if (flags.at !== undefined) timing.at = flags.at;
  if (flags.timezone !== undefined) timing.timezone = flags.timezone;
  const catchUp = flags['catch-up'];
  if (catchUp !== undefined && catchUp !== 'none' && catchUp !== 'one') throw new UsageError(`--catch-up is none or one, got "${catchUp}"`);
  if (catchUp !== undefined) timing.catch_up = catchUp;
  return timing;
}

const list: Command = {
  name: 'schedules list',
  usage: '',
  summary: 'list the schedules: when they fire, the next tick, how many fired (also: `agentctl schedules`)',
  example: 'agentctl schedules',
  arity: [0, 0],
  async run({ client, json, out }: Context) {
    const schedules = await client.schedules();
    if (json) return out.json({ schedules });
    if (schedules.length === 0) return out.line('no schedules');
    out.table([['NAME', 'SOURCE', 'WHEN', 'NEXT', 'FIRES'], ...schedules.map((s) => [s.name, s.source, when(s), s.next_at ?? '-', String(s.fires)])]);
  },
};

const add: Command = {
  name: 'schedules add',
  usage: 'NAME SOURCE [PAYLOAD...]',
  summary: 'publish PAYLOAD on SOURCE at set times, as `agentctl publish` would',
  details: 'Exactly one of --cron, --every and --at. Subscribe an agent to SOURCE to have the ticks start its turns.',
  example: 'agentctl schedules add standup standup.time "time for standup" --cron "0 9 * * 1-5" --timezone Europe/Berlin',
  options: ['cron', 'every', 'at', 'timezone', 'catch-up'],
  arity: [2, Infinity],
  async run({ client, args, flags, json, out }: Context) {
    const s = await client.createSchedule({ name: args[0]!, source: args[1]!, payload: restText(args, 2), ...timingOf(flags) });
    if (json) out.json(s);
    else out.line(`schedule ${s.name}: ${when(s)} -> ${s.source}, next ${s.next_at}`);
  },
};

const rm: Command = {
  name: 'schedules rm',
  usage: 'NAME',
  summary: 'delete a schedule',
  example: 'agentctl schedules rm standup',
  arity: [1, 1],
  async run({ client, args, json, out }: Context) {
    await client.deleteSchedule(args[0]!);
    if (json) out.json({});
    else out.line(`removed schedule ${args[0]!}`);
  },
};

export const scheduleCommands: Command[] = [list, add, rm];
