/**
 * What only the PostgreSQL store has to get right, beyond the storage
 * contract (storage-contract.test.ts): text PostgreSQL cannot hold, words its
 * own parser would not split, long messages, and a server that is not there.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/log.ts';
import type { Message } from '../../src/worker/models/types.ts';
import { createPgConversationStorage, createPgDaemonStorage } from '../../src/worker/pg-store.ts';
import { INDEXED_CHARS } from '../../src/worker/pg-search-text.ts';
import { openPool } from '../../src/worker/pg-pool.ts';
import type { ConversationRef, ConversationStorage, DaemonStorage } from '../../src/worker/storage-contract.ts';
import { createTestDatabase, pgUnavailable, type TestDatabase } from '../helpers/postgres.ts';

const log = createLogger('silent');
const skip = await pgUnavailable();
if (skip !== null) console.warn(skip);

const user = (content: string): Message => ({ role: 'user', content });
const ref = (sender: string): ConversationRef => ({ dbId: null, agent: 'a', sender, title: '', stored: 0 });

describe.skipIf(skip !== null)('the PostgreSQL store', () => {
  let db: TestDatabase;
  let shard: ConversationStorage;
  let daemon: DaemonStorage;
  afterEach(async () => {
    await Promise.allSettled([shard?.close(), daemon?.close()]);
    await db?.drop();
  });
  async function fresh(): Promise<void> {
    db = await createTestDatabase();
    daemon = await createPgDaemonStorage(db.url, log);
    await daemon.prepare({});
    shard = await createPgConversationStorage(db.url, log);
  }
  const q = (query: string) => daemon.search({ query, limit: 5, contextBefore: 0, contextAfter: 0, agent: null, sender: null });

  it('refuses a turn holding U+0000 with a clear error, and stores the rest of the batch', async () => {
    await fresh();
    const bad = ref('nul');
    const good = ref('fine');
    const [badResult, goodResult] = await shard.writeTurns([
      { conv: bad, messages: [user('before\u0000after')] },
      { conv: good, messages: [user('fine')] },
    ]);
    expect(badResult?.message).toMatch(/cannot hold the character U\+0000/);
    expect(goodResult).toBeNull();
    expect(bad.dbId).toBeNull();
    expect(await shard.exists('a', 'nul')).toBe(false);
    expect((await shard.load('a', 'fine'))!.recent).toEqual([user('fine')]);
  });

  it('splits words as PROTOCOL §4 does, not as PostgreSQL’s parser would, and folds Latin diacritics', async () => {
    await fresh();
    await shard.writeTurns([
      { conv: ref('host'), messages: [user('see example.com or v3.14 and a/b')] },
      { conv: ref('accent'), messages: [user('Émile déjà vu')] },
    ]);
    for (const query of ['example', 'com', 'v3', '14', 'b']) expect((await q(query)).map((h) => h.sender), query).toEqual(['host']);
    expect((await q('example.com')).map((h) => h.sender)).toEqual(['host']);
    expect((await q('emile')).map((h) => h.sender)).toEqual(['accent']);
    expect((await q('DEJA')).map((h) => h.sender)).toEqual(['accent']);
    expect((await q('émile')).map((h) => h.sender)).toEqual(['accent']);
  });

  it('stores a message longer than a tsvector holds, indexing its first part', async () => {
    await fresh();
    const words = Array.from({ length: 60_000 }, (_, i) => `w${i}x`).join(' '); // ~400k characters of distinct words
    const conv = ref('long');
    expect(await shard.writeTurns([{ conv, messages: [user(`opening ${words} closing`)] }])).toEqual([null]);
    expect((await shard.load('a', 'long'))!.recent[0]!.content).toHaveLength(words.length + 'opening  closing'.length);
    expect((await q('opening')).map((h) => h.sender)).toEqual(['long']);
    expect(INDEXED_CHARS).toBeLessThan(words.length);
    expect(await q('closing')).toEqual([]);
  });

  it('commits synchronously whatever the URL asks', async () => {
    db = await createTestDatabase();
    const pool = openPool(`${db.url}?options=${encodeURIComponent('-c synchronous_commit=off')}`, log);
    try {
      const [setting] = (await pool.query<{ synchronous_commit: string }>('SHOW synchronous_commit')).rows;
      expect(setting).toEqual({ synchronous_commit: 'on' });
    } finally {
      await pool.end();
    }
  });

  it('says which store it cannot reach, without its password', async () => {
    db = await createTestDatabase();
    const url = 'postgres://agentd:hunter2@127.0.0.1:1/nothing';
    const err = await createPgDaemonStorage(url, log).then(() => null, (e: Error) => e);
    expect(err?.message).toMatch(/cannot reach the PostgreSQL store postgres:\/\/agentd:\*\*\*@127\.0\.0\.1:1\/nothing/);
    expect(err?.message).not.toContain('hunter2');
  });
});
