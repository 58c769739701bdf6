/**
 * export-page.ts's walk over conversations and messages: paged at any size
 * it yields the same records as one page, each conversation's record once
 * and before its messages; a conversation deleted between pages is skipped
 * whole, its successor starting at its record.
 */
import { describe, expect, it } from 'vitest';
import { exportPage, parseCursor, type ExportConversationRow, type ExportMessageRow, type ExportReads } from '../../src/storage/export-page.ts';
import type { ExportRecord } from '../../src/shared/wire/transfer.ts';

function store(sizes: Record<number, number>): { reads: ExportReads; rows: Map<number, ExportConversationRow> } {
  const rows = new Map<number, ExportConversationRow>();
  for (const [id, n] of Object.entries(sizes)) {
    rows.set(Number(id), { id: Number(id), agent: 'a', sender: `s${id}`, title: `t${id}`, created_at: 'c', updated_at: 'u', summary: null, summary_upto: 0, message_count: n });
  }
  const reads: ExportReads = {
    conversationFrom: async (_f, fromId) => [...rows.values()].filter((r) => Number(r.id) >= fromId).sort((x, y) => Number(x.id) - Number(y.id))[0] ?? null,
    messagesFrom: async (id, fromIdx, limit) => {
      const n = rows.get(id)?.message_count ?? 0;
      const out: ExportMessageRow[] = [];
      for (let i = fromIdx; i < n && out.length < limit; i++) {
        out.push({ idx: i, created_at: 'c', role: 'user', content: `m${id}.${i}`, agent: null, tool_calls: null, tool_call_id: null, name: null, is_error: 0, stop_reason: null });
      }
      return out;
    },
  };
  return { reads, rows };
}

async function all(reads: ExportReads, limit: number, between?: (page: number) => void): Promise<ExportRecord[]> {
  const out: ExportRecord[] = [];
  let cursor = parseCursor(null)!;
  for (let page = 0; ; page++) {
    const p = await exportPage(reads, { agent: null, sender: null }, cursor, limit);
    expect(p.records.length).toBeLessThanOrEqual(limit);
    out.push(...p.records);
    if (p.next === null) return out;
    between?.(page);
    cursor = parseCursor(p.next)!;
  }
}

const label = (r: ExportRecord): string => (r.type === 'conversation' ? `C${r.sender}` : `${r.sender}:${r.idx}`);

describe('export pages', () => {
  it('gives the same records at every page size: each record once, before its messages', async () => {
    const { reads } = store({ 1: 3, 2: 0, 4: 5, 9: 1 });
    const whole = (await all(reads, 1000)).map(label);
    expect(whole).toEqual(['Cs1', 's1:0', 's1:1', 's1:2', 'Cs2', 'Cs4', 's4:0', 's4:1', 's4:2', 's4:3', 's4:4', 'Cs9', 's9:0']);
    for (let limit = 1; limit <= 7; limit++) expect((await all(reads, limit)).map(label)).toEqual(whole);
  });

  it('skips a conversation deleted between pages; the next starts at its record', async () => {
    const { reads, rows } = store({ 1: 4, 2: 2 });
    const got = (await all(reads, 2, (page) => page === 0 && rows.delete(1))).map(label);
    expect(got).toEqual(['Cs1', 's1:0', 'Cs2', 's2:0', 's2:1']);
  });

  it('refuses a cursor it did not make', () => {
    expect(parseCursor('12')).toEqual({ id: 12, idx: null });
    expect(parseCursor('12:3')).toEqual({ id: 12, idx: 3 });
    for (const bad of ['', 'x', '1:2:3', '-1', '1:']) expect(parseCursor(bad)).toBeNull();
  });
});
