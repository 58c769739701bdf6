/**
 * The search index is written by the storage threads after a turn commits
 * (PROTOCOL §4.3): it catches up on its own, a search always sees turns that
 * ended before it, a delete leaves nothing indexed, and a restart indexes
 * what was committed but not yet indexed.
 */
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openDatabase } from '../../src/storage/sqlite/db.ts';
import { ConversationStore } from '../../src/storage/sqlite/store.ts';
import { createWriteLockBuffer, WriteLock } from '../../src/storage/sqlite/write-lock.ts';
import { startDaemon, testClient, testDaemon, waitFor, type Daemon } from '../helpers/daemon.ts';

const CONFIG = { agents: { assistant: { model: 'echo' } } };

/** A read-only look at the daemon's database, as another process sees it. */
function inspect(d: Daemon): { indexedMatching: (word: string) => number; caughtUp: () => boolean; close: () => void } {
  const db = new Database(join(d.home, 'agentd.db'), { readonly: true });
  const matching = db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM messages_fts WHERE messages_fts MATCH ?');
  const behind = db.prepare<[], { n: number }>('SELECT count(*) AS n FROM messages WHERE id > (SELECT message_id FROM fts_watermark)');
  return { indexedMatching: (w) => matching.get(`"${w}"`)!.n, caughtUp: () => behind.get()!.n === 0, close: () => db.close() };
}

type Hits = { hits: { sender: string }[] };

describe('search index off the commit path', () => {
  it('indexes a turn after its end without any search asking', async () => {
    const d = await testDaemon({ config: CONFIG });
    const c = await testClient(d);
    await c.send('assistant', 'a tamarind in the garden', { sender: 'idx' });
    const db = inspect(d);
    try {
      await waitFor(() => db.indexedMatching('tamarind') === 2, 'the storage threads to index the turn');
      expect(db.caughtUp()).toBe(true);
    } finally {
      db.close();
    }
  });

  it('a search right after a turn ends sees it', async () => {
    const d = await testDaemon({ config: CONFIG });
    const c = await testClient(d);
    for (let i = 0; i < 20; i++) {
      await c.send('assistant', `mangosteen number w${i}`, { sender: `m${i}` });
      const r = (await c.request('search_sessions', { query: `w${i}` })).session_hits as Hits;
      expect(r.hits.map((h) => h.sender)).toEqual([`m${i}`]);
    }
  });

  it('a conversation deleted before it was indexed leaves nothing searchable', async () => {
    const d = await testDaemon({ config: CONFIG });
    const c = await testClient(d);
    await c.send('assistant', 'rambutan secrets', { sender: 'gone' });
    await c.request('delete_conversation', { agent: 'assistant', sender: 'gone' });
    const db = inspect(d);
    try {
      await c.send('assistant', 'a later turn', { sender: 'other' });
      await waitFor(() => db.caughtUp(), 'the index to catch up');
      expect(db.indexedMatching('rambutan')).toBe(0);
    } finally {
      db.close();
    }
    expect(((await c.request('search_sessions', { query: 'rambutan' })).session_hits as Hits).hits).toEqual([]);
  });

  it('start-up indexes messages committed but not yet indexed', async () => {
    const first = await startDaemon({ config: CONFIG });
    expect((await first.stop()).code).toBe(0);
    // Messages stored the way a shard stores them, with no storage thread running to index them.
    const db = openDatabase(join(first.home, 'agentd.db'));
    const store = new ConversationStore(db, new WriteLock(createWriteLockBuffer(), 1));
    for (let i = 0; i < 1_200; i++) store.appendTurn({ dbId: null, agent: 'assistant', sender: `p${i}`, title: '', stored: 0 }, [{ role: 'user', content: `persimmon ${i}` }]);
    db.close();

    const d = await testDaemon({ config: CONFIG, home: first.home });
    const look = inspect(d);
    try {
      await waitFor(() => look.caughtUp(), 'start-up to index the stored messages');
      expect(look.indexedMatching('persimmon')).toBe(1_200);
    } finally {
      look.close();
    }
    const c = await testClient(d);
    expect(((await c.request('search_sessions', { query: 'persimmon 1199' })).session_hits as Hits).hits[0]!.sender).toBe('p1199');
  });
});
