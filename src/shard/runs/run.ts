/**
 * One run: a turn from the moment it is queued until `run_retention_ms`
 * after its end. Its shard numbers its frames (`seq`), keeps them when the
 * run is detached (KeptFrames) and sends them to the clients that joined it.
 */
import { StopReason, type ToolCall } from '../../shared/protocol.ts';
import type { Cancellation } from '../turn/cancellation.ts';
import type { PendingApproval, RunInfo, RunStatus } from '../../shared/wire/runs.ts';
import { KeptFrames } from './kept-frames.ts';
import { INTERRUPTED, type LoopState } from '../turn/loop-state.ts';
import type { TurnRequest } from '../../shared/threads/shard-messages.ts';

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
  /**
   * Holds the call until it is decided. `announce` (approval_required) is
   * called once the wait is stored; null for a call of a resumed step, which
   * waits again only if it waited when stored (else it was interrupted).
   */
  decide(call: ToolCall, timeoutMs: number, cancel: Cancellation, announce: (() => void) | null): Promise<string | null>;
  /** The loop's state, which a stored waiting run holds. */
  follow(state: LoopState): void;
  /** A result of the step came in. */
  resulted(): void;
}

/** Where a durable run stores its waits (runs/waiting-runs.ts). */
export interface WaitStore {
  /** The run's waits changed: stored (or dropped once none is left); resolves once durable, never rejects. */
  changed(run: Run): Promise<void>;
}

/** One call a run waits on. `decision` is set once decided (null: approved); `deliver` hands it to the loop. */
interface Wait {
  readonly entry: PendingApproval;
  readonly deadline: number;
  timer: NodeJS.Timeout | undefined;
  decision: string | null | undefined;
  deliver: ((decision: string | null) => void) | null;
}

export class Run implements Steering, Approver {
  readonly id: string;
  readonly agent: string;
  readonly sender: string;
  readonly detached: boolean;
  createdAt = Date.now();
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
  /** The calls it waits on (or that were decided and not yet taken by the loop), by call id; made at the first (a plain run has none). */
  #waits: Map<string, Wait> | null = null;
  /** Set when its waits are stored (a detached or bus-fired turn on a store): where they go. */
  durable: WaitStore | null = null;
  /** A durable run's request and loop state: what its stored row holds. */
  request: TurnRequest | null = null;
  loop: LoopState | null = null;
  /** Its row is in the store now. */
  stored = false;
  /** Left waiting in the store when its shard stopped (shutdown) or let its partition go: it ends here without storing its turn. */
  suspended = false;
  /** Steered messages waiting for the loop's next boundary. */
  #steers: string[] | null = null;
  /** False before the run starts and once its loop ended: a steer then gets 409. */
  #steerable = false;
  readonly #ends: RunEnds;

  /**
   * A resumed run: `seq`, the seq its frames go on after; `joinableAfter`,
   * the last seq it stored (a join after it gets every frame sent since the
   * restart; the frames before are gone with the old daemon).
   */
  constructor(id: string, agent: string, sender: string, detached: boolean, ends: RunEnds, seq = 0, joinableAfter = 0) {
    this.id = id;
    this.agent = agent;
    this.sender = sender;
    this.detached = detached;
    this.seq = seq;
    this.kept = detached ? new KeptFrames(joinableAfter + 1) : null;
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

  /** The steered messages not yet taken (a stored run stores them too). */
  steers(): string[] {
    return this.#steers ?? [];
  }

  /** A resumed run's steered messages that its loop had not taken before the restart. */
  restoreSteers(steers: readonly string[]): void {
    if (steers.length > 0) this.#steers = [...steers];
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

  follow(state: LoopState): void {
    // Only a durable run stores its loop; a plain one keeps nothing of it (ended runs are kept for run_retention_ms).
    if (this.durable !== null) this.loop = state;
  }

  resulted(): void {
    if (this.waiting) void this.durable?.changed(this);
  }

  /** Whether a call still waits for its decision. */
  get waiting(): boolean {
    if (this.#waits === null) return false;
    for (const w of this.#waits.values()) if (w.decision === undefined) return true;
    return false;
  }

  /** The calls still waiting, with their deadlines (epoch ms). */
  waits(): (PendingApproval & { deadline: number })[] {
    const out: (PendingApproval & { deadline: number })[] = [];
    for (const w of this.#waits?.values() ?? []) if (w.decision === undefined) out.push({ ...w.entry, deadline: w.deadline });
    return out;
  }

  /** A stored wait, restored: it times out at its stored deadline (at once when that has passed). */
  restoreWait(entry: PendingApproval, deadline: number): void {
    this.#wait(entry, deadline);
    this.stored = true;
  }

  decide(call: ToolCall, timeoutMs: number, cancel: Cancellation, announce: (() => void) | null): Promise<string | null> {
    let w = this.#waits?.get(call.id);
    if (w !== undefined) return this.#take(w, cancel);
    if (announce === null) return Promise.resolve(INTERRUPTED);
    w = this.#wait({ call_id: call.id, tool: call.name, arguments: call.arguments }, Date.now() + timeoutMs);
    const wait = w;
    // The client hears of the wait only once it is stored: a client that saw approval_required finds it after a crash.
    const stored = this.durable?.changed(this) ?? Promise.resolve();
    return stored.then(() => {
      announce();
      return this.#take(wait, cancel);
    });
  }

  #wait(entry: PendingApproval, deadline: number): Wait {
    const w: Wait = { entry, deadline, timer: undefined, decision: undefined, deliver: null };
    w.timer = setTimeout(() => this.#settle(w, 'approval timed out'), Math.max(0, deadline - Date.now()));
    (this.#waits ??= new Map()).set(entry.call_id, w);
    this.status = 'waiting';
    return w;
  }

  /** The decision of `w`, once made; a cancelled run's wait ends at once. */
  #take(w: Wait, cancel: Cancellation): Promise<string | null> {
    return new Promise((resolve) => {
      const onAbort = (): void => this.#settle(w, 'cancelled while waiting for approval');
      w.deliver = (decision) => {
        cancel.signal.removeEventListener('abort', onAbort);
        this.#waits?.delete(w.entry.call_id);
        resolve(decision);
      };
      if (w.decision !== undefined) return w.deliver(w.decision);
      cancel.signal.addEventListener('abort', onAbort, { once: true });
      if (cancel.aborted) onAbort();
    });
  }

  #settle(w: Wait, decision: string | null): void {
    if (w.decision !== undefined) return;
    clearTimeout(w.timer);
    w.decision = decision;
    if (!this.waiting && !this.ended) this.status = 'running';
    if (this.stored) void this.durable?.changed(this);
    w.deliver?.(decision);
  }

  /** Settles a pending call: true when the run was waiting on it. */
  approve(callId: string, approve: boolean, reason: string | null): boolean {
    const w = this.#waits?.get(callId);
    if (w === undefined || w.decision !== undefined) return false;
    this.#settle(w, approve ? null : reason === null ? 'denied' : `denied: ${reason}`);
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
    this.request = null;
    this.loop = null;
    // Ended before its loop took its waits (a resumed run cancelled, or failing, before it ran): they end with it, and so does its row.
    for (const w of this.#waits?.values() ?? []) {
      if (w.decision !== undefined) continue;
      clearTimeout(w.timer);
      w.decision = 'the run ended';
    }
    if (this.stored) void this.durable?.changed(this);
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
      pending_approvals: this.#waits === null ? [] : this.waits().map(({ call_id, tool, arguments: args }) => ({ call_id, tool, arguments: args })),
    };
    if (this.ended) {
      info.ended_at = new Date(this.endedAt).toISOString();
      info.stop_reason = this.stopReason!;
      info.error = this.error;
    }
    return info;
  }
}
