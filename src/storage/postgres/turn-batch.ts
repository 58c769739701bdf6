/**
 * A group commit's turns written by one statement, whatever their number:
 * the conversation rows (stored ones updated, new ones inserted), every
 * message and every outcome go in from unnest'ed arrays, each joined to its
 * turn's conversation row by the turn's place in the batch. The per-turn
 * statement (pg-turns.ts) cost ~0.25 ms of server time per turn; this one
 * spends that once per batch.
 *
 * Two turns of one conversation are not in one batch from a shard: a
 * conversation runs one job at a time (job-runner.ts pumps its FIFO), and a
 * turn's job ends only once its write resolved, so the next turn's write
 * comes after it. The statement could not write two (an UPDATE joins each
 * row once), so such a batch is left to the turn-by-turn path (holdsOneConversationTwice).
 */
import type pg from 'pg';
import { now } from '../sqlite/db.ts';
import { fenceFor, type Fence, type FenceSource } from '../../shared/partitions.ts';
import { MESSAGE_SEARCH, messageColumns, noLongerStored, outcomeValues, refuseNul, titleOf } from './turn-rows.ts';
import { indexedWords } from './search-text.ts';
import type { TurnRecord } from '../contract.ts';

/**
 * $1 the time; $2-$8 one row per turn (n, its place in the batch; its row id
 * or NULL when new; pair, title and title words when new; its new message
 * count); $9-$20 one row per message (n, then messageColumns); $21-$28 one
 * row per outcome (n, then outcomeValues). Rows are inserted in batch order
 * (ORDER BY), so row ids grow as they would turn by turn: search takes the
 * newest matches by message id.
 */
const WRITE_BATCH = `
  WITH t AS (
    SELECT * FROM unnest($2::int[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[])
      AS t(n, id, agent, sender, title, words, message_count)
  ),
  stored AS (
    UPDATE conversations c SET updated_at = $1::text, message_count = t.message_count
    FROM t WHERE c.id = t.id
    RETURNING t.n, c.id
  ),
  created AS (
    INSERT INTO conversations (agent, sender, title, created_at, updated_at, message_count, title_search)
    SELECT agent, sender, title, $1::text, $1::text, message_count, to_tsvector('simple', words) FROM t WHERE id IS NULL ORDER BY n
    ON CONFLICT (agent, sender) DO UPDATE SET updated_at = EXCLUDED.updated_at, message_count = EXCLUDED.message_count
    RETURNING id, agent, sender
  ),
  c AS (
    SELECT n, id FROM stored
    UNION ALL
    SELECT t.n, created.id FROM created JOIN t ON t.id IS NULL AND t.agent = created.agent AND t.sender = created.sender
  ),
  m AS (
    INSERT INTO messages (conversation_id, created_at, idx, role, content, agent, tool_calls, tool_call_id, name, is_error, stop_reason, search)
    SELECT c.id, $1::text, u.idx, u.role, u.content, u.agent, u.tool_calls, u.tool_call_id, u.name, u.is_error, u.stop_reason, ${MESSAGE_SEARCH}
    FROM unnest($9::int[], $10::int[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::bool[], $18::text[], $19::text[], $20::text[])
      WITH ORDINALITY AS u(n, idx, role, content, agent, tool_calls, tool_call_id, name, is_error, stop_reason, a, b, ord)
    JOIN c ON c.n = u.n
    ORDER BY u.ord
  ),
  o AS (
    INSERT INTO turn_outcomes (conversation_id, turn_id, agent, model, stop_reason, error, usage, final_text, created_at)
    SELECT c.id, o.turn_id, o.agent, o.model, o.stop_reason, o.error, o.usage, o.final_text, $1::text
    FROM unnest($21::int[], $22::text[], $23::text[], $24::text[], $25::text[], $26::text[], $27::text[], $28::text[])
      AS o(n, turn_id, agent, model, stop_reason, error, usage, final_text)
    JOIN c ON c.n = o.n
  )
  SELECT n, id FROM c`;

/** Every fence of the batch in one statement: one refused token aborts the transaction. */
const CHECK_FENCES = 'SELECT agentd_check_fence(f.partition, f.token) FROM unnest($1::int[], $2::bigint[]) AS f(partition, token)';

/** True when two turns address one conversation: the batch statement would write only one of them. */
export function holdsOneConversationTwice(turns: readonly TurnRecord[]): boolean {
  const pairs = new Set(turns.map((t) => `${t.conv.agent}\u0000${t.conv.sender}`));
  return pairs.size < turns.length;
}

/** Adds one row: each value to its column. */
function pushRow(columns: unknown[][], values: readonly unknown[]): void {
  values.forEach((v, i) => columns[i]!.push(v));
}

/** Adds rows given column by column: each array's values to its column. */
function pushColumns(columns: unknown[][], arrays: readonly (readonly unknown[])[]): void {
  arrays.forEach((values, i) => {
    for (const v of values) columns[i]!.push(v);
  });
}

/** A turn's row of $2-$8: a stored conversation is found by its id, a new one needs its pair and title. */
function conversationRow(n: number, turn: TurnRecord): unknown[] {
  const { conv, messages } = turn;
  const count = conv.stored + messages.length;
  if (conv.dbId !== null) return [n, conv.dbId, null, null, null, null, count];
  const title = titleOf(turn);
  return [n, null, conv.agent, conv.sender, title, indexedWords(title), count];
}

/** WRITE_BATCH's parameters for the turns at places `sent`. */
function batchValues(turns: readonly TurnRecord[], sent: readonly number[], at: string): unknown[] {
  const conversations: unknown[][] = Array.from({ length: 7 }, () => []);
  const messages: unknown[][] = Array.from({ length: 12 }, () => []);
  const outcomes: unknown[][] = Array.from({ length: 8 }, () => []);
  for (const n of sent) {
    const turn = turns[n]!;
    pushRow(conversations, conversationRow(n, turn));
    pushColumns(messages, [turn.messages.map(() => n), ...messageColumns(turn.messages, turn.conv.stored)]);
    if (turn.outcome) pushRow(outcomes, [n, ...outcomeValues(turn.outcome)]);
  }
  return [at, ...conversations, ...messages, ...outcomes];
}

/** The batch's distinct fences as CHECK_FENCES' two arrays. */
function fenceValues(fences: readonly Fence[]): unknown[] {
  const distinct = [...new Map(fences.map((f) => [`${f.partition}:${f.token}`, f])).values()];
  return [distinct.map((f) => f.partition), distinct.map((f) => f.token)];
}

type BatchRow = { n: number; id: number };

const WRITE_BATCH_QUERY = (values: unknown[]): pg.QueryConfig => ({ name: 'agentd_write_batch', text: WRITE_BATCH, values });

/**
 * The batch alone, as a transaction of its own: the server commits a lone
 * statement when it ends, and answers (ReadyForQuery, where the query
 * resolves) only after that commit, so a resolved query is a durable batch.
 * One message and one answer: under load each extra statement of BEGIN and
 * COMMIT was another wait for the server and for the shard's event loop.
 */
async function alone(pool: pg.Pool, values: unknown[]): Promise<BatchRow[]> {
  return (await pool.query<BatchRow>(WRITE_BATCH_QUERY(values))).rows;
}

/**
 * Cluster mode: BEGIN, the fence check, the batch and COMMIT in one flight
 * (the pool's connections pipeline). Throws when the transaction did not
 * commit: a failed statement makes the server answer COMMIT with ROLLBACK,
 * and the first failure is the one that says why (a fence check's, before
 * the batch's "transaction is aborted").
 */
async function fenced(pool: pg.Pool, fenceCheck: unknown[], values: unknown[]): Promise<BatchRow[]> {
  const client = await pool.connect();
  let healthy = false;
  try {
    const settled = await Promise.allSettled([
      client.query('BEGIN'),
      client.query({ name: 'agentd_check_fences', text: CHECK_FENCES, values: fenceCheck }),
      client.query<BatchRow>(WRITE_BATCH_QUERY(values)),
      client.query('COMMIT'),
    ]);
    const commit = settled.pop()!;
    if (commit.status === 'rejected') throw commit.reason;
    healthy = true;
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed !== undefined || commit.value.command !== 'COMMIT') throw failed?.reason ?? new Error('the transaction was rolled back by the server');
    return (settled.pop() as PromiseFulfilledResult<pg.QueryResult<BatchRow>>).value.rows;
  } finally {
    client.release(!healthy);
  }
}

/**
 * Writes the turns in one transaction: one statement (in cluster mode
 * the fence check before it, between BEGIN and COMMIT); per turn, its conversation's row id or why it was not stored. A turn
 * refused before anything is sent (U+0000, a partition this node does not
 * serve) fails alone, as does a turn whose conversation was deleted
 * meanwhile; any other failure throws, with nothing of the batch stored.
 */
export async function writeBatch(pool: pg.Pool, turns: readonly TurnRecord[], fences: FenceSource | null): Promise<(number | Error)[]> {
  const out: (number | Error)[] = new Array<number | Error>(turns.length);
  const sent: number[] = [];
  const held: Fence[] = [];
  turns.forEach((turn, n) => {
    try {
      refuseNul(turn.messages);
      if (fences !== null) held.push(fenceFor(fences, turn.conv.agent, turn.conv.sender));
      sent.push(n);
    } catch (err) {
      out[n] = err as Error;
    }
  });
  if (sent.length === 0) return out;
  const values = batchValues(turns, sent, now());
  const rows = fences === null ? await alone(pool, values) : await fenced(pool, fenceValues(held), values);
  const ids = new Map(rows.map((r) => [r.n, r.id]));
  for (const n of sent) out[n] = ids.get(n) ?? noLongerStored(turns[n]!.conv);
  return out;
}
