/** The wire contract of runs (PROTOCOL §4.13): get_run, list_runs, join_run. */
import type { StopReason } from '../protocol.ts';
import type { Empty } from './common.ts';
import type { StreamEventBodies } from './turns.ts';

/** A run's state: queued behind the pair's earlier jobs, running, waiting for a tool approval, or ended one of four ways. */
export const RUN_STATUSES = ['queued', 'running', 'waiting', 'done', 'failed', 'cancelled', 'stalled'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** A tool call a waiting run holds until someone approves or denies it. */
export interface PendingApproval {
  call_id: string;
  tool: string;
  arguments: string;
}

export interface RunInfo {
  run_id: string;
  agent: string;
  sender: string;
  status: RunStatus;
  /** Whether the run goes on when its client's connection closes, and so can be joined. */
  detached: boolean;
  created_at: string;
  ended_at?: string;
  stop_reason?: StopReason;
  error?: string;
  pending_approvals: PendingApproval[];
}

/**
 * `only_pair` on get_run, join_run and approve_tool: serve the run only when
 * its pair is within these (absent or null: any), else answer 404 as for an
 * unknown run. The daemon sets it for a token bound to agents or a sender
 * (PROTOCOL §4.14), replacing whatever the client sent; anyone else may set
 * it, which only narrows what they see.
 */
export interface OnlyPair {
  agents?: string[] | null;
  sender?: string | null;
}

export interface GetRunArgs {
  run_id: string;
  only_pair?: OnlyPair;
}

export interface ListRunsArgs {
  agent?: string;
  sender?: string;
  status?: RunStatus;
  limit?: number;
}

export interface JoinRunArgs {
  run_id: string;
  /** Frames with a seq above this are sent (0, the default: all of them). */
  after_seq?: number;
  only_pair?: OnlyPair;
}

export interface SteerArgs {
  agent: string;
  sender?: string;
  content: string;
}

export interface SteerReply {
  run_id: string;
}

export interface ApproveToolArgs {
  run_id: string;
  call_id: string;
  approve: boolean;
  /** Why it was denied: the model gets it in the call's error result. */
  reason?: string;
  only_pair?: OnlyPair;
}

export interface RunOperations {
  approve_tool: { args: ApproveToolArgs; variant: 'pong'; reply: Empty };
  get_run: { args: GetRunArgs; variant: 'run'; reply: RunInfo };
  steer: { args: SteerArgs; variant: 'steered'; reply: SteerReply };
  list_runs: { args: ListRunsArgs; variant: 'runs'; reply: RunInfo[] };
  join_run: { args: JoinRunArgs; variant: 'stream'; reply: Partial<StreamEventBodies> };
}
