/**
 * Group commit for every shard (SQLite). The turn writer thread
 * (writer-thread.ts) holds the connection that commits the turns shards
 * finish under load (a shard commits itself a batch it finished alone while
 * the lock is free, and a batch with a big message: store.ts); each shard
 * posts its batches to it on a MessagePort of its own. Batches that arrive
 * before the next check phase, from any number of shards, are committed in
 * ONE transaction under the write lock (ConversationStore.writeTurns: one bad
 * turn is retried alone and fails alone), and each batch is answered with,
 * per turn, its conversation's row id or its error. Before this, each shard
 * committed on its own connection and every shard contended for SQLite's one
 * write lock, so stored turns/s fell as shards were added.
 */
import type { MessagePort } from 'node:worker_threads';
import type { ConversationStore } from './store.ts';
import type { TurnRecord } from '../contract.ts';
import type { CommitReply, CommitRequest, CommitResult } from '../../threads/writer/messages.ts';

interface Queued {
  turns: readonly TurnRecord[];
  done(results: CommitResult[]): void;
}

export class GroupCommitter {
  readonly #store: ConversationStore;
  #queued: Queued[] = [];
  #scheduled = false;
  #commits = 0;
  readonly #flush = (): void => this.flush();

  constructor(store: ConversationStore) {
    this.#store = store;
  }

  /** Transactions committed so far (a batch that had to be retried turn by turn counts once). */
  get commits(): number {
    return this.#commits;
  }

  /** Queues a batch for the next commit; `done` gets one result per turn. */
  submit(turns: readonly TurnRecord[], done: (results: CommitResult[]) => void): void {
    this.#queued.push({ turns, done });
    if (!this.#scheduled) {
      this.#scheduled = true;
      // After the port's queued messages: whatever every shard sent meanwhile joins this commit.
      setImmediate(this.#flush);
    }
  }

  /** Answers a shard's port: each request is queued, each reply posted back on it. */
  serve(port: MessagePort, inspect: (turns: readonly TurnRecord[]) => void = () => undefined): void {
    port.on('message', (req: CommitRequest) => {
      inspect(req.turns);
      this.submit(req.turns, (results) => port.postMessage({ id: req.id, results } satisfies CommitReply));
    });
  }

  flush(): void {
    this.#scheduled = false;
    if (this.#queued.length === 0) return;
    const queued = this.#queued;
    this.#queued = [];
    const turns = queued.length === 1 ? queued[0]!.turns : queued.flatMap((q) => q.turns);
    let results: CommitResult[];
    try {
      results = this.#store.writeTurns(turns).map((r) => (typeof r === 'number' ? r : r.message));
    } catch (err) {
      // The lock or the connection itself failed: nothing of the batch is stored.
      const message = err instanceof Error ? err.message : String(err);
      results = turns.map(() => message);
    }
    this.#commits++;
    if (queued.length === 1) return queued[0]!.done(results);
    let from = 0;
    for (const q of queued) q.done(results.slice(from, (from += q.turns.length)));
  }
}
