/**
 * A shard's conversations in PostgreSQL (the storage contract's
 * ConversationStorage). A group commit writes every turn of the batch in one
 * transaction, each behind a savepoint so one bad turn leaves the others
 * standing, each turn's messages in one multi-row INSERT; it resolves after
 * COMMIT, which with synchronous_commit on means the turns are on disk.
 */
import type pg from 'pg';
import { now } from '../shared/db.ts';
import { StopReason, zeroUsage, type Usage } from '../shared/protocol.ts';
import type { StalledTurn } from '../shared/threads.ts';
import type { Message } from './models/types.ts';
import { TITLE_CHARS } from './conversation.ts';
import { inTransaction, type PoolClient } from './pg-pool.ts';
import { indexedWords } from './pg-search-text.ts';
import type { ConversationRef, ConversationStorage, StoredConversation, TurnOutcome, TurnRecord } from './storage-contract.ts';

interface MessageRow {
  role: Message['role'];
  content: string;
  agent: string | null;
  tool_calls: string | null;
  tool_call_id: string | null;
  name: string | null;
  is_error: boolean;
  stop_reason: string | null;
}

interface ConversationRow {
  id: number;
  title: string;
  created_at: string;
  summary: string | null;
  summary_upto: number;
  message_count: number;
}

const MESSAGE_COLUMNS = 'role, content, agent, tool_calls, tool_call_id, name, is_error, stop_reason';

function toMessage(r: MessageRow): Message {
  const m: Message = { role: r.role, content: r.content };
  if (r.agent !== null) m.agent = r.agent;
  if (r.tool_calls !== null) m.tool_calls = JSON.parse(r.tool_calls) as Message['tool_calls'];
  if (r.tool_call_id !== null) m.tool_call_id = r.tool_call_id;
  if (r.name !== null) m.name = r.name;
  if (r.is_error) m.is_error = true;
  if (r.stop_reason !== null) m.stop_reason = r.stop_reason;
  return m;
}

/** What search may see of a message, by weight: user text (A); assistant text and tool names (B). Never tool output or arguments. */
function searchable(m: Message): [string, string] {
  if (m.role === 'user') return [indexedWords(m.content), ''];
  if (m.role === 'assistant') return ['', indexedWords(`${m.content} ${m.tool_calls?.map((c) => c.name).join(' ') ?? ''}`)];
  return ['', ''];
}

/** PostgreSQL text cannot hold U+0000: say so plainly rather than as a driver error. */
function refuseNul(messages: readonly Message[]): void {
  if (messages.some((m) => m.content.includes('\u0000'))) {
    throw new Error('the PostgreSQL store cannot hold the character U+0000 in a message; this turn was not stored');
  }
}

/** One column array per field: the whole turn goes in with one INSERT … SELECT FROM unnest. */
function messageColumns(messages: readonly Message[], firstIdx: number): unknown[] {
  const weighted = messages.map(searchable);
  return [
    messages.map((_, i) => firstIdx + i),
    messages.map((m) => m.role),
    messages.map((m) => m.content),
    messages.map((m) => m.agent ?? null),
    messages.map((m) => (m.tool_calls === undefined ? null : JSON.stringify(m.tool_calls))),
    messages.map((m) => m.tool_call_id ?? null),
    messages.map((m) => m.name ?? null),
    messages.map((m) => m.is_error === true),
    messages.map((m) => m.stop_reason ?? null),
    weighted.map((w) => w[0]),
    weighted.map((w) => w[1]),
  ];
}

const INSERT_MESSAGES = `
  WITH inserted AS (
    INSERT INTO messages (conversation_id, created_at, idx, ${MESSAGE_COLUMNS}, search)
    SELECT $1, $2, m.idx, m.role, m.content, m.agent, m.tool_calls, m.tool_call_id, m.name, m.is_error, m.stop_reason,
      CASE WHEN m.a = '' AND m.b = '' THEN NULL
           ELSE setweight(to_tsvector('simple', m.a), 'A') || setweight(to_tsvector('simple', m.b), 'B') END
    FROM unnest($4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::bool[], $12::text[], $13::text[], $14::text[])
      AS m(idx, role, content, agent, tool_calls, tool_call_id, name, is_error, stop_reason, a, b)
  )
  UPDATE conversations SET updated_at = $2, message_count = $3 WHERE id = $1`;

const INSERT_OUTCOME = `INSERT INTO turn_outcomes (conversation_id, turn_id, agent, model, stop_reason, error, usage, final_text, created_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;

/** Writes one turn on a connection inside a transaction; returns the conversation's row id (creating the row on its first turn). */
async function appendTurn(client: PoolClient, turn: TurnRecord): Promise<number> {
  const { conv, messages, outcome } = turn;
  refuseNul(messages);
  const at = now();
  const id = conv.dbId ?? (await conversationRow(client, conv, messages, at));
  await client.query(INSERT_MESSAGES, [id, at, conv.stored + messages.length, ...messageColumns(messages, conv.stored)]);
  if (outcome) {
    const o = outcome;
    await client.query(INSERT_OUTCOME, [id, o.turnId, o.agent, o.model, o.stopReason, o.error, JSON.stringify(o.usage), o.finalText, at]);
  }
  return id;
}

/** The pair's row, created with the turn's title if it is new (another node may have created it meanwhile). */
async function conversationRow(client: PoolClient, conv: ConversationRef, messages: readonly Message[], at: string): Promise<number> {
  const title = conv.title || (messages.find((m) => m.role === 'user')?.content.slice(0, TITLE_CHARS) ?? '');
  const r = await client.query<{ id: number }>(
    `INSERT INTO conversations (agent, sender, title, created_at, updated_at, title_search) VALUES ($1, $2, $3, $4, $4, to_tsvector('simple', $5))
     ON CONFLICT (agent, sender) DO UPDATE SET updated_at = EXCLUDED.updated_at RETURNING id`,
    [conv.agent, conv.sender, title, at, indexedWords(title)],
  );
  return r.rows[0]!.id;
}

export class PgConversationStorage implements ConversationStorage {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
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

  async load(agent: string, sender: string): Promise<StoredConversation | null> {
    const c = await this.#find(agent, sender);
    if (c === null) return null;
    return {
      id: c.id,
      title: c.title,
      createdAt: c.created_at,
      summary: c.summary,
      summaryUpto: c.summary_upto,
      messageCount: c.message_count,
      recent: await this.#messagesFrom(c.id, c.summary_upto),
    };
  }

  async exists(agent: string, sender: string): Promise<boolean> {
    return (await this.#find(agent, sender)) !== null;
  }

  allMessages(id: number): Promise<Message[]> {
    return this.#messagesFrom(id, 0);
  }

  /**
   * One transaction, a savepoint per turn: a turn that fails is rolled back
   * to its savepoint and reported, the rest commit together. Row ids are kept
   * only once COMMIT succeeded; if it fails, every turn reports that error.
   */
  async writeTurns(turns: readonly TurnRecord[]): Promise<(Error | null)[]> {
    const ids: (number | null)[] = [];
    let results: (Error | null)[];
    try {
      results = await inTransaction(this.#pool, async (client) => {
        const out: (Error | null)[] = [];
        for (const turn of turns) {
          await client.query('SAVEPOINT turn');
          try {
            ids.push(await appendTurn(client, turn));
            await client.query('RELEASE SAVEPOINT turn');
            out.push(null);
          } catch (err) {
            await client.query('ROLLBACK TO SAVEPOINT turn');
            ids.push(null);
            out.push(err as Error);
          }
        }
        return out;
      });
    } catch (err) {
      return turns.map(() => err as Error);
    }
    turns.forEach(({ conv }, i) => {
      if (ids[i] !== null) conv.dbId = ids[i]!;
    });
    return results;
  }

  async outcome(conversationId: number, turnId: string): Promise<TurnOutcome | null> {
    const r = await this.#pool.query<{ agent: string; model: string; stop_reason: string; error: string; usage: string; final_text: string }>(
      'SELECT agent, model, stop_reason, error, usage, final_text FROM turn_outcomes WHERE conversation_id = $1 AND turn_id = $2',
      [conversationId, turnId],
    );
    const o = r.rows[0];
    if (o === undefined) return null;
    return { turnId, agent: o.agent, model: o.model, stopReason: o.stop_reason as StopReason, error: o.error, usage: JSON.parse(o.usage) as Usage, finalText: o.final_text };
  }

  async setSummary(id: number, summary: string, upto: number): Promise<void> {
    await this.#pool.query(
      "UPDATE conversations SET summary = $1, summary_upto = $2, updated_at = $3, summary_search = to_tsvector('simple', $4) WHERE id = $5",
      [summary, upto, now(), indexedWords(summary), id],
    );
  }

  async delete(id: number): Promise<void> {
    // Messages, their search entries (a column of theirs) and outcomes go by ON DELETE CASCADE.
    await this.#pool.query('DELETE FROM conversations WHERE id = $1', [id]);
  }

  /**
   * Stores a turn its stalled shard was running as ended `stalled`: its user
   * message and an empty assistant message marked so. Skipped if the turn's
   * turn_id is stored already (it committed just before the shard froze).
   */
  async recordStalled(t: StalledTurn): Promise<void> {
    const row = await this.#find(t.agent, t.sender);
    if (row !== null && t.turnId !== null && (await this.outcome(row.id, t.turnId)) !== null) return;
    const conv: ConversationRef = { dbId: row?.id ?? null, agent: t.agent, sender: t.sender, title: row?.title ?? '', stored: row?.message_count ?? 0 };
    const ended: Message = { role: 'assistant', content: '', stop_reason: StopReason.Stalled };
    if (t.guest !== null) ended.agent = t.guest;
    const outcome: TurnOutcome | null =
      t.turnId === null
        ? null
        : { turnId: t.turnId, agent: t.guest ?? t.agent, model: '', stopReason: StopReason.Stalled, error: t.error, usage: zeroUsage(), finalText: '' };
    await inTransaction(this.#pool, (client) => appendTurn(client, { conv, messages: [{ role: 'user', content: t.content }, ended], outcome }));
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
