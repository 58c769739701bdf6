/** Runs (PROTOCOL §4.13): `get_run` and `join_run` go to the shard the run id names; `list_runs` asks every shard. */
import { AgentdError, Code } from '../../shared/errors.ts';
import { runIdHash } from '../../shared/wire/run-id.ts';
import { RUN_STATUSES } from '../../shared/wire/runs.ts';
import { commonView, type OpArgs } from './op-args.ts';
import { op, ROUTED, type OpTable } from './op-table.ts';

type RunOp = 'get_run' | 'join_run' | 'list_runs' | 'steer' | 'approve_tool';

/** list_runs answers at most this many runs, and this many when `limit` is absent. */
export const MAX_LIST_RUNS = 1000;
const DEFAULT_LIST_RUNS = 100;

/** The run id and the pair hash it carries; 400 when it is not a run id. */
function runId(args: OpArgs<'get_run' | 'join_run' | 'approve_tool'>): { id: string; hash: number } {
  const id = args.nonEmptyStr('run_id');
  const hash = runIdHash(id);
  if (hash === null) throw new AgentdError(Code.BadRequest, `${args.op}.run_id is not a run id: "${id.slice(0, 80)}"`);
  return { id, hash };
}

export const runOps: OpTable<RunOp> = {
  get_run: op((ctx, from, req, args) => {
    const { id, hash } = runId(commonView<'get_run' | 'join_run' | 'approve_tool'>(args));
    ctx.pool.requestForRun({ type: 'get_run', conn: from.id, req, runId: id, afterSeq: 0 }, hash, 'rr');
    return ROUTED;
  }),
  join_run: op((ctx, from, req, args) => {
    const { id, hash } = runId(commonView<'get_run' | 'join_run' | 'approve_tool'>(args));
    const afterSeq = args.optUint('after_seq') ?? 0;
    ctx.pool.requestForRun({ type: 'join_run', conn: from.id, req, runId: id, afterSeq }, hash, 'stream');
    return ROUTED;
  }),
  approve_tool: op((ctx, from, req, args) => {
    const { id, hash } = runId(commonView<'get_run' | 'join_run' | 'approve_tool'>(args));
    const callId = args.nonEmptyStr('call_id');
    const approve = args.optBool('approve');
    if (approve === undefined) throw new AgentdError(Code.BadRequest, 'approve_tool.approve is required');
    const reason = args.optStr('reason');
    ctx.pool.requestForRun({ type: 'approve_tool', conn: from.id, req, runId: id, afterSeq: 0, callId, approve, reason }, hash, 'rr');
    return ROUTED;
  }),
  steer: op((ctx, from, req, args) => {
    const agent = args.knownAgent(ctx.agents, 'agent');
    const sender = args.writingSender('sender', ctx.defaultSender);
    const content = args.str('content');
    ctx.pool.requestFor({ type: 'steer', conn: from.id, req, agent, sender, content }, 'rr');
    return ROUTED;
  }),
  list_runs: op(async (ctx, _from, _req, args) => {
    const agent = args.optStr('agent');
    const sender = args.optStr('sender');
    const status = args.optEnum('status', RUN_STATUSES) ?? null;
    const limit = args.optUint('limit') ?? DEFAULT_LIST_RUNS;
    if (limit < 1 || limit > MAX_LIST_RUNS) throw new AgentdError(Code.BadRequest, `list_runs.limit must be 1 to ${MAX_LIST_RUNS}`);
    const runs = await ctx.pool.listRuns({ agent, sender, status, limit });
    // Newest first across shards; ids break ties within a millisecond (their counter grows within a shard).
    runs.sort((a, b) => (a.created_at === b.created_at ? 0 : a.created_at < b.created_at ? 1 : -1));
    return runs.slice(0, limit);
  }),
};
