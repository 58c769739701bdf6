/**
 * Runs (PROTOCOL §4.13): `get_run`, `join_run` and `approve_tool` go to the
 * shard the run id names, with their `only_pair` (a bound token's binding,
 * authorize.ts), which that shard checks against the run's pair before it
 * answers anything of it; `list_runs` asks every shard.
 */
import { AgentdError, Code } from '../../shared/errors.ts';
import { isPlainMap } from '../../shared/args.ts';
import type { RunRequest } from '../../shared/threads/shard-messages.ts';
import { runIdHash } from '../../shared/wire/run-id.ts';
import { RUN_STATUSES } from '../../shared/wire/runs.ts';
import { commonView, type OpArgs } from './op-args.ts';
import { op, ROUTED, type OpTable } from './op-table.ts';

type RunOp = 'get_run' | 'join_run' | 'list_runs' | 'steer' | 'approve_tool';

/** list_runs answers at most this many runs, and this many when `limit` is absent. */
export const MAX_LIST_RUNS = 1000;
const DEFAULT_LIST_RUNS = 100;

type ByRunId = 'get_run' | 'join_run' | 'approve_tool';

/** The run id, the pair hash it carries and the `only_pair` the run is held to; 400 when either is malformed. */
function runOf(args: OpArgs<ByRunId>): { runId: string; hash: number; onlyPair: RunRequest['onlyPair'] } {
  const id = args.nonEmptyStr('run_id');
  const hash = runIdHash(id);
  if (hash === null) throw new AgentdError(Code.BadRequest, `${args.op}.run_id is not a run id: "${id.slice(0, 80)}"`);
  return { runId: id, hash, onlyPair: onlyPair(args) };
}

/** `only_pair`, checked: null when absent; 400 naming the field when it is not `{agents?: [str] | null, sender?: str | null}`. */
function onlyPair(args: OpArgs<ByRunId>): RunRequest['onlyPair'] {
  const v = args.raw('only_pair');
  if (v === undefined || v === null) return null;
  const bad = (what: string): AgentdError => new AgentdError(Code.BadRequest, `${args.op}.only_pair${what}`);
  if (!isPlainMap(v)) throw bad(' must be a map {agents, sender}');
  const { agents, sender } = v;
  if (agents !== undefined && agents !== null && !(Array.isArray(agents) && agents.every((a) => typeof a === 'string'))) throw bad('.agents must be a list of agent names or null');
  if (sender !== undefined && sender !== null && typeof sender !== 'string') throw bad('.sender must be a string or null');
  return { agents: (agents as string[] | null | undefined) ?? null, sender: (sender as string | null | undefined) ?? null };
}

export const runOps: OpTable<RunOp> = {
  get_run: op((ctx, from, req, args) => {
    const { hash, ...run } = runOf(commonView<ByRunId>(args));
    ctx.pool.requestForRun({ type: 'get_run', conn: from.id, req, ...run, afterSeq: 0 }, hash, 'rr');
    return ROUTED;
  }),
  join_run: op((ctx, from, req, args) => {
    const { hash, ...run } = runOf(commonView<ByRunId>(args));
    const afterSeq = args.optUint('after_seq') ?? 0;
    ctx.pool.requestForRun({ type: 'join_run', conn: from.id, req, ...run, afterSeq }, hash, 'stream');
    return ROUTED;
  }),
  approve_tool: op((ctx, from, req, args) => {
    const { hash, ...run } = runOf(commonView<ByRunId>(args));
    const callId = args.nonEmptyStr('call_id');
    const approve = args.optBool('approve');
    if (approve === undefined) throw new AgentdError(Code.BadRequest, 'approve_tool.approve is required');
    const reason = args.optStr('reason');
    ctx.pool.requestForRun({ type: 'approve_tool', conn: from.id, req, ...run, afterSeq: 0, callId, approve, reason }, hash, 'rr');
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
