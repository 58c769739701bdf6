/**
 * SQLite behind the storage contract: group commit under the shards' write
 * lock. While another shard holds the lock, a batch does not block the event
 * loop: it tries again on later event-loop turns, and batches that come
 * meanwhile join it; once the lock is free they commit.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate, openDatabase } from '../../src/shared/db.ts';
import { createWriteLockBuffer, ownerToken, WriteLock } from '../../src/shared/write-lock.ts';
import { SqliteConversationStorage } from '../../src/worker/store.ts';
import { SearchIndex } from '../../src/worker/search-index.ts';
import type { ConversationRef } from '../../src/worker/storage-contract.ts';

let dir = '';
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function setup() {
  dir = mkdtempSync(join(tmpdir(), 'agentd-sqlite-storage-'));
  const path = join(dir, 'agentd.db');
  const db = openDatabase(path);
  migrate(db, path);
  const buffer = createWriteLockBuffer();
  return { db, storage: new SqliteConversationStorage(db, new WriteLock(buffer, ownerToken(0))), otherShard: new WriteLock(buffer, ownerToken(1)) };
}

const conv = (sender: string): ConversationRef => ({ dbId: null, agent: 'a', sender, title: '', stored: 0 });
const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('SqliteConversationStorage', () => {
  it('a batch waits for a busy write lock without blocking, joined by later batches, and commits once the lock is free', async () => {
    const { storage, otherShard } = setup();
    expect(otherShard.tryAcquire()).toBe(true);
    const settled: string[] = [];
    const x = conv('x');
    const y = conv('y');
    const first = storage.writeTurns([{ conv: x, messages: [{ role: 'user', content: 'one' }] }]).then((r) => (settled.push('first'), r));
    const second = storage.writeTurns([{ conv: y, messages: [{ role: 'user', content: 'two' }] }]).then((r) => (settled.push('second'), r));
    await nextTurn();
    await nextTurn();
    // This event loop still runs (we are here), and nothing was written.
    expect(settled).toEqual([]);
    expect(await storage.exists('a', 'x')).toBe(false);
    otherShard.release();
    expect(await Promise.all([first, second])).toEqual([[null], [null]]);
    expect(settled).toEqual(['first', 'second']);
    expect([x.dbId, y.dbId].every((id) => typeof id === 'number')).toBe(true);
    expect((await storage.load('a', 'y'))?.recent).toEqual([{ role: 'user', content: 'two' }]);
  });

  it('one bad turn fails alone; the others of its batch are stored', async () => {
    const { storage } = setup();
    const good = conv('good');
    const bad: ConversationRef = { dbId: 999_999, agent: 'a', sender: 'bad', title: '', stored: 0 }; // no such row: the foreign key refuses it
    const results = await storage.writeTurns([
      { conv: good, messages: [{ role: 'user', content: 'kept' }] },
      { conv: bad, messages: [{ role: 'user', content: 'refused' }] },
    ]);
    expect(results[0]).toBeNull();
    expect(results[1]).toBeInstanceOf(Error);
    expect((await storage.allMessages(good.dbId!)).map((m) => m.content)).toEqual(['kept']);
  });

  it('stores content given as UTF-8 bytes as the same searchable text as content given as a string', async () => {
    const { db, storage } = setup();
    const text = 'plain é ñ 日本語 🙂 zebra words';
    const shared = new Uint8Array(new SharedArrayBuffer(Buffer.byteLength(text)));
    shared.set(Buffer.from(text));
    const asBytes = conv('bytes');
    const asText = conv('text');
    expect(await storage.writeTurns([
      { conv: asBytes, messages: [{ role: 'user', content: text }, { role: 'assistant', content: 'answer' }], contentUtf8: [shared, null] },
      { conv: asText, messages: [{ role: 'user', content: text }] },
    ])).toEqual([null, null]);
    expect((await storage.allMessages(asBytes.dbId!)).map((m) => m.content)).toEqual([text, 'answer']);
    const rows = db.prepare('SELECT typeof(content) AS type, content FROM messages ORDER BY id').all() as { type: string; content: string }[];
    expect(rows).toEqual([{ type: 'text', content: text }, { type: 'text', content: 'answer' }, { type: 'text', content: text }]);
    // Equal to the text bound as a string, so the same in comparisons and in the search index.
    expect(db.prepare('SELECT COUNT(DISTINCT content) AS n FROM messages WHERE role = ?').get('user')).toEqual({ n: 1 });
    new SearchIndex(db).catchUpAll(100);
    const hits = db.prepare("SELECT conversation_id FROM messages_fts WHERE messages_fts MATCH 'zebra' ORDER BY conversation_id").all();
    expect(hits).toEqual([{ conversation_id: asBytes.dbId }, { conversation_id: asText.dbId }]);
  });
});
