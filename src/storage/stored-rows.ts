/**
 * What every store makes of its rows, and of a stalled turn, whatever the
 * database: a message row becomes a Message, an outcome row a TurnOutcome,
 * and a turn a stalled shard was running becomes the record to write.
 * SQLite (sqlite/store.ts) and PostgreSQL (postgres/conversations.ts) differ only in SQL.
 */
import { StopReason, zeroUsage, type Usage } from '../shared/protocol.ts';
import type { StalledTurn } from '../shared/threads/shard-messages.ts';
import type { Message } from '../models/types.ts';
import type { StoredConversation, TurnOutcome, TurnRecord } from './contract.ts';

export interface MessageRow {
  role: Message['role'];
  content: string;
  agent: string | null;
  tool_calls: string | null;
  tool_call_id: string | null;
  name: string | null;
  /** SQLite has no booleans: 0 or 1 there. */
  is_error: number | boolean;
  stop_reason: string | null;
}

/** A conversation's row, as both stores select it. */
export interface ConversationRow {
  id: number;
  title: string;
  created_at: string;
  summary: string | null;
  summary_upto: number;
  message_count: number;
}

/** A loaded conversation: its row and the messages the model sees after its summary. */
export function toStoredConversation(c: ConversationRow, recent: Message[]): StoredConversation {
  return { id: c.id, title: c.title, createdAt: c.created_at, summary: c.summary, summaryUpto: c.summary_upto, messageCount: c.message_count, recent };
}

export function toMessage(r: MessageRow): Message {
  const m: Message = { role: r.role, content: r.content };
  if (r.agent !== null) m.agent = r.agent;
  if (r.tool_calls !== null) m.tool_calls = JSON.parse(r.tool_calls) as Message['tool_calls'];
  if (r.tool_call_id !== null) m.tool_call_id = r.tool_call_id;
  if (r.name !== null) m.name = r.name;
  if (r.is_error) m.is_error = true;
  if (r.stop_reason !== null) m.stop_reason = r.stop_reason;
  return m;
}

export interface OutcomeRow {
  agent: string;
  model: string;
  stop_reason: string;
  error: string;
  usage: string;
  final_text: string;
}

export function toOutcome(turnId: string, r: OutcomeRow): TurnOutcome {
  return { turnId, agent: r.agent, model: r.model, stopReason: r.stop_reason as StopReason, error: r.error, usage: JSON.parse(r.usage) as Usage, finalText: r.final_text };
}

/** The conversation row a stalled turn is written to, if the pair has one. */
export interface StalledTarget {
  id: number;
  title: string;
  message_count: number;
}

/** A stalled turn as stored: its user message and an empty assistant message marked `stalled` (and its outcome, when named). */
export function stalledRecord(t: StalledTurn, row: StalledTarget | null): TurnRecord {
  const conv = { dbId: row?.id ?? null, agent: t.agent, sender: t.sender, title: row?.title ?? '', stored: row?.message_count ?? 0 };
  const ended: Message = { role: 'assistant', content: '', stop_reason: StopReason.Stalled };
  if (t.guest !== null) ended.agent = t.guest;
  const outcome: TurnOutcome | null =
    t.turnId === null
      ? null
      : { turnId: t.turnId, agent: t.guest ?? t.agent, model: '', stopReason: StopReason.Stalled, error: t.error, usage: zeroUsage(), finalText: '' };
  return { conv, messages: [{ role: 'user', content: t.content }, ended], outcome };
}
