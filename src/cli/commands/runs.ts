/** Runs: list them, show one, follow one again (PROTOCOL §4.13). */
import { RUN_STATUSES, type RunInfo, type RunStatus } from '../../shared/wire/runs.ts';
import { turnFailure } from '../failure.ts';
import { type Command, type Context, oneAgent, parseUint, restText, senderOf, UsageError } from '../command.ts';
import { TurnPrinter } from './turns.ts';

function statusOf(value: string | undefined): { status?: RunStatus } {
  if (value === undefined) return {};
  if (!(RUN_STATUSES as readonly string[]).includes(value)) throw new UsageError(`--status must be one of ${RUN_STATUSES.join(', ')}, got "${value}"`);
  return { status: value as RunStatus };
}

const runRow = (r: RunInfo): string[] => [r.run_id, r.status, `${r.agent}/${r.sender}`, r.created_at, r.detached ? 'detached' : '', r.error ?? ''];

const runs: Command = {
  name: 'runs',
  usage: '',
  summary: 'list the runs the daemon remembers, newest first',
  details: 'A run is one turn, from queued until run_retention_ms after its end.',
  example: 'agentctl runs --agent assistant --status running',
  options: ['agent', 'sender', 'status', 'limit'],
  arity: [0, 0],
  async run({ client, flags, json, out }: Context) {
    const list = await client.listRuns({
      ...oneAgent(flags),
      ...(flags.sender !== undefined ? { sender: flags.sender } : {}),
      ...statusOf(flags.status),
      ...(flags.limit !== undefined ? { limit: parseUint(flags.limit, '--limit') } : {}),
    });
    if (json) return void out.json(list);
    if (list.length === 0) return void out.note('no runs');
    out.table([['RUN', 'STATUS', 'PAIR', 'CREATED', '', 'ERROR'], ...list.map(runRow)]);
  },
};

const run: Command = {
  name: 'run',
  usage: 'RUN_ID',
  summary: 'show one run: its status, and the tool calls it waits on',
  example: 'agentctl run r5f1c2a9e-1x8k2q4-3',
  arity: [1, 1],
  async run({ client, args, json, out }: Context) {
    const r = await client.getRun(args[0]!);
    if (json) return void out.json(r);
    const rows = [['run', r.run_id], ['status', r.status], ['agent', r.agent], ['sender', r.sender], ['detached', String(r.detached)], ['created', r.created_at]];
    if (r.ended_at !== undefined) rows.push(['ended', r.ended_at], ['stop reason', r.stop_reason ?? ''], ['error', r.error ?? '']);
    for (const p of r.pending_approvals) rows.push(['waits on', `${p.call_id} ${p.tool} ${p.arguments}`]);
    out.table(rows);
  },
};

const join: Command = {
  name: 'join',
  usage: 'RUN_ID',
  summary: 'follow a detached run again: what it sent after --after, then live, to its end',
  details: 'Prints like `agentctl stream`; a failed or cancelled run exits 4.',
  example: 'agentctl join r5f1c2a9e-1x8k2q4-3 --after 12',
  options: ['after'],
  arity: [1, 1],
  async run({ client, args, flags, json, out }: Context) {
    const printer = new TurnPrinter(out);
    const after = flags.after === undefined ? 0 : parseUint(flags.after, '--after');
    for await (const ev of client.joinRun(args[0]!, after)) {
      if (!json) printer.event(ev);
      else {
        out.json(ev);
        if (ev.type === 'end' && ev.error !== '') throw turnFailure(ev.stop_reason, ev.error);
      }
    }
  },
};

const steer: Command = {
  name: 'steer',
  usage: 'AGENT TEXT...',
  summary: 'add a message to the conversation\'s running turn, seen by the model at its next step',
  details: 'The turn takes it after the tool calls in flight finish, before its next model call. Exits 1 (409) when no turn is running.',
  example: 'agentctl steer assistant "use the staging database instead" --sender alice',
  options: ['sender'],
  arity: [2, Infinity],
  async run({ client, args, flags, json, out }: Context) {
    const runId = await client.steer(args[0]!, restText(args, 1), senderOf(flags).sender);
    if (json) out.json({ run_id: runId });
    else out.line(`steered run ${runId}`);
  },
};

const approve: Command = {
  name: 'approve',
  usage: 'RUN_ID CALL_ID',
  summary: 'let a tool call a run waits on run (agentctl run RUN_ID lists them)',
  example: 'agentctl approve r5f1c2a9e-1x8k2q4-3 call_1_1',
  arity: [2, 2],
  async run({ client, args, json, out }: Context) {
    await client.approveTool(args[0]!, args[1]!, true);
    if (json) out.json({});
    else out.line(`approved ${args[1]} of run ${args[0]}`);
  },
};

const deny: Command = {
  name: 'deny',
  usage: 'RUN_ID CALL_ID [REASON...]',
  summary: 'refuse a tool call a run waits on: the model gets an error result with the reason',
  example: 'agentctl deny r5f1c2a9e-1x8k2q4-3 call_1_1 "not on production"',
  arity: [2, Infinity],
  async run({ client, args, json, out }: Context) {
    const reason = restText(args, 2);
    await client.approveTool(args[0]!, args[1]!, false, reason === '' ? undefined : reason);
    if (json) out.json({});
    else out.line(`denied ${args[1]} of run ${args[0]}`);
  },
};

export const runCommands: Command[] = [runs, run, join, steer, approve, deny];
