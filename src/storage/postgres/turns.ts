/**
 * Group commit on PostgreSQL: a batch of finished turns written in one
 * transaction, resolving only after COMMIT, which with synchronous_commit on
 * means the turns are on disk. The batch goes in one statement, whatever its
 * number of turns (pg-turn-batch.ts). One bad turn does not sink the others:
 * if the batch fails, it is written again with a SAVEPOINT per turn and a
 * statement per turn (here), and only the bad turns are left out.
 */
import type pg from 'pg';
import { now } from '../sqlite/db.ts';
import { fenceFor, type Fence, type FenceSource } from '../../shared/partitions.ts';
import { checkFence } from './fences.ts';
import { inTransaction, type PoolClient } from './pool.ts';
import { indexedWords } from './search-text.ts';
import { holdsOneConversationTwice, writeBatch } from './turn-batch.ts';
import { MESSAGE_SEARCH, messageColumns, noLongerStored, outcomeValues, refuseNul, titleOf } from './turn-rows.ts';
import type { TurnRecord } from '../contract.ts';

/** $1-$11 the message columns, $12 the time, $13 the new message count, $14-$20 the outcome (turn_id NULL when there is none). */
function turnParams(turn: TurnRecord, at: string): unknown[] {
  const o = turn.outcome ?? null;
  return [
    ...messageColumns(turn.messages, turn.conv.stored),
    at,
    turn.conv.stored + turn.messages.length,
    ...(o === null ? [null, null, null, null, null, null, null] : outcomeValues(o)),
  ];
}

/**
 * The turn's statement around its conversation row `c`: messages and outcome
 * go in as part of the same statement. It runs as a named (prepared)
 * statement: planning it anew for every turn cost more than running it (group
 * commits/s 2.5x with names, bench/store-direct.ts).
 */
const turnStatement = (conversation: string): string => `
  WITH c AS (${conversation}),
  m AS (
    INSERT INTO messages (conversation_id, created_at, idx, role, content, agent, tool_calls, tool_call_id, name, is_error, stop_reason, search)
    SELECT c.id, $12, u.idx, u.role, u.content, u.agent, u.tool_calls, u.tool_call_id, u.name, u.is_error, u.stop_reason,
      ${MESSAGE_SEARCH}
    FROM c, unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bool[], $9::text[], $10::text[], $11::text[])
      AS u(idx, role, content, agent, tool_calls, tool_call_id, name, is_error, stop_reason, a, b)
  ),
  o AS (
    INSERT INTO turn_outcomes (conversation_id, turn_id, agent, model, stop_reason, error, usage, final_text, created_at)
    SELECT c.id, $14, $15, $16, $17, $18, $19, $20, $12 FROM c WHERE $14::text IS NOT NULL
  )
  SELECT id FROM c`;

/** A stored conversation: $21 its id. */
const APPEND_TO_STORED = turnStatement('UPDATE conversations SET updated_at = $12, message_count = $13 WHERE id = $21 RETURNING id');

/** A conversation's first turn: $21 agent, $22 sender, $23 title, $24 its words. Another node may have created the row meanwhile. */
const APPEND_TO_NEW = turnStatement(`
  INSERT INTO conversations (agent, sender, title, created_at, updated_at, message_count, title_search)
  VALUES ($21, $22, $23, $12, $12, $13, to_tsvector('simple', $24))
  ON CONFLICT (agent, sender) DO UPDATE SET updated_at = EXCLUDED.updated_at, message_count = EXCLUDED.message_count
  RETURNING id`);

/**
 * Writes one turn, inside a transaction; returns its conversation's row id
 * (creating the row on its first turn). In cluster mode (`fences`) the
 * fence check goes out just before the turn's statement, on the same
 * connection and without waiting for it, so both cost one round trip.
 */
export async function appendTurn(client: PoolClient, turn: TurnRecord, fences: FenceSource | null = null): Promise<number> {
  const { conv, messages } = turn;
  refuseNul(messages);
  const fence: Fence | null = fences === null ? null : fenceFor(fences, conv.agent, conv.sender);
  const params = turnParams(turn, now());
  const check = fence === null ? null : checkFence(client, fence);
  let write: Promise<pg.QueryResult<{ id: number }>>;
  if (conv.dbId !== null) {
    write = client.query<{ id: number }>({ name: 'agentd_append_stored', text: APPEND_TO_STORED, values: [...params, conv.dbId] });
  } else {
    const title = titleOf(turn);
    write = client.query<{ id: number }>({ name: 'agentd_append_new', text: APPEND_TO_NEW, values: [...params, conv.agent, conv.sender, title, indexedWords(title)] });
  }
  // A refused check aborts the transaction, so the write fails too: the check's error is the one that says why.
  const [, r] = await Promise.all([check, write]);
  const row = r.rows[0];
  if (row === undefined) throw noLongerStored(conv);
  return row.id;
}

/** Every turn in one transaction, each behind a savepoint: a failing turn is rolled back alone. */
function writeEach(pool: pg.Pool, turns: readonly TurnRecord[], fences: FenceSource | null): Promise<(number | Error)[]> {
  return inTransaction(pool, async (client) => {
    const out: (number | Error)[] = [];
    for (const turn of turns) {
      await client.query('SAVEPOINT turn');
      try {
        out.push(await appendTurn(client, turn, fences));
        await client.query('RELEASE SAVEPOINT turn');
      } catch (err) {
        await client.query('ROLLBACK TO SAVEPOINT turn');
        out.push(err as Error);
      }
    }
    return out;
  });
}

/**
 * The batch in one statement; if the server refuses it, turn by turn behind
 * savepoints, so that only the bad turns are left out. Throws when nothing
 * could be committed.
 */
async function writeGroup(pool: pg.Pool, turns: readonly TurnRecord[], fences: FenceSource | null): Promise<(number | Error)[]> {
  if (holdsOneConversationTwice(turns)) return writeEach(pool, turns, fences);
  try {
    return await writeBatch(pool, turns, fences);
  } catch (batchError) {
    if (turns.length === 1) throw batchError;
    return writeEach(pool, turns, fences);
  }
}

/**
 * The group commit. Row ids are kept only once COMMIT succeeded; if the
 * batch cannot commit at all, every turn reports why. In cluster mode each
 * turn carries its partition's fence: a turn of a partition this node lost
 * fails alone, with the others of the batch written.
 */
export async function writeTurnGroup(pool: pg.Pool, turns: readonly TurnRecord[], fences: FenceSource | null = null): Promise<(Error | null)[]> {
  let written: (number | Error)[];
  try {
    written = await writeGroup(pool, turns, fences);
  } catch (err) {
    return turns.map(() => err as Error);
  }
  return written.map((w, i) => {
    if (w instanceof Error) return w;
    turns[i]!.conv.dbId = w;
    return null;
  });
}
