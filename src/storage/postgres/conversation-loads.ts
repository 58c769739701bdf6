/**
 * Loading conversations from PostgreSQL, the pairs asked together in one
 * query. A shard asks for every pair of a batch from main that it does not
 * hold in one synchronous pass (turn-scheduler.ts), and after a restart, or
 * under many new pairs, that is most of them: a query each was a round trip
 * each, and the turns of a burst of new pairs waited behind one another's
 * loads on the pool's few connections. The loads asked before the shard's
 * next microtask go as one statement; each pair's rows come back tagged with
 * its place in the batch.
 */
import type pg from 'pg';
import { toMessage, toStoredConversation, type ConversationRow, type MessageRow } from '../stored-rows.ts';
import type { StoredConversation } from '../contract.ts';

/** A stored message's columns, as every read of messages selects them. */
export const MESSAGE_COLUMNS = 'role, content, agent, tool_calls, tool_call_id, name, is_error, stop_reason';

/** Pairs per statement: a burst larger than this goes as several, so no one result holds every history at once. */
export const LOAD_BATCH_PAIRS = 64;

/**
 * Each pair's row and its messages since the last compaction, one row per
 * message (the conversation's columns repeated), or one with no message; no
 * row for a pair that is not stored. `n` is the pair's place in the arrays.
 */
const LOAD_PAIRS = `SELECT p.n::int AS n, c.id, c.title, c.created_at, c.summary, c.summary_upto, c.message_count, ${MESSAGE_COLUMNS.split(', ').map((col) => `m.${col}`).join(', ')}
  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS p(agent, sender, n)
  JOIN conversations c ON c.agent = p.agent AND c.sender = p.sender
  LEFT JOIN messages m ON m.conversation_id = c.id AND m.idx >= c.summary_upto
  ORDER BY p.n, m.idx`;

type LoadRow = ConversationRow & { n: number } & { [K in keyof MessageRow]: MessageRow[K] | null };

interface PendingLoad {
  agent: string;
  sender: string;
  resolve(conv: StoredConversation | null): void;
  reject(err: unknown): void;
}

export class ConversationLoads {
  readonly #pool: pg.Pool;
  #pending: PendingLoad[] = [];

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  /** The stored conversation of the pair, or null when it is not stored. */
  load(agent: string, sender: string): Promise<StoredConversation | null> {
    return new Promise((resolve, reject) => {
      if (this.#pending.push({ agent, sender, resolve, reject }) === 1) queueMicrotask(this.#flush);
    });
  }

  readonly #flush = (): void => {
    const pending = this.#pending;
    this.#pending = [];
    for (let at = 0; at < pending.length; at += LOAD_BATCH_PAIRS) void this.#run(pending.slice(at, at + LOAD_BATCH_PAIRS));
  };

  async #run(batch: readonly PendingLoad[]): Promise<void> {
    let rows: LoadRow[];
    try {
      const values = [batch.map((p) => p.agent), batch.map((p) => p.sender)];
      rows = (await this.#pool.query<LoadRow>({ name: 'agentd_load_pairs', text: LOAD_PAIRS, values })).rows;
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    const found = new Map<number, LoadRow[]>();
    for (const row of rows) {
      const own = found.get(row.n);
      if (own === undefined) found.set(row.n, [row]);
      else own.push(row);
    }
    batch.forEach((p, i) => p.resolve(stored(found.get(i + 1))));
  }
}

/** A pair's rows as its stored conversation (null: no row, the pair is not stored). */
function stored(rows: LoadRow[] | undefined): StoredConversation | null {
  const c = rows?.[0];
  if (c === undefined) return null;
  return toStoredConversation(c, c.role === null ? [] : rows!.map((row) => toMessage(row as MessageRow)));
}
