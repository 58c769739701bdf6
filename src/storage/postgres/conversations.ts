/**
 * A shard's conversations in PostgreSQL (the storage contract's
 * ConversationStorage): reads, summaries, deletes and stalled turns here,
 * group commits in pg-turns.ts.
 */
import type pg from 'pg';
import { now } from '../sqlite/db.ts';
import type { StalledTurn } from '../../shared/threads/shard-messages.ts';
import type { Message } from '../../models/types.ts';
import { fenceFor, type FenceSource } from '../../shared/partitions.ts';
import { checkFence } from './fences.ts';
import { inTransaction, SHARD_COMMITS_IN_FLIGHT, type PoolClient } from './pool.ts';
import { indexedWords } from './search-text.ts';
import { appendTurn, writeTurnGroup } from './turns.ts';
import { ConversationLoads, MESSAGE_COLUMNS } from './conversation-loads.ts';
import { stalledRecord, toMessage, toOutcome, type ConversationRow, type MessageRow, type OutcomeRow } from '../stored-rows.ts';
import type { ConversationStorage, StoredConversation, TurnOutcome, TurnRecord, WaitingRunRecord } from '../contract.ts';
import { deleteWaitingRun, saveWaitingRun, waitingRuns } from './waiting-runs.ts';

export class PgConversationStorage implements ConversationStorage {
  readonly #pool: pg.Pool;
  /** Cluster mode: the tokens this node holds, checked by every write (pg-fences.ts). Null on a single node. */
  readonly #fences: FenceSource | null;

  readonly #loads: ConversationLoads;

  constructor(pool: pg.Pool, fences: FenceSource | null = null) {
    this.#pool = pool;
    this.#fences = fences;
    this.#loads = new ConversationLoads(pool);
  }

  /**
   * Runs a write addressed by conversation id: alone on a single node; in
   * cluster mode in a transaction that first checks the fence of the
   * conversation's pair (a conversation already gone has nothing to write).
   */
  async #fencedById(id: number, write: (q: pg.Pool | PoolClient) => Promise<unknown>): Promise<void> {
    const fences = this.#fences;
    if (fences === null) {
      await write(this.#pool);
      return;
    }
    await inTransaction(this.#pool, async (client) => {
      const r = await client.query<{ agent: string; sender: string }>('SELECT agent, sender FROM conversations WHERE id = $1', [id]);
      const pair = r.rows[0];
      if (pair === undefined) return;
      await checkFence(client, fenceFor(fences, pair.agent, pair.sender));
      await write(client);
    });
  }

  async #find(agent: string, sender: string): Promise<ConversationRow | null> {
    const r = await this.#pool.query<ConversationRow>(
      'SELECT id, title, created_at, summary, summary_upto, message_count FROM conversations WHERE agent = $1 AND sender = $2',
      [agent, sender],
    );
    return r.rows[0] ?? null;
  }

  async #messagesFrom(id: number, fromIdx: number): Promise<Message[]> {
    const r = await this.#pool.query<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE conversation_id = $1 AND idx >= $2 ORDER BY idx`, [id, fromIdx]);
    return r.rows.map(toMessage);
  }

  /** The row and its recent messages, in one query with the other loads asked before the next microtask (conversation-loads.ts). */
  load(agent: string, sender: string): Promise<StoredConversation | null> {
    return this.#loads.load(agent, sender);
  }

  async exists(agent: string, sender: string): Promise<boolean> {
    return (await this.#find(agent, sender)) !== null;
  }

  allMessages(id: number): Promise<Message[]> {
    return this.#messagesFrom(id, 0);
  }

  /**
   * Two group commits at a time, on two of the pool's connections, keeping
   * the third for loads (SHARD_POOL_CONNECTIONS). With one, a commit that
   * left carrying the few turns finished just after the previous one came
   * back held every turn finishing behind it for its whole round trip, and
   * under load the shard idled through both; a second commit takes those at
   * once. More than two split the turns into small commits, each paying the
   * server's per-statement and fsync cost.
   */
  readonly commitsInFlight = SHARD_COMMITS_IN_FLIGHT;

  writeTurns(turns: readonly TurnRecord[]): Promise<(Error | null)[]> {
    return writeTurnGroup(this.#pool, turns, this.#fences);
  }

  async outcome(conversationId: number, turnId: string): Promise<TurnOutcome | null> {
    const r = await this.#pool.query<OutcomeRow>({
      name: 'agentd_outcome',
      text: 'SELECT agent, model, stop_reason, error, usage, final_text FROM turn_outcomes WHERE conversation_id = $1 AND turn_id = $2',
      values: [conversationId, turnId],
    });
    const o = r.rows[0];
    return o === undefined ? null : toOutcome(turnId, o);
  }

  setSummary(id: number, summary: string, upto: number): Promise<void> {
    return this.#fencedById(id, (q) =>
      q.query(
        "UPDATE conversations SET summary = $1, summary_upto = $2, updated_at = $3, summary_search = to_tsvector('simple', $4) WHERE id = $5",
        [summary, upto, now(), indexedWords(summary), id],
      ),
    );
  }

  delete(id: number): Promise<void> {
    // Messages, their search entries (a column of theirs) and outcomes go by ON DELETE CASCADE.
    return this.#fencedById(id, (q) => q.query('DELETE FROM conversations WHERE id = $1', [id]));
  }

  /**
   * Stores a turn its stalled shard was running as ended `stalled`: its user
   * message and an empty assistant message marked so. Skipped if the turn's
   * turn_id is stored already (it committed just before the shard froze).
   */
  async recordStalled(t: StalledTurn): Promise<void> {
    const row = await this.#find(t.agent, t.sender);
    if (row !== null && t.turnId !== null && (await this.outcome(row.id, t.turnId)) !== null) return;
    const record = stalledRecord(t, row);
    await inTransaction(this.#pool, (client) => appendTurn(client, record, this.#fences));
  }

  saveWaitingRun(run: WaitingRunRecord): Promise<void> {
    return saveWaitingRun(this.#pool, this.#fences, run);
  }

  deleteWaitingRun(runId: string, agent: string, sender: string): Promise<void> {
    return deleteWaitingRun(this.#pool, this.#fences, runId, agent, sender);
  }

  waitingRuns(): Promise<WaitingRunRecord[]> {
    return waitingRuns(this.#pool);
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
