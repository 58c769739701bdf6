/**
 * One page of `export_conversations`, whatever the database: conversations
 * in row-id order, each as its record and then its messages in order, at
 * most `limit` records a page. The cursor `"<conversation id>:<idx>"` says
 * where the next page goes on: at that conversation's message `idx` (0: at
 * its record). Both stores supply the two reads; the walk is the same.
 */
import type { ExportConversationRecord, ExportPage, ExportRecord, TransferMessage } from '../shared/wire/transfer.ts';
import { toMessage, type MessageRow } from './stored-rows.ts';
import type { ExportCursor, ExportFilter } from '../threads/storage/messages.ts';

export type { ExportCursor, ExportFilter };

/** A conversation row as the export reads it. */
export type ExportConversationRow = Omit<ExportConversationRecord, 'type'> & { id: number | string };

/** A message row as the export reads it. */
export type ExportMessageRow = MessageRow & { idx: number; created_at: string };

export interface ExportReads {
  /** The first conversation matching `filter` whose row id is at least `fromId`, or null. */
  conversationFrom(filter: ExportFilter, fromId: number): Promise<ExportConversationRow | null>;
  /** Up to `limit` messages of conversation `id` from position `fromIdx` on, in order. */
  messagesFrom(id: number, fromIdx: number, limit: number): Promise<ExportMessageRow[]>;
}

export const EXPORT_PAGE = { defaultLimit: 500, maxLimit: 1000 } as const;

/** `"12"` → at conversation 12's record; `"12:40"` → at its message 40; null for a cursor this module did not make (the caller's 400). */
export function parseCursor(after: string | null): ExportCursor | null {
  if (after === null) return { id: 0, idx: null };
  const m = /^(\d{1,15})(?::(\d{1,9}))?$/.exec(after);
  return m === null ? null : { id: Number(m[1]), idx: m[2] === undefined ? null : Number(m[2]) };
}

function messageRecord(c: ExportConversationRow, row: ExportMessageRow): ExportRecord {
  return { type: 'message', agent: c.agent, sender: c.sender, idx: row.idx, created_at: row.created_at, message: toMessage(row) as TransferMessage };
}

export async function exportPage(reads: ExportReads, filter: ExportFilter, cursor: ExportCursor, limit: number): Promise<ExportPage> {
  const records: ExportRecord[] = [];
  let { id, idx } = cursor;
  for (;;) {
    const c = await reads.conversationFrom(filter, id);
    if (c === null) return { records, next: null };
    // The cursor's conversation may be gone (deleted meanwhile): the next one starts at its record.
    if (Number(c.id) !== id) idx = null;
    id = Number(c.id);
    if (idx === null) {
      if (records.length === limit) return { records, next: `${id}` };
      const { id: _rowId, ...row } = c;
      records.push({ type: 'conversation', ...row });
      idx = 0;
    }
    const room = limit - records.length;
    const rows = room === 0 ? [] : await reads.messagesFrom(id, idx, room);
    for (const row of rows) records.push(messageRecord(c, row));
    if (records.length === limit) return { records, next: `${id}:${rows.at(-1)?.idx === undefined ? idx : rows.at(-1)!.idx + 1}` };
    id += 1;
    idx = null;
  }
}
