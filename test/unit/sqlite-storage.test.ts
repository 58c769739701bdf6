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
import type { ConversationRef } from '../../src/worker/storage-contract.ts';

let dir = '';
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function setup() {
  dir = mkdtempSync(join(tmpdir(), 'agentd-sqlite-storage-'));
  const path = join(dir, 'agentd.db');
  const db = openDatabase(path);
  migrate(db, path);
  const buffer = createWriteLockBuffer();
  return { storage: new SqliteConversationStorage(db, new WriteLock(buffer, ownerToken(0))), otherShard: new WriteLock(buffer, ownerToken(1)) };
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
});
