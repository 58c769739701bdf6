/**
 * How a finished turn becomes PostgreSQL rows: the refusal of text the server
 * cannot hold, a new conversation's title, and the message and outcome
 * columns as statement parameters. Shared by the per-turn statement
 * (pg-turns.ts) and the batch statement (pg-turn-batch.ts), so both store
 * exactly the same rows.
 */
import type { Message } from '../../models/types.ts';
import { TITLE_CHARS } from '../../shard/conversation.ts';
import { indexedWords } from './search-text.ts';
import type { ConversationRef, TurnOutcome, TurnRecord } from '../contract.ts';

/**
 * A message row's `search` from its unnest'ed columns `a` (weight A) and `b`
 * (weight B) under the alias `u`: NULL when it has nothing searchable.
 */
export const MESSAGE_SEARCH = `CASE WHEN u.a = '' AND u.b = '' THEN NULL
  ELSE setweight(to_tsvector('simple', u.a), 'A') || setweight(to_tsvector('simple', u.b), 'B') END`;

/** What search may see of a message, by weight: user text (A); assistant text and tool names (B). Never tool output or arguments. */
function searchable(m: Message): [string, string] {
  if (m.role === 'user') return [indexedWords(m.content), ''];
  if (m.role === 'assistant') return ['', indexedWords(`${m.content} ${m.tool_calls?.map((c) => c.name).join(' ') ?? ''}`)];
  return ['', ''];
}

/** PostgreSQL text cannot hold U+0000: say so plainly rather than as a driver error. */
export function refuseNul(messages: readonly Message[]): void {
  if (messages.some((m) => m.content.includes('\u0000'))) {
    throw new Error('the PostgreSQL store cannot hold the character U+0000 in a message; this turn was not stored');
  }
}

/** A new conversation's title: the one it was given, else the start of its first user message. */
export function titleOf(turn: TurnRecord): string {
  return turn.conv.title || (turn.messages.find((m) => m.role === 'user')?.content.slice(0, TITLE_CHARS) ?? '');
}

/** The 11 message columns, one array each (idx from `firstIdx` on), in the order both statements unnest them. */
export function messageColumns(messages: readonly Message[], firstIdx: number): unknown[][] {
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

/** An outcome's 7 values in the order of turn_outcomes' columns after conversation_id. */
export function outcomeValues(o: TurnOutcome): unknown[] {
  return [o.turnId, o.agent, o.model, o.stopReason, o.error, JSON.stringify(o.usage), o.finalText];
}

/** Why a turn of a stored conversation was not written: its row is gone. */
export function noLongerStored(conv: ConversationRef): Error {
  return new Error(`conversation ${conv.agent}/${conv.sender} is no longer stored (it was deleted)`);
}
