/**
 * Stored conversations in SQLite. ConversationStore is the synchronous
 * engine (benchmarks and tests drive it directly; the turn writer thread
 * commits every shard's turns with it, see group-commit.ts).
 * SqliteConversationStorage is a shard's side of the storage contract: reads
 * and its rare writes (summaries, deletes, stalled turns) on the shard's own
 * connection under the shared write lock, turn commits through the writer
 * thread. A turn's messages are written in one transaction before its `end`
 * is sent; a conversation comes back from here when it is touched after a
 * restart or after it was evicted from memory.
 */
import type { Db } from './db.ts';
import type { Transaction } from 'better-sqlite3';
import { now, unindexMessages } from './db.ts';
import type { StalledTurn } from '../../shared/threads/shard-messages.ts';
import type { Message } from '../../models/types.ts';
import { TITLE_CHARS } from '../../shard/conversation.ts';
import type { WriteLock } from './write-lock.ts';
import { stalledRecord, toMessage, toOutcome, toStoredConversation, type ConversationRow, type MessageRow, type OutcomeRow } from '../stored-rows.ts';
import type { CommitResult } from '../../threads/writer/messages.ts';
import { WriterLostError, type WriterClient } from '../../threads/writer/writer-client.ts';
import { settled, type ConversationRef, type ConversationStorage, type StoredConversation, type TurnOutcome, type TurnRecord, type WaitingRunRecord } from '../contract.ts';
import { SqliteWaitingRuns } from './waiting-runs.ts';


export class ConversationStore {
  readonly #db: Db;
  readonly #lock: WriteLock;
  readonly #writeTurnsTx;
  readonly #find;
  readonly #recent;
  readonly #all;
  readonly #insertConversation;
  readonly #touch;
  readonly #insertMessage;
  readonly #insertOutcome;
  readonly #findOutcome;
  readonly #insertTitleFts;
  readonly #setSummary;
  readonly #updateSummaryFts;
  readonly #deleteFts;
  readonly #deleteTitleFts;
  readonly #deleteConversation;
  /** Writes a turn's messages (and outcome) in one transaction; returns the conversation's row id (creating the row on its first turn). */
  readonly appendTurn: Transaction<(conv: ConversationRef, messages: readonly Message[], outcome?: TurnOutcome | null) => number>;

  constructor(db: Db, lock: WriteLock) {
    this.#db = db;
    this.#lock = lock;
    this.#find = db.prepare<[string, string], ConversationRow>(
      'SELECT id, title, created_at, summary, summary_upto, message_count FROM conversations WHERE agent = ? AND sender = ?',
    );
    this.#recent = db.prepare<[number, number], MessageRow>(
      'SELECT idx, role, content, agent, tool_calls, tool_call_id, name, is_error, stop_reason FROM messages WHERE conversation_id = ? AND idx >= ? ORDER BY idx',
    );
    this.#all = this.#recent;
    this.#insertConversation = db.prepare<[string, string, string, string, string], { id: number }>(
      'INSERT INTO conversations (agent, sender, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING id',
    );
    this.#touch = db.prepare<[string, number, number]>('UPDATE conversations SET updated_at = ?, message_count = ? WHERE id = ?');
    // The search index is not written here: the storage threads index committed messages (search-index.ts).
    this.#insertMessage = db.prepare<[number, number, string, string, string | null, string | null, string | null, string | null, number, string | null, string]>(
      'INSERT INTO messages (conversation_id, idx, role, content, agent, tool_calls, tool_call_id, name, is_error, stop_reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.#insertOutcome = db.prepare<[number, string, string, string, string, string, string, string, string]>(
      'INSERT INTO turn_outcomes (conversation_id, turn_id, agent, model, stop_reason, error, usage, final_text, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.#findOutcome = db.prepare<[number, string], OutcomeRow>(
      'SELECT agent, model, stop_reason, error, usage, final_text FROM turn_outcomes WHERE conversation_id = ? AND turn_id = ?',
    );
    this.#insertTitleFts = db.prepare<[number, string]>("INSERT INTO conversations_fts (rowid, title, summary) VALUES (?, ?, '')");
    this.#setSummary = db.prepare<[string, number, string, number]>('UPDATE conversations SET summary = ?, summary_upto = ?, updated_at = ? WHERE id = ?');
    this.#updateSummaryFts = db.prepare<[string, number]>('UPDATE conversations_fts SET summary = ? WHERE rowid = ?');
    this.#deleteFts = db.prepare<[number]>(unindexMessages('conversation_id = ?'));
    this.#deleteTitleFts = db.prepare<[number]>('DELETE FROM conversations_fts WHERE rowid = ?');
    this.#deleteConversation = db.prepare<[number]>('DELETE FROM conversations WHERE id = ?');

    const append = (conv: ConversationRef, messages: readonly Message[], outcome: TurnOutcome | null = null): number => {
      const at = now();
      let id = conv.dbId;
      if (id === null) {
        const title = conv.title || (messages.find((m) => m.role === 'user')?.content.slice(0, TITLE_CHARS) ?? '');
        id = this.#insertConversation.get(conv.agent, conv.sender, title, at, at)!.id;
        this.#insertTitleFts.run(id, title);
      }
      let idx = conv.stored;
      for (const m of messages) {
        this.#insertMessage.run(
          id, idx++, m.role, m.content, m.agent ?? null,
          m.tool_calls === undefined ? null : JSON.stringify(m.tool_calls),
          m.tool_call_id ?? null, m.name ?? null, m.is_error ? 1 : 0, m.stop_reason ?? null, at,
        );
      }
      this.#touch.run(at, idx, id);
      if (outcome !== null) {
        const o = outcome;
        this.#insertOutcome.run(id, o.turnId, o.agent, o.model, o.stopReason, o.error, JSON.stringify(o.usage), o.finalText, at);
      }
      return id;
    };
    this.appendTurn = db.transaction(append);
    this.#writeTurnsTx = db.transaction((turns: readonly TurnRecord[]) => {
      const ids = turns.map((t) => append(t.conv, t.messages, t.outcome));
      // Row ids are kept only once the whole batch committed.
      return () => turns.forEach(({ conv }, i) => (conv.dbId = ids[i]!));
    });
  }

  /**
   * Writes several turns in one transaction under the write lock, sets each
   * conversation's `dbId`, and returns per turn its conversation's row id or
   * its error. If the batch fails, each turn is retried in a transaction of
   * its own, so one bad turn cannot sink the others.
   */
  writeTurns(turns: readonly TurnRecord[]): (number | Error)[] {
    this.#lock.acquire();
    return this.#writeTurnsHeld(turns);
  }

  /** writeTurns if the write lock is free now; null, with nothing written, if another thread holds it. */
  tryWriteTurns(turns: readonly TurnRecord[]): (number | Error)[] | null {
    return this.#lock.tryAcquire() ? this.#writeTurnsHeld(turns) : null;
  }

  /** writeTurns with the lock taken by the caller; releases it. */
  #writeTurnsHeld(turns: readonly TurnRecord[]): (number | Error)[] {
    try {
      let keepIds: () => void;
      try {
        // IMMEDIATE takes SQLite's write lock at BEGIN; holding ours first means it is free.
        keepIds = this.#writeTurnsTx.immediate(turns);
      } finally {
        this.#lock.release();
      }
      keepIds();
      return turns.map((t) => t.conv.dbId!);
    } catch (batchError) {
      if (turns.length === 1) return [batchError as Error];
      return turns.map((turn) => {
        try {
          return (turn.conv.dbId = this.#lock.with(() => this.appendTurn.immediate(turn.conv, turn.messages, turn.outcome)));
        } catch (err) {
          return err as Error;
        }
      });
    }
  }

  /** The stored outcome of the conversation's turn named `turnId`, if there is one. */
  outcome(conversationId: number, turnId: string): TurnOutcome | null {
    const r = this.#findOutcome.get(conversationId, turnId);
    return r === undefined ? null : toOutcome(turnId, r);
  }

  /**
   * Stores a turn its stalled shard was running as ended `stalled`: its user
   * message and an empty assistant message marked so. Skipped if the turn's
   * turn_id is stored already (it committed just before the shard froze).
   */
  recordStalled(t: StalledTurn): void {
    const row = this.#find.get(t.agent, t.sender);
    if (row !== undefined && t.turnId !== null && this.#findOutcome.get(row.id, t.turnId) !== undefined) return;
    const { conv, messages, outcome } = stalledRecord(t, row ?? null);
    this.#lock.with(() => this.appendTurn.immediate(conv, messages, outcome));
  }

  load(agent: string, sender: string): StoredConversation | null {
    const c = this.#find.get(agent, sender);
    if (c === undefined) return null;
    return toStoredConversation(c, this.#recent.all(c.id, c.summary_upto).map(toMessage));
  }

  exists(agent: string, sender: string): boolean {
    return this.#find.get(agent, sender) !== undefined;
  }

  /** The pair's conversation row and how many messages it holds, if it is stored. */
  stored(agent: string, sender: string): { id: number; messageCount: number } | null {
    const c = this.#find.get(agent, sender);
    return c === undefined ? null : { id: c.id, messageCount: c.message_count };
  }

  /** Every stored message, including those a compaction summarized. */
  allMessages(id: number): Message[] {
    return this.#all.all(id, 0).map(toMessage);
  }

  setSummary(id: number, summary: string, upto: number): void {
    const tx = this.#db.transaction(() => {
      this.#setSummary.run(summary, upto, now(), id);
      this.#updateSummaryFts.run(summary, id);
    });
    this.#lock.with(() => tx.immediate());
  }

  delete(id: number): void {
    const tx = this.#db.transaction(() => {
      this.#deleteFts.run(id);
      this.#deleteTitleFts.run(id);
      this.#deleteConversation.run(id); // messages go by ON DELETE CASCADE
    });
    this.#lock.with(() => tx.immediate());
  }
}


/** How a shard's turns reach a commit: the writer thread's client (a test may serve it in-process). */
export type TurnCommits = Pick<WriterClient, 'commit' | 'close'>;

/**
 * A batch holding a message of this many characters or more is committed on
 * the shard's own connection instead of the writer thread's: the writer
 * needs its own copy of every message (a clone, or UTF-8 bytes), and for a
 * 16 MiB request that copy and its serialized form raised the daemon's peak
 * from about 8x to about 12x the request (bench/big-stream-memory.ts). Such
 * a batch is rare and dominated by its bytes, so it gains nothing from
 * sharing a commit. Order holds: a pair's next turn waits for this commit.
 */
export const DIRECT_COMMIT_CHARS = 64 * 1024;

const holdsBigMessage = (turns: readonly TurnRecord[]): boolean =>
  turns.some((t) => t.messages.some((m) => m.content.length >= DIRECT_COMMIT_CHARS));

/**
 * The SQLite side of the storage contract, for one shard. Every call but
 * `writeTurns` runs at once on the shard's connection and returns a settled
 * promise. A batch the shard finished `alone` (nothing else of the shard's
 * under way) is committed here, under the write lock, if the lock is free:
 * a lone turn then wakes no other thread before its `end`. Any other batch,
 * or one that finds the lock held, goes to the writer thread, which commits
 * it with whatever the other shards sent meanwhile: under load the commits
 * stay grouped (shards committing every batch themselves cost more CPU per
 * turn under load in the side-by-side runs). A batch with a big message is always committed here, waiting
 * for the lock if it must (DIRECT_COMMIT_CHARS).
 */
export class SqliteConversationStorage implements ConversationStorage {
  readonly #store: ConversationStore;
  readonly #db: Db;
  readonly #commits: TurnCommits;
  readonly #commitHere: boolean;
  readonly #waiting: SqliteWaitingRuns;

  /** `commitHere` false: every small batch goes to the writer (its fault-injection tests need the turns there). */
  constructor(db: Db, lock: WriteLock, commits: TurnCommits, commitHere = true) {
    this.#db = db;
    this.#store = new ConversationStore(db, lock);
    this.#commits = commits;
    this.#commitHere = commitHere;
    this.#waiting = new SqliteWaitingRuns(db, lock);
  }

  saveWaitingRun(run: WaitingRunRecord): Promise<void> {
    return settled(() => this.#waiting.save(run));
  }

  deleteWaitingRun(runId: string): Promise<void> {
    return settled(() => this.#waiting.delete(runId));
  }

  waitingRuns(): Promise<WaitingRunRecord[]> {
    return settled(() => this.#waiting.all());
  }

  load(agent: string, sender: string): Promise<StoredConversation | null> {
    return settled(() => this.#store.load(agent, sender));
  }

  exists(agent: string, sender: string): Promise<boolean> {
    return settled(() => this.#store.exists(agent, sender));
  }

  allMessages(id: number): Promise<Message[]> {
    return settled(() => this.#store.allMessages(id));
  }

  outcome(conversationId: number, turnId: string): Promise<TurnOutcome | null> {
    return settled(() => this.#store.outcome(conversationId, turnId));
  }

  setSummary(id: number, summary: string, upto: number): Promise<void> {
    return settled(() => this.#store.setSummary(id, summary, upto));
  }

  delete(id: number): Promise<void> {
    return settled(() => this.#store.delete(id));
  }

  recordStalled(turn: StalledTurn): Promise<void> {
    return settled(() => this.#store.recordStalled(turn));
  }

  close(): Promise<void> {
    this.#commits.close();
    return settled(() => void this.#db.close());
  }

  async writeTurns(turns: readonly TurnRecord[], alone = false): Promise<(Error | null)[]> {
    if (holdsBigMessage(turns)) return this.#store.writeTurns(turns).map((r) => (r instanceof Error ? r : null));
    const here = this.#commitHere && alone ? this.#store.tryWriteTurns(turns) : null;
    if (here !== null) return here.map((r) => (r instanceof Error ? r : null));
    // Only what a commit needs crosses to the writer (a shard's conversation object holds its whole history).
    const sent = turns.map(({ conv, messages, outcome }): TurnRecord => ({
      conv: { dbId: conv.dbId, agent: conv.agent, sender: conv.sender, title: conv.title, stored: conv.stored },
      messages,
      outcome: outcome ?? null,
    }));
    let results: CommitResult[];
    try {
      results = await this.#commits.commit(sent);
    } catch (err) {
      if (!(err instanceof WriterLostError)) throw err;
      // In doubt: the writer may have committed a turn just before it was lost. It is gone now, so the store says which.
      return turns.map((t) => (this.#landed(t) ? null : new Error(`${err.message}; the turn was not stored`)));
    }
    return results.map((r, i) => {
      if (typeof r === 'string') return new Error(r);
      turns[i]!.conv.dbId = r;
      return null;
    });
  }

  /** Whether a turn's commit is in the store (this shard alone writes the pair's turns, one at a time). */
  #landed({ conv, messages }: TurnRecord): boolean {
    const row = this.#store.stored(conv.agent, conv.sender);
    if (row === null || (conv.dbId !== null && row.id !== conv.dbId) || row.messageCount !== conv.stored + messages.length) return false;
    conv.dbId = row.id;
    return true;
  }
}
