/**
 * One run: a turn from the moment it is queued until `run_retention_ms`
 * after its end. Its shard numbers its frames (`seq`), keeps them when the
 * run is detached (KeptFrames) and sends them to the clients that joined it.
 */
import { StopReason, type ToolCall } from '../../shared/protocol.ts';
import type { Cancellation } from '../turn/cancellation.ts';
import type { PendingApproval, RunInfo, RunStatus } from '../../shared/wire/runs.ts';
import { KeptFrames } from './kept-frames.ts';

/** A join_run request following the run live. */
export interface Joiner {
  conn: number;
  req: number;
}

/** Where a run reports its end (its RunTable). */
export interface RunEnds {
  ended(run: Run): void;
}

const STATUS_OF: Record<StopReason, RunStatus> = {
  [StopReason.Text]: 'done',
  [StopReason.NoAction]: 'done',
  [StopReason.MaxIterations]: 'done',
  [StopReason.Error]: 'failed',
  [StopReason.Cancelled]: 'cancelled',
  [StopReason.Stalled]: 'stalled',
};

/** What the agent loop takes steered messages from (agent-loop.ts). */
export interface Steering {
  /** The messages steered in since the last take, or null. */
  take(): string[] | null;
  /** No more are taken (the loop ends): the ones still waiting, or null. */
  close(): string[] | null;
}

/** What the agent loop asks before a gated tool call runs: null to run it, else the error result the model gets. */
export interface Approver {
  decide(call: ToolCall, timeoutMs: number, cancel: Cancellation): Promise<string | null>;
}

export class Run implements Steering, Approver {
  readonly id: string;
  readonly agent: string;
  readonly sender: string;
  readonly detached: boolean;
  readonly createdAt = Date.now();
  status: RunStatus = 'queued';
  endedAt = 0;
  stopReason: StopReason | null = null;
  error = '';
  /** The seq of the last frame sent. */
  seq = 0;
  /** A detached run's frames, for join_run; null for the others (nothing is kept). */
  readonly kept: KeptFrames | null;
  /** Clients following the run live (join_run), null while none. */
  joiners: Joiner[] | null = null;
  /** The calls it waits on; made at the first (a plain run allocates neither this nor #decisions). */
  #pending: PendingApproval[] | null = null;
  /** How each pending approval is settled, by call id. */
  #decisions: Map<string, (denial: string | null) => void> | null = null;
  /** Steered messages waiting for the loop's next boundary. */
  #steers: string[] | null = null;
  /** False before the run starts and once its loop ended: a steer then gets 409. */
  #steerable = false;
  readonly #ends: RunEnds;

  constructor(id: string, agent: string, sender: string, detached: boolean, ends: RunEnds) {
    this.id = id;
    this.agent = agent;
    this.sender = sender;
    this.detached = detached;
    this.kept = detached ? new KeptFrames() : null;
    this.#ends = ends;
  }

  get ended(): boolean {
    return this.endedAt !== 0;
  }

  /** The agent loop begins: steers are taken from now on. */
  openSteering(): void {
    this.#steerable = true;
  }

  /** Queues a steered message for the next boundary; false when the run's loop takes none (not started, or done). */
  steer(content: string): boolean {
    if (!this.#steerable) return false;
    (this.#steers ??= []).push(content);
    return true;
  }

  take(): string[] | null {
    const s = this.#steers;
    this.#steers = null;
    return s;
  }

  close(): string[] | null {
    this.#steerable = false;
    return this.take();
  }

  /** Holds the call until approve() settles it, it times out, or the run is cancelled; the run is `waiting` meanwhile. */
  decide(call: ToolCall, timeoutMs: number, cancel: Cancellation): Promise<string | null> {
    const pending = (this.#pending ??= []);
    const decisions = (this.#decisions ??= new Map());
    return new Promise((resolve) => {
      const entry: PendingApproval = { call_id: call.id, tool: call.name, arguments: call.arguments };
      const settle = (denial: string | null): void => {
        clearTimeout(timer);
        cancel.signal.removeEventListener('abort', onAbort);
        decisions.delete(call.id);
        pending.splice(pending.indexOf(entry), 1);
        if (pending.length === 0 && !this.ended) this.status = 'running';
        resolve(denial);
      };
      const timer = setTimeout(() => settle('approval timed out'), timeoutMs);
      const onAbort = (): void => settle('cancelled while waiting for approval');
      cancel.signal.addEventListener('abort', onAbort, { once: true });
      decisions.set(call.id, settle);
      pending.push(entry);
      this.status = 'waiting';
    });
  }

  /** Settles a pending call: true when the run was waiting on it. */
  approve(callId: string, approve: boolean, reason: string | null): boolean {
    const settle = this.#decisions?.get(callId);
    if (settle === undefined) return false;
    settle(approve ? null : reason === null ? 'denied' : `denied: ${reason}`);
    return true;
  }

  /** Its end frame went out: what a later get_run says. */
  end(stopReason: StopReason, error: string): void {
    if (this.ended) return;
    this.stopReason = stopReason;
    this.error = error;
    this.status = STATUS_OF[stopReason];
    this.endedAt = Date.now();
    this.joiners = null;
    this.#ends.ended(this);
  }

  info(): RunInfo {
    const info: RunInfo = {
      run_id: this.id,
      agent: this.agent,
      sender: this.sender,
      status: this.status,
      detached: this.detached,
      created_at: new Date(this.createdAt).toISOString(),
      pending_approvals: this.#pending === null ? [] : [...this.#pending],
    };
    if (this.ended) {
      info.ended_at = new Date(this.endedAt).toISOString();
      info.stop_reason = this.stopReason!;
      info.error = this.error;
    }
    return info;
  }
}
