/**
 * What only the PostgreSQL store has to get right, beyond the storage
 * contract (storage-contract.test.ts): the rows a group commit leaves, both
 * in one statement and turn by turn, a conversation row updated in place,
 * text PostgreSQL cannot hold, words its own parser would not split, long
 * messages, loads asked together, and a server that is not there.
 */
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { createLogger } from '../../src/shared/log.ts';
import type { Message } from '../../src/models/types.ts';
import { createPgConversationStorage, createPgDaemonStorage } from '../../src/storage/postgres/store.ts';
import { INDEXED_CHARS } from '../../src/storage/postgres/search-text.ts';
import { snippetOf, WHOLE_TEXT_BYTES } from '../../src/storage/search-rules.ts';
import { openPool } from '../../src/storage/postgres/pool.ts';
import { ConversationLoads, LOAD_BATCH_PAIRS } from '../../src/storage/postgres/conversation-loads.ts';
import { cancelSearch } from '../../src/storage/search-budget.ts';
import type { ConversationRef, ConversationStorage, DaemonStorage, TurnOutcome, TurnRecord } from '../../src/storage/contract.ts';
import { SEARCH_LIMITS, StopReason } from '../../src/shared/protocol.ts';
import { createTestDatabase, needPostgres, type TestDatabase } from '../helpers/postgres.ts';
import { startPgProxy } from '../helpers/pg-proxy.ts';

const log = createLogger('silent');
const skip = await needPostgres();

const user = (content: string): Message => ({ role: 'user', content });
const assistant = (content: string): Message => ({ role: 'assistant', content });
const ref = (sender: string, agent = 'a'): ConversationRef => ({ dbId: null, agent, sender, title: '', stored: 0 });
const outcomeOf = (turnId: string, finalText: string): TurnOutcome => ({
  turnId, agent: 'a', model: 'echo', stopReason: StopReason.Text, error: '', usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }, finalText,
});
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

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

  type Row = Record<string, unknown>;
  /** An agent's stored rows as the tables hold them, oldest row id first; conversations named by sender. */
  async function rowsOf(agent: string) {
    const conversations = await db.query<Row>(
      'SELECT sender, title, created_at, updated_at, message_count, title_search::text AS title_search FROM conversations WHERE agent = $1 ORDER BY id',
      [agent],
    );
    const messages = await db.query<Row>(
      `SELECT c.sender, m.idx, m.role, m.content, m.agent, m.tool_calls, m.tool_call_id, m.name, m.is_error, m.stop_reason, m.search::text AS search, m.created_at
       FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE c.agent = $1 ORDER BY m.id`,
      [agent],
    );
    const outcomes = await db.query<Row>(
      `SELECT c.sender, o.turn_id, o.agent, o.model, o.stop_reason, o.error, o.usage, o.final_text, o.created_at
       FROM turn_outcomes o JOIN conversations c ON c.id = o.conversation_id WHERE c.agent = $1 ORDER BY c.sender, o.turn_id`,
      [agent],
    );
    return { conversations, messages, outcomes };
  }

  /** Every message row, less its time: the fields a turn gave it, and its search words by weight. */
  const messageRow = (sender: string, idx: number, role: string, content: string, search: string | null, more: Record<string, unknown> = {}) => ({
    sender, idx, role, content, agent: null, tool_calls: null, tool_call_id: null, name: null, is_error: false, stop_reason: null, search, ...more,
  });
  const withoutTime = ({ created_at: _, ...rest }: Row): Row => rest;

  it('a batch of new and stored conversations, one created meanwhile elsewhere, stores exactly their rows', async () => {
    await fresh();
    const old = ref('old');
    expect(await shard.writeTurns([{ conv: old, messages: [user('Hello old'), assistant('hi')] }])).toEqual([null]);
    // Another node created this pair's row after this one looked: the new turn joins it.
    await db.query("INSERT INTO conversations (agent, sender, title, created_at, updated_at, title_search) VALUES ('a', 'raced', 'other title', $1, $1, to_tsvector('simple', 'other title'))", [
      '2020-01-01T00:00:00.000Z',
    ]);
    const fresh1 = ref('fresh');
    const raced = ref('raced');
    const titled: ConversationRef = { ...ref('titled'), title: 'Given title' };
    const call = { id: 'c1', name: 'lookup_weather', arguments: '{"q":"x"}' };
    const results = await shard.writeTurns([
      {
        conv: fresh1,
        messages: [
          user('Fresh start, déjà'),
          { role: 'assistant', content: '', tool_calls: [call] },
          { role: 'tool', content: 'sunny', tool_call_id: 'c1', name: 'lookup_weather', is_error: true },
          { role: 'assistant', content: 'Sunny today', agent: 'guest', stop_reason: 'stalled' },
        ],
        outcome: outcomeOf('t-fresh', 'Sunny today'),
      },
      { conv: { ...old, stored: 2 }, messages: [user('again'), assistant('again and again')], outcome: outcomeOf('t-old', 'again and again') },
      { conv: raced, messages: [user('raced in')] },
      { conv: titled, messages: [assistant('no user text')] },
    ]);
    expect(results).toEqual([null, null, null, null]);
    const { conversations, messages, outcomes } = await rowsOf('a');
    const ids = await db.query<{ sender: string; id: number }>("SELECT sender, id::int AS id FROM conversations WHERE agent = 'a'");
    const idOf = new Map(ids.map((r) => [r.sender, r.id]));
    expect([fresh1.dbId, raced.dbId, titled.dbId]).toEqual([idOf.get('fresh'), idOf.get('raced'), idOf.get('titled')]);

    expect(conversations.map(withoutTime).map(({ updated_at: _, ...c }) => c)).toEqual([
      { sender: 'old', title: 'Hello old', message_count: 4, title_search: "'hello':1 'old':2" },
      { sender: 'raced', title: 'other title', message_count: 1, title_search: "'other':1 'title':2" },
      { sender: 'fresh', title: 'Fresh start, déjà', message_count: 4, title_search: "'deja':3 'fresh':1 'start':2" },
      { sender: 'titled', title: 'Given title', message_count: 1, title_search: "'given':1 'title':2" },
    ]);
    expect(messages.map(withoutTime)).toEqual([
      messageRow('old', 0, 'user', 'Hello old', "'hello':1A 'old':2A"),
      messageRow('old', 1, 'assistant', 'hi', "'hi':1B"),
      messageRow('fresh', 0, 'user', 'Fresh start, déjà', "'deja':3A 'fresh':1A 'start':2A"),
      messageRow('fresh', 1, 'assistant', '', "'lookup':1B 'weather':2B", { tool_calls: JSON.stringify([call]) }),
      messageRow('fresh', 2, 'tool', 'sunny', null, { tool_call_id: 'c1', name: 'lookup_weather', is_error: true }),
      messageRow('fresh', 3, 'assistant', 'Sunny today', "'sunny':1B 'today':2B", { agent: 'guest', stop_reason: 'stalled' }),
      messageRow('old', 2, 'user', 'again', "'again':1A"),
      messageRow('old', 3, 'assistant', 'again and again', "'again':1B,3B 'and':2B"),
      messageRow('raced', 0, 'user', 'raced in', "'in':2A 'raced':1A"),
      messageRow('titled', 0, 'assistant', 'no user text', "'no':1B 'text':3B 'user':2B"),
    ]);
    const usage = JSON.stringify(outcomeOf('', '').usage);
    expect(outcomes.map(withoutTime)).toEqual([
      { sender: 'fresh', turn_id: 't-fresh', agent: 'a', model: 'echo', stop_reason: 'text', error: '', usage, final_text: 'Sunny today' },
      { sender: 'old', turn_id: 't-old', agent: 'a', model: 'echo', stop_reason: 'text', error: '', usage, final_text: 'again and again' },
    ]);

    // One time for everything the commit wrote; a row another node created keeps its creation time.
    const at = conversations.find((c) => c.sender === 'fresh')!.updated_at as string;
    expect(at).toMatch(ISO);
    const written = messages.filter((m) => !(m.sender === 'old' && (m.idx as number) < 2));
    expect(new Set([...written.map((m) => m.created_at), ...outcomes.map((o) => o.created_at)])).toEqual(new Set([at]));
    expect(conversations.map((c) => [c.sender, c.updated_at])).toEqual([['old', at], ['raced', at], ['fresh', at], ['titled', at]]);
    expect(conversations.map((c) => [c.sender, c.created_at === at])).toEqual([['old', false], ['raced', false], ['fresh', true], ['titled', true]]);
    expect(conversations.find((c) => c.sender === 'raced')!.created_at).toBe('2020-01-01T00:00:00.000Z');
  });

  it('a batch with turns that cannot be stored: those fail alone, saying why, and the others commit', async () => {
    await fresh();
    const kept = ref('kept');
    const gone = ref('gone');
    expect(await shard.writeTurns([{ conv: kept, messages: [user('kept')] }, { conv: gone, messages: [user('gone')] }])).toEqual([null, null]);
    await shard.delete(gone.dbId!);
    const added = ref('added');
    const nul = ref('nul');
    const results = await shard.writeTurns([
      { conv: added, messages: [user('added'), assistant('added')], outcome: outcomeOf('t1', 'added') },
      { conv: { ...gone, stored: 1 }, messages: [user('too late')] },
      { conv: { ...kept, stored: 1 }, messages: [assistant('still here')] },
      { conv: nul, messages: [user('a\u0000b')] },
    ]);
    expect(results[0]).toBeNull();
    expect(results[1]?.message).toBe('conversation a/gone is no longer stored (it was deleted)');
    expect(results[2]).toBeNull();
    expect(results[3]?.message).toMatch(/cannot hold the character U\+0000/);
    expect(added.dbId).toBeTypeOf('number');
    expect(nul.dbId).toBeNull();
    const { conversations, messages, outcomes } = await rowsOf('a');
    expect(conversations.map((c) => [c.sender, c.message_count])).toEqual([['kept', 2], ['added', 2]]);
    expect(messages.map((m) => [m.sender, m.idx, m.content])).toEqual([['kept', 0, 'kept'], ['added', 0, 'added'], ['added', 1, 'added'], ['kept', 1, 'still here']]);
    expect(outcomes.map((o) => [o.sender, o.turn_id])).toEqual([['added', 't1']]);
  });

  it('a batch the server refuses is written again turn by turn, storing the same rows as the batch would', async () => {
    await fresh();
    /** The same turns under another agent: to a stored conversation, to a new one with an outcome, to a titled new one. */
    async function batchFor(agent: string, clash: boolean): Promise<(Error | null)[]> {
      const stored = ref('stored', agent);
      const clashing = ref('clashing', agent);
      expect(await shard.writeTurns([{ conv: stored, messages: [user('first words')] }, { conv: clashing, messages: [user('taken')] }])).toEqual([null, null]);
      const turns: TurnRecord[] = [
        { conv: ref('new', agent), messages: [user('new words'), { role: 'assistant', content: 'ok', tool_calls: [{ id: 'c', name: 'tool_x', arguments: '{}' }] }], outcome: outcomeOf('t', 'ok') },
        { conv: { ...stored, stored: 1 }, messages: [assistant('more words')] },
        { conv: { ...ref('other', agent), title: 'named' }, messages: [user('other words')] },
      ];
      // idx 0 of `clashing` is taken: the batch statement fails, so every turn is written again alone.
      if (clash) turns.splice(1, 0, { conv: { ...clashing, stored: 0 }, messages: [user('clash')] });
      return shard.writeTurns(turns);
    }
    expect(await batchFor('x', false)).toEqual([null, null, null]);
    const [first, clashed, ...rest] = await batchFor('y', true);
    expect(first).toBeNull();
    expect(clashed?.message).toMatch(/duplicate key value violates unique constraint/);
    expect(rest).toEqual([null, null]);
    const comparable = async (agent: string) => {
      const { conversations, messages, outcomes } = await rowsOf(agent);
      return {
        conversations: conversations.map(({ created_at: _, updated_at: __, ...c }) => c),
        messages: messages.map(withoutTime),
        outcomes: outcomes.map(withoutTime),
      };
    };
    const batched = await comparable('x');
    expect(batched.messages).toHaveLength(6);
    expect(await comparable('y')).toEqual(batched);
  });

  it('two turns of one conversation in one batch are both written, in order', async () => {
    await fresh();
    const conv = ref('twice');
    expect(await shard.writeTurns([{ conv, messages: [user('one')] }])).toEqual([null]);
    const results = await shard.writeTurns([
      { conv: { ...conv, stored: 1 }, messages: [user('two')] },
      { conv: { ...conv, stored: 2 }, messages: [user('three')], outcome: outcomeOf('t3', 'three') },
    ]);
    expect(results).toEqual([null, null]);
    const { conversations, messages, outcomes } = await rowsOf('a');
    expect(conversations.map((c) => c.message_count)).toEqual([3]);
    expect(messages.map((m) => [m.idx, m.content])).toEqual([[0, 'one'], [1, 'two'], [2, 'three']]);
    expect(outcomes.map((o) => o.turn_id)).toEqual(['t3']);
  });

  it('a turn updates its conversation row in place (HOT): its indexes get no new entry', async () => {
    await fresh();
    const conv = ref('hot');
    expect(await shard.writeTurns([{ conv, messages: [user('one'), assistant('two')] }])).toEqual([null]);
    for (const stored of [2, 4, 6]) expect(await shard.writeTurns([{ conv: { ...conv, stored }, messages: [user('again'), assistant('and again')] }])).toEqual([null]);
    // A server process reports its counts as it ends, before its connection closes: closed, they are all in.
    await shard.close();
    const [counts] = await db.query<{ updated: number; hot: number }>("SELECT n_tup_upd::int AS updated, n_tup_hot_upd::int AS hot FROM pg_stat_user_tables WHERE relname = 'conversations'");
    expect(counts).toEqual({ updated: 3, hot: 3 });
  });

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

  it('a search past its deadline or cancelled stops with the reason, as on SQLite', async () => {
    await fresh();
    await shard.writeTurns([{ conv: ref('paid'), messages: [user('pay the toll')] }]);
    const o = { query: 'pay', limit: 5, contextBefore: 0, contextAfter: 0, agent: null, sender: null };
    expect((await daemon.search({ ...o, deadline: Date.now() + 60_000 })).map((h) => h.sender)).toEqual(['paid']);
    await expect(daemon.search({ ...o, deadline: Date.now() - 1 })).rejects.toMatchObject({ name: 'SearchStopped', reason: 'timeout' });
    const cancel = new SharedArrayBuffer(4);
    cancelSearch(cancel);
    await expect(daemon.search({ ...o, cancel })).rejects.toMatchObject({ name: 'SearchStopped', reason: 'cancelled' });
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

  it('shows a big message in a window with the snippet snippetOf cuts from it whole, reading it in slices only up to its match', async () => {
    await fresh();
    // The searching side talks through a relay that counts what the server sends.
    const proxy = await startPgProxy(db.url);
    const searcher = await createPgDaemonStorage(proxy.url, log);
    onTestFinished(async () => {
      await searcher.close();
      await proxy.close();
    });
    const filler = (n: number, seed: number): string => Array.from({ length: n }, (_, i) => `f${(i * seed) % 9973}é`).join(' ');
    // Two texts of about 500 KB: the word (cased otherwise, beside two-unit characters and a dotted İ) about 70k
    // characters into the first, which also passes its first slice's end, and about 1k into the second.
    const first = `${filler(9_000, 7)} 😀İ Needle here ${filler(60_000, 3)}`;
    const second = `${filler(120, 11)} ΣNEEDLE again ${filler(60_000, 5)}`;
    expect(Buffer.byteLength(first)).toBeGreaterThan(WHOLE_TEXT_BYTES);
    expect(await shard.writeTurns([{ conv: ref('big'), messages: [user(first), assistant(second), user('small needle')] }])).toEqual([null]);
    const sentBefore = proxy.fromServer();
    const [hit] = await searcher.search({ query: 'needle', limit: 5, contextBefore: 2, contextAfter: 2, agent: null, sender: null });
    expect(hit!.window.map((m) => ({ snippet: m.snippet, truncated: m.truncated }))).toEqual([
      snippetOf(first, ['needle'], SEARCH_LIMITS.snippetBytes),
      snippetOf(second, ['needle'], SEARCH_LIMITS.snippetBytes),
      { snippet: 'small needle', truncated: false },
    ]);
    expect(hit!.window[0]!.snippet).toContain('Needle here');
    // Neither text came whole: the server sent well under half of what they hold.
    expect(proxy.fromServer() - sentBefore).toBeLessThan((Buffer.byteLength(first) + Buffer.byteLength(second)) / 2);
  });

  it('loads the pairs asked together in one query per batch, each pair exactly as a load of its own', async () => {
    await fresh();
    // 100 stored pairs (each a turn of two messages, one compacted since) among 60 that are not stored.
    const convs = Array.from({ length: 100 }, (_, i) => ref(`s${i}`));
    const turns = convs.map((conv, i): TurnRecord => ({ conv, messages: [user(`hello ${i}`), assistant(`hi ${i}`)] }));
    expect(await shard.writeTurns(turns)).toEqual(turns.map(() => null));
    await shard.setSummary(convs[7]!.dbId!, 'earlier talk', 1);
    const asked = [...convs.map((c) => c.sender), ...Array.from({ length: 60 }, (_, i) => `missing${i}`)].sort();
    const alone = [];
    for (const sender of asked) alone.push(await shard.load('a', sender));
    const pool = openPool(db.url, log);
    onTestFinished(() => pool.end());
    const queries = vi.spyOn(pool, 'query');
    const loads = new ConversationLoads(pool);
    const together = await Promise.all(asked.map((sender) => loads.load('a', sender)));
    expect(queries).toHaveBeenCalledTimes(Math.ceil(asked.length / LOAD_BATCH_PAIRS));
    expect(together).toEqual(alone);
    expect(together.filter((c) => c === null)).toHaveLength(60);
    expect(together[asked.indexOf('s7')]).toMatchObject({ summary: 'earlier talk', summaryUpto: 1, messageCount: 2, recent: [assistant('hi 7')] });
    expect(together[asked.indexOf('s8')]).toMatchObject({ summary: null, messageCount: 2, recent: [user('hello 8'), assistant('hi 8')] });
  });

  it('fails every load of a batch the server refused, and the next batch loads', async () => {
    await fresh();
    expect(await shard.writeTurns([{ conv: ref('kept'), messages: [user('hello')] }])).toEqual([null]);
    // The loads' connections give up on a lock after 50 ms; a transaction here holds the table until it commits.
    const pool = openPool(`${db.url}?options=${encodeURIComponent('-c lock_timeout=50')}`, log);
    const holder = openPool(db.url, log);
    onTestFinished(async () => {
      await Promise.all([pool.end(), holder.end()]);
    });
    const loads = new ConversationLoads(pool);
    const locked = await holder.connect();
    await locked.query('BEGIN');
    await locked.query('LOCK TABLE conversations IN ACCESS EXCLUSIVE MODE');
    const failed = await Promise.allSettled([loads.load('a', 'kept'), loads.load('a', 'other')]);
    await locked.query('COMMIT');
    locked.release();
    expect(failed).toEqual([
      { status: 'rejected', reason: expect.objectContaining({ message: expect.stringMatching(/lock timeout/) }) },
      { status: 'rejected', reason: expect.objectContaining({ message: expect.stringMatching(/lock timeout/) }) },
    ]);
    expect(await Promise.all([loads.load('a', 'kept'), loads.load('a', 'other')])).toEqual([expect.objectContaining({ messageCount: 1 }), null]);
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
