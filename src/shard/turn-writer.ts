/**
 * Group commit for finished turns. Turns that finish in the same event-loop
 * turn go to the store as one batch (`writeTurns`: one transaction, one bad
 * turn cannot sink the others), and each turn's `end` waits for that commit.
 * Measured with SQLite on this machine: a commit per turn cost ~150 µs of the
 * shard's time (WAL commit plus an FTS5 segment flush); eight turns per commit
 * cost ~50 µs each, sixty-four ~33 µs. A database server gains more: one
 * round trip per batch instead of one per turn.
 *
 * How a backend commits lives behind `writeTurns` (SQLite: a batch the shard
 * finished alone is committed on the shard's connection if the write lock is
 * free; otherwise it goes to the turn writer thread, which commits it in one
 * transaction with what the other shards sent meanwhile, see group-commit.ts).
 * A store that bounds its commits in flight (PostgreSQL: two, pool.ts) gets
 * the turns that finished meanwhile as one batch when a commit returns.
 */
import type { Message } from '../models/types.ts';
import { callMeter } from './call-meter.ts';
import type { ConversationRef, ConversationStorage, TurnOutcome, TurnRecord } from '../storage/contract.ts';

interface Pending extends TurnRecord {
  resolve(): void;
  reject(err: Error): void;
}

export class TurnWriter {
  readonly #storage: ConversationStorage;
  #pending: Pending[] = [];
  #scheduled = false;
  #inFlight = 0;
  readonly #flush = (): void => this.flush();

  /** The shard's jobs under way (running or queued), those of the batch included. */
  readonly #openJobs: () => number;

  /** Called when a lone turn's commit is scheduled for this event-loop turn (the outbox holds its flush for it). */
  readonly #onScheduled: () => void;

  constructor(storage: ConversationStorage, openJobs: () => number, onScheduled: () => void = () => {}) {
    this.#storage = storage;
    this.#openJobs = openJobs;
    this.#onScheduled = onScheduled;
  }

  /** Resolves once the turn (and its outcome, if named) is committed and `conv.dbId` is set; rejects if its write failed. */
  write(conv: ConversationRef, messages: readonly Message[], outcome: TurnOutcome | null = null): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ conv, messages, outcome, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(this.#flush);
        // Alone (as flush judges it): the commit may be the shard's own, done before the outbox's next flush.
        if (this.#openJobs() <= 1) this.#onScheduled();
      }
    });
  }

  flush(): void {
    this.#scheduled = false;
    if (this.#pending.length === 0 || this.#inFlight >= (this.#storage.commitsInFlight ?? Infinity)) return;
    const batch = this.#pending;
    this.#pending = [];
    this.#inFlight++;
    const began = callMeter.metrics ? performance.now() : 0;
    // Alone: no other turn of this shard's will finish soon enough to share a commit.
    const written = this.#storage.writeTurns(batch, this.#openJobs() <= batch.length);
    if (began > 0) {
      const timed = (status: 'ok' | 'error') => (): void => callMeter.commitBatch(status, performance.now() - began, batch.length);
      written.then(timed('ok'), timed('error'));
    }
    // What finished during this commit goes in the next one.
    const next = (): void => {
      this.#inFlight--;
      this.flush();
    };
    written.then(next, next);
    written.then(
      (outcomes) => {
        batch.forEach((p, i) => {
          const err = outcomes[i];
          if (err) p.reject(err);
          else p.resolve();
        });
      },
      // The commit itself failed (disk full, I/O error, a lost server): nothing of the batch is stored.
      (err: unknown) => {
        for (const p of batch) p.reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  }
}
