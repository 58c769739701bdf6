/** The search index off the commit path: batches behind a watermark, deletes, reused ids, what is never indexed. */
import { beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate, openDatabase, type Db } from '../../src/storage/sqlite/db.ts';
import { ConversationStore } from '../../src/storage/sqlite/store.ts';
import { BATCH_TEXT_BYTES, SearchIndex } from '../../src/storage/sqlite/search-index.ts';
import { SessionSearch } from '../../src/storage/sqlite/search.ts';
import { createWriteLockBuffer, WriteLock } from '../../src/storage/sqlite/write-lock.ts';
import type { Message } from '../../src/models/types.ts';
import { freshStore } from '../helpers/sqlite-store.ts';

let db: Db;
let store: ConversationStore;
let index: SearchIndex;

beforeEach(() => {
  ({ db, store } = freshStore('index'));
  index = new SearchIndex(db);
});

const user = (content: string): Message => ({ role: 'user', content });
const assistant = (content: string): Message => ({ role: 'assistant', content });
const append = (sender: string, messages: Message[]): number => store.appendTurn({ dbId: null, agent: 'a', sender, title: '', stored: 0 }, messages);
const indexed = (): number[] => db.prepare<[], { rowid: number }>('SELECT rowid FROM messages_fts ORDER BY rowid').all().map((r) => r.rowid);
const messageIds = (): number[] => db.prepare<[], { id: number }>('SELECT id FROM messages ORDER BY id').all().map((r) => r.id);
const watermark = (): number => db.prepare<[], { message_id: number }>('SELECT message_id FROM fts_watermark').get()!.message_id;
const matches = (word: string): number =>
  db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM messages_fts WHERE messages_fts MATCH ?').get(`"${word}"`)!.n;

describe('search index', () => {
  it('indexes committed messages in batches, behind the watermark', () => {
    for (let i = 0; i < 5; i++) append(`s${i}`, [user(`fig ${i}`), assistant('ok')]);
    expect(indexed()).toEqual([]);
    expect(index.catchUp(4)).toBe(4);
    expect(indexed()).toEqual(messageIds().slice(0, 4));
    expect(watermark()).toBe(messageIds()[3]);
    index.catchUpAll(4);
    expect(indexed()).toEqual(messageIds());
    expect(index.catchUp(4)).toBe(0);
    expect(matches('fig')).toBe(5);
  });

  it('cuts a batch at BATCH_TEXT_BYTES of text: a big message goes alone, and the rest follows', () => {
    const big = 'kiwi '.repeat(BATCH_TEXT_BYTES / 5 + 1);
    append('big', [user(big), assistant(big), user('lime')]);
    expect(index.catchUp(10)).toBe(1);
    expect(indexed()).toEqual(messageIds().slice(0, 1));
    expect(index.catchUp(10)).toBe(1);
    expect(index.catchUp(10)).toBe(1);
    expect(index.catchUp(10)).toBe(0);
    expect(matches('kiwi')).toBe(2);
    // Small messages still go many to a batch.
    for (let i = 0; i < 5; i++) append(`s${i}`, [user(`fig ${i}`)]);
    expect(index.catchUp(10)).toBe(5);
    index.catchUpAll(1);
    expect(indexed()).toEqual(messageIds());
  });

  it('never indexes tool output or arguments, only tool names', () => {
    append('t', [
      user('look it up'),
      { role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'lookup', arguments: '{"secret":"walrus"}' }] },
      { role: 'tool', content: 'walrus output', tool_call_id: 'c1', name: 'lookup' },
      assistant('done'),
    ]);
    index.catchUpAll(10);
    expect(matches('walrus')).toBe(0);
    expect(matches('lookup')).toBe(1);
    expect(indexed()).toHaveLength(3);
  });

  it('indexes nothing of a conversation deleted before its messages were indexed', () => {
    const id = append('gone', [user('quince'), assistant('quince')]);
    store.delete(id);
    index.catchUpAll(10);
    expect(indexed()).toEqual([]);
    expect(matches('quince')).toBe(0);
  });

  it('indexes a reused id again: deleting the newest messages steps the watermark down', () => {
    append('keep', [user('apple'), assistant('ok')]);
    const newest = append('newest', [user('pear'), assistant('ok')]);
    index.catchUpAll(10);
    const before = messageIds();
    store.delete(newest);
    expect(watermark()).toBe(before[1]);
    append('again', [user('plum'), assistant('ok')]);
    // SQLite hands out the deleted ids again: they must be indexed as the new messages.
    expect(messageIds()).toEqual(before);
    index.catchUpAll(10);
    expect(matches('plum')).toBe(1);
    expect(matches('pear')).toBe(0);
    expect(indexed()).toEqual(before);
  });

  it('keeps the watermark when an older conversation is deleted', () => {
    const old = append('old', [user('one'), assistant('ok')]);
    append('new', [user('two'), assistant('ok')]);
    index.catchUpAll(10);
    const mark = watermark();
    store.delete(old);
    expect(watermark()).toBe(mark);
    append('next', [user('three'), assistant('ok')]);
    index.catchUpAll(10);
    expect(matches('three')).toBe(1);
  });
});

describe('migration 7: the contentless index', () => {
  it('keeps no copy of the text, and a database indexed the old way is indexed again, searchable and deletable', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'agentd-index-v6-')), 'agentd.db');
    const old = openDatabase(path);
    migrate(old, path, 6);
    // Stored and indexed as schema 6 did: the text copied into messages_fts, the watermark at the newest message.
    old.exec(`INSERT INTO conversations (id, agent, sender, created_at, updated_at, message_count) VALUES (1, 'a', 'gone', 't', 't', 2), (2, 'a', 'kept', 't', 't', 2);
      INSERT INTO messages (conversation_id, idx, role, content, created_at) VALUES
        (1, 0, 'user', 'quince tart', 't'), (1, 1, 'assistant', 'ok', 't'), (2, 0, 'user', 'quince jam', 't'), (2, 1, 'assistant', 'sure', 't');
      INSERT INTO messages_fts (rowid, user_text, assistant_text, tool_names, conversation_id, idx)
      SELECT id, CASE role WHEN 'user' THEN content ELSE '' END, CASE role WHEN 'assistant' THEN content ELSE '' END, '', conversation_id, idx FROM messages;
      UPDATE fts_watermark SET message_id = (SELECT max(id) FROM messages)`);
    migrate(old, path);
    const oldStore = new ConversationStore(old, new WriteLock(createWriteLockBuffer(), 1));
    expect(old.prepare<[], { n: number }>("SELECT count(*) AS n FROM messages_fts WHERE messages_fts MATCH 'quince'").get()!.n).toBe(0);
    const again = new SearchIndex(old);
    again.catchUpAll(10);
    const hits = (): string[] =>
      old
        .prepare<[], { content: string }>("SELECT m.content FROM messages_fts f JOIN messages m ON m.id = f.rowid WHERE messages_fts MATCH 'quince' ORDER BY f.rowid")
        .all()
        .map((r) => r.content);
    expect(hits()).toEqual(['quince tart', 'quince jam']);
    // Contentless: the index cannot give the text back.
    expect(old.prepare('SELECT user_text FROM messages_fts').all()).toEqual([{ user_text: null }, { user_text: null }, { user_text: null }, { user_text: null }]);
    oldStore.delete(1);
    expect(hits()).toEqual(['quince jam']);
  });
});

describe('deleting indexed messages', () => {
  /** FTS5's row count and token total, which ranking reads (search-bm25.ts). */
  const totals = (): number[] => {
    const block = db.prepare<[], { block: Buffer }>('SELECT block FROM messages_fts_data WHERE id = 1').get()!.block;
    return [...block]; // small values: one varint byte each
  };

  it('lowers the counts ranking reads, so scores equal those of a database that never held the deleted messages', () => {
    const ids = Array.from({ length: 10 }, (_, i) => append(`s${i}`, [user(`kiwi apple ${i}`), assistant('ok')]));
    const lastBig = append('unindexed', [user('kiwi kiwi kiwi')]); // committed, not yet indexed
    index.catchUp(20);
    for (const id of ids.slice(1)) store.delete(id);
    store.delete(lastBig);
    index.catchUpAll(20);
    expect(totals()).toEqual([2, 3, 1, 0]); // 2 rows; 3 user tokens, 1 assistant token
    db.exec("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')");
    const score = (d: Db): number => new SessionSearch(d).search({ query: 'kiwi apple', limit: 5, contextBefore: 0, contextAfter: 0, agent: null, sender: null })[0]!.score;
    const other = freshStore('index-fresh');
    other.store.appendTurn({ dbId: null, agent: 'a', sender: 's0', title: '', stored: 0 }, [user('kiwi apple 0'), assistant('ok')]);
    expect(score(db)).toBeCloseTo(score(other.db), 12);
  });
});
