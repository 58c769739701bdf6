/**
 * Durable waiting (PROTOCOL §4.13): a run that waits for a tool approval is
 * stored, one row per run, from its first wait until nothing waits any more;
 * a daemon that starts again (or, in a cluster, the node that gains the
 * pair's partition) reads the rows of its pairs and resumes each run where
 * it waited. The row holds the turn so far (its request, the loop's state,
 * the waits and their deadlines), because a turn enters the history only
 * when it ends. Writes of one run are made in order; a failed write is
 * logged and the run goes on (it is then as durable as a plain turn).
 */
import type { Logger } from '../../shared/log.ts';
import type { ConversationStorage, WaitingRunRecord } from '../../storage/contract.ts';
import type { PendingApproval } from '../../shared/wire/runs.ts';
import type { ToolChoice } from '../../shared/protocol.ts';
import type { TurnRequest } from '../../shared/threads/shard-messages.ts';
import type { LoopState } from '../turn/loop-state.ts';
import type { Run, WaitStore } from './run.ts';

/** The row's `state`, as JSON. */
export interface StoredWaitingRun {
  v: 1;
  detached: boolean;
  /** The last seq its frames had when stored. */
  seq: number;
  request: {
    mode: TurnRequest['mode'];
    content: string;
    turnId: string | null;
    correlationId: number | null;
    depth: number;
    chain: number;
    toolChoice: ToolChoice | null;
  };
  waits: (PendingApproval & { deadline: number })[];
  loop: LoopState;
  /** Messages steered in that the loop had not taken yet (absent: none). */
  steers?: string[];
}

/** A stored run read back: its row and its parsed state. */
export interface RestoredRun {
  record: WaitingRunRecord;
  state: StoredWaitingRun;
}

export class WaitingRuns implements WaitStore {
  readonly #store: ConversationStorage;
  readonly #log: Logger;
  /** Each stored run's last write, so the next one follows it. */
  readonly #writes = new Map<Run, Promise<void>>();
  #frozen = false;

  constructor(store: ConversationStorage, log: Logger) {
    this.#store = store;
    this.#log = log;
  }

  /** Whether a turn's waits are stored: a turn that goes on without its connection, on a store, answered by its own agent. */
  static durable(req: TurnRequest): boolean {
    return !req.ephemeral && req.guest === null && (req.detach || req.mode === 'event');
  }

  /** Shutdown: nothing is written or dropped from now on, so the runs waiting now stay waiting in the store. */
  freeze(): void {
    this.#frozen = true;
  }

  changed(run: Run): Promise<void> {
    if (this.#frozen || run.suspended) {
      if (run.stored) run.suspended = true;
      return Promise.resolve();
    }
    if (run.waiting && !run.ended) {
      const record = this.#record(run);
      run.stored = true;
      return this.#then(run, () => this.#store.saveWaitingRun(record), 'storing a waiting run failed');
    }
    if (!run.stored) return Promise.resolve();
    run.stored = false;
    return this.#then(run, () => this.#store.deleteWaitingRun(run.id, run.agent, run.sender), 'dropping a waiting run that no longer waits failed');
  }

  /** Leaves the run waiting in the store (its partition moves to another node): it ends here without its turn being stored. */
  suspend(run: Run): void {
    if (run.stored) run.suspended = true;
  }

  /** The stored runs `mine` keeps (this shard's pairs, on partitions this node serves); a row it cannot read is logged and left. */
  async restore(mine: (agent: string, sender: string) => boolean): Promise<RestoredRun[]> {
    const out: RestoredRun[] = [];
    for (const record of await this.#store.waitingRuns()) {
      if (!mine(record.agent, record.sender)) continue;
      try {
        const state = JSON.parse(record.state) as StoredWaitingRun;
        if (state.v !== 1) throw new Error(`unknown version ${String(state.v)}`);
        out.push({ record, state });
      } catch (err) {
        this.#log.error({ run: record.runId, err: (err as Error).message }, 'a stored waiting run cannot be read: left in the store');
      }
    }
    return out;
  }

  #record(run: Run): WaitingRunRecord {
    const req = run.request!;
    const state: StoredWaitingRun = {
      v: 1,
      detached: run.detached,
      seq: run.seq,
      request: {
        mode: req.mode,
        content: req.content,
        turnId: req.turnId,
        correlationId: req.correlationId,
        depth: req.depth,
        chain: req.chain,
        toolChoice: req.toolChoice,
      },
      waits: run.waits(),
      loop: run.loop!,
      steers: run.steers(),
    };
    return { runId: run.id, agent: run.agent, sender: run.sender, createdAt: run.createdAt, state: JSON.stringify(state) };
  }

  #then(run: Run, write: () => Promise<void>, failed: string): Promise<void> {
    const done = (this.#writes.get(run) ?? Promise.resolve())
      .then(write)
      .catch((err: unknown) => this.#log.error({ run: run.id, err: (err as Error).message }, failed));
    this.#writes.set(run, done);
    void done.then(() => {
      if (this.#writes.get(run) === done) this.#writes.delete(run);
    });
    return done;
  }
}
