/**
 * A stored waiting run made live again (PROTOCOL §4.13): its run under its
 * own id, its waits re-armed from their stored deadlines (one already past
 * times out at once), and the request its turn goes on as. The request
 * answers no connection (the client that started it is gone with the old
 * daemon): a detached run is followed with join_run, any run with get_run.
 */
import { BUS_CONN, type TurnRequest } from '../../shared/threads/shard-messages.ts';
import type { LoopState } from '../turn/loop-state.ts';
import type { RunTable } from './run-table.ts';
import type { Run, WaitStore } from './run.ts';
import type { RestoredRun } from './waiting-runs.ts';

/** A resumed run on its way to its pair's queue. */
export interface Resuming {
  req: TurnRequest;
  run: Run;
  loop: LoopState;
}

/** The resumed run and its request; null when this shard holds the run already (it never stopped waiting here). */
export function resumedRequest({ record, state }: RestoredRun, runs: RunTable, store: WaitStore): Resuming | null {
  const { agent, sender } = record;
  const r = state.request;
  const req: TurnRequest = {
    type: 'turn',
    conn: BUS_CONN,
    req: 0,
    mode: 'event',
    agent,
    sender,
    content: r.content,
    guest: null,
    ephemeral: false,
    correlationId: r.correlationId,
    onBusy: 'enqueue',
    toolChoice: r.toolChoice,
    depth: r.depth,
    chain: r.chain,
    seq: 0,
    turnId: r.turnId,
    detach: state.detached,
  };
  // Frames sent after the last write (approval_required, results of the step) had seqs up to two per call past it: go on after them.
  const seq = state.seq + 2 * (state.loop.step?.calls.length ?? 0) + 1;
  const run = runs.restore(record.runId, agent, sender, state.detached, record.createdAt, seq, state.seq);
  if (run === null) return null;
  run.durable = store;
  run.request = req;
  run.loop = state.loop;
  run.restoreSteers(state.steers ?? []);
  for (const w of state.waits) run.restoreWait({ call_id: w.call_id, tool: w.tool, arguments: w.arguments }, w.deadline);
  return { req, run, loop: state.loop };
}
