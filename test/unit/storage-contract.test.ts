/**
 * The storage contract (src/storage/contract.ts), the same tests for
 * every backend: what a shard and a storage thread rely on, whatever holds
 * the data. Each test gets a store of its own.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SCHEMA_VERSION } from '../../src/storage/sqlite/db.ts';
import { createWriteLockBuffer, WriteLock } from '../../src/storage/sqlite/write-lock.ts';
import { SqliteDaemonStorage } from '../../src/storage/sqlite/daemon-store.ts';
import { createLogger } from '../../src/shared/log.ts';
import { StopReason, zeroUsage } from '../../src/shared/protocol.ts';
import type { SearchOptions } from '../../src/threads/storage/messages.ts';
import { SEARCH_CANDIDATES } from '../../src/storage/search-rules.ts';
import type { Message } from '../../src/models/types.ts';
import type { ConversationRef, ConversationStorage, DaemonStorage, TurnOutcome } from '../../src/storage/contract.ts';
import { createPgConversationStorage, createPgDaemonStorage } from '../../src/storage/postgres/store.ts';
import { PG_SCHEMA_VERSION } from '../../src/storage/postgres/schema.ts';
import { createTestDatabase, needPostgres } from '../helpers/postgres.ts';
import { InProcessWriter } from '../helpers/sqlite-writer.ts';

const log = createLogger('silent');

/** One store under test: storages opened on it, and the few backend-specific moves the contract's tests need. */
interface StoreUnderTest {
  conversations(): Promise<ConversationStorage>;
  daemon(): Promise<DaemonStorage>;
  /** Makes the store's schema version newer than this agentd's, as a newer agentd would have left it. */
  forgeNewerSchema(): Promise<void>;
  /** A description of everything stored, to show a refused store was left untouched. */
  fingerprint(): Promise<string>;
  /** Cuts every storage's connections without closing them, as a crash of the process would. */
  crash(): Promise<void>;
  dispose(): Promise<void>;
}

interface Backend {
  name: string;
  /** Why this backend's tests are skipped, or null. */
  skip: string | null;
  open(): Promise<StoreUnderTest>;
}

const pgSkip = await needPostgres();

const postgres: Backend = {
  name: 'PostgreSQL',
  skip: pgSkip,
  async open() {
    const db = await createTestDatabase();
    const open: { close(): Promise<void> }[] = [];
    const track = <T extends { close(): Promise<void> }>(s: T): T => (open.push(s), s);
    return {
      conversations: async () => track(await createPgConversationStorage(db.url, log)),
      daemon: async () => track(await createPgDaemonStorage(db.url, log)),
      forgeNewerSchema: async () => {
        await db.query("INSERT INTO agentd_schema (version, applied_at) VALUES ($1, 'later')", [PG_SCHEMA_VERSION + 1]);
      },
      fingerprint: async () => {
        const tables = await db.query<{ t: string }>("SELECT string_agg(table_name, ',' ORDER BY table_name) AS t FROM information_schema.tables WHERE table_schema = 'public'");
        const versions = await db.query<{ v: string }>("SELECT string_agg(version || '@' || applied_at, ',' ORDER BY version) AS v FROM agentd_schema");
        const counts = await db.query<{ n: string }>("SELECT (SELECT count(*) FROM conversations) || '/' || (SELECT count(*) FROM messages) || '/' || (SELECT count(*) FROM meta) AS n");
        return `${tables[0]!.t} ${versions[0]!.v} ${counts[0]!.n}`;
      },
      crash: () => db.terminateConnections(),
      dispose: async () => {
        await Promise.allSettled(open.map((s) => s.close()));
        await db.drop();
      },
    };
  },
};

const sqlite: Backend = {
  name: 'SQLite',
  skip: null,
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'agentd-contract-'));
    const path = join(dir, 'agentd.db');
    const buffer = createWriteLockBuffer();
    const writer = new InProcessWriter(path, buffer);
    const open: { close(): Promise<void> }[] = [];
    const track = <T extends { close(): Promise<void> }>(s: T): T => (open.push(s), s);
    return {
      conversations: async () => track(writer.shard(open.length + 1)),
      daemon: async () => track(new SqliteDaemonStorage(path, new WriteLock(buffer, open.length + 1))),
      forgeNewerSchema: async () => {
        const db = new Database(path);
        db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
        db.close();
      },
      fingerprint: async () => createHash('sha256').update(readFileSync(path)).digest('hex') + (existsSync(`${path}-wal`) ? readFileSync(`${path}-wal`).length : '-'),
      // A committed SQLite transaction is in the file (WAL) the moment it commits: a new connection sees it.
      crash: async () => undefined,
      dispose: async () => {
        await Promise.allSettled(open.map((s) => s.close()));
        writer.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const backends: Backend[] = [sqlite, postgres];

/** Waits until the wall clock's millisecond (what a stored timestamp holds) has moved on. */
async function nextMillisecond(): Promise<void> {
  const start = new Date().toISOString();
  while (new Date().toISOString() === start) await new Promise((r) => setImmediate(r));
}

const user = (content: string): Message => ({ role: 'user', content });
const assistant = (content: string): Message => ({ role: 'assistant', content });
const ref = (agent: string, sender: string, stored = 0, dbId: number | null = null): ConversationRef => ({ dbId, agent, sender, title: '', stored });
const outcomeOf = (turnId: string, finalText: string): TurnOutcome => ({
  turnId, agent: 'a', model: 'echo', stopReason: StopReason.Text, error: '', usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }, finalText,
});

describe.each(backends)('storage contract: $name', (backend) => {
  if (backend.skip !== null) {
    it.skip(backend.skip, () => undefined);
    return;
  }
  let store: StoreUnderTest;
  let shard: ConversationStorage;
  let daemon: DaemonStorage;
  afterEach(async () => {
    await store?.dispose();
  });
  async function fresh(): Promise<void> {
    store = await backend.open();
    daemon = await store.daemon();
    await daemon.prepare({});
    shard = await store.conversations();
  }
  /** Writes one conversation in one turn and returns its row id. */
  async function conversation(agent: string, sender: string, messages: Message[]): Promise<number> {
    const conv = ref(agent, sender);
    expect(await shard.writeTurns([{ conv, messages }])).toEqual([null]);
    return conv.dbId!;
  }
  const q = (query: string, o: Partial<SearchOptions> = {}) =>
    daemon.search({ query, limit: 5, contextBefore: 4, contextAfter: 4, agent: null, sender: null, ...o });

  it('writes and loads a turn with every message field', async () => {
    await fresh();
    const messages: Message[] = [
      user('what is the weather'),
      { role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'weather', arguments: '{"city":"Oslo"}' }] },
      { role: 'tool', content: 'rain', tool_call_id: 'c1', name: 'weather', is_error: true },
      { role: 'assistant', content: 'it rains', agent: 'guest' },
      { role: 'assistant', content: '', stop_reason: 'stalled' },
    ];
    const conv = ref('a', 's');
    expect(await shard.exists('a', 's')).toBe(false);
    expect(await shard.load('a', 's')).toBeNull();
    expect(await shard.writeTurns([{ conv, messages }])).toEqual([null]);
    expect(conv.dbId).toBeTypeOf('number');
    const loaded = (await shard.load('a', 's'))!;
    expect(loaded).toMatchObject({ id: conv.dbId, title: 'what is the weather', summary: null, summaryUpto: 0, messageCount: 5 });
    expect(loaded.recent).toEqual(messages);
    expect(await shard.allMessages(conv.dbId!)).toEqual(messages);
    expect(await shard.exists('a', 's')).toBe(true);
    // A second turn appends after the stored messages and keeps the title.
    conv.stored = 5;
    expect(await shard.writeTurns([{ conv, messages: [user('again'), assistant('again')] }])).toEqual([null]);
    expect((await shard.load('a', 's'))!).toMatchObject({ title: 'what is the weather', messageCount: 7 });
    const [listed] = await daemon.listConversations('a', 's');
    expect(listed).toMatchObject({ agent: 'a', sender: 's', title: 'what is the weather', message_count: 7 });
  });

  it('group commit: a bad turn fails alone, the others commit and get their row ids', async () => {
    await fresh();
    const first = ref('a', 'one');
    await shard.writeTurns([{ conv: first, messages: [user('hello'), assistant('hello')] }]);
    const good = ref('a', 'two');
    const duplicate = { ...ref('a', 'one', 1, first.dbId) }; // idx 1 is stored already
    const alsoGood = ref('a', 'three');
    const results = await shard.writeTurns([
      { conv: good, messages: [user('two'), assistant('two')] },
      { conv: duplicate, messages: [user('clash')] },
      { conv: alsoGood, messages: [user('three')], outcome: outcomeOf('t3', 'three') },
    ]);
    expect(results[0]).toBeNull();
    expect(results[1]).toBeInstanceOf(Error);
    expect(results[2]).toBeNull();
    expect(good.dbId).toBeTypeOf('number');
    expect(alsoGood.dbId).toBeTypeOf('number');
    expect((await shard.load('a', 'one'))!.recent.map((m) => m.content)).toEqual(['hello', 'hello']);
    expect((await shard.load('a', 'two'))!.messageCount).toBe(2);
    expect(await shard.outcome(alsoGood.dbId!, 't3')).toMatchObject({ finalText: 'three' });
  });

  it('a failed turn gets no row id, and a turn id is stored once per conversation', async () => {
    await fresh();
    const first = ref('a', 'new');
    const second = ref('a', 'new'); // the same new pair twice in one batch: the second cannot take index 0 again
    const results = await shard.writeTurns([
      { conv: first, messages: [user('x'), assistant('x')], outcome: outcomeOf('t', 'x') },
      { conv: second, messages: [user('y')] },
    ]);
    expect(results[0]).toBeNull();
    expect(results[1]).toBeInstanceOf(Error);
    expect(first.dbId).toBeTypeOf('number');
    expect(second.dbId).toBeNull();
    const retry = ref('a', 'new', 2, first.dbId);
    const [dup] = await shard.writeTurns([{ conv: retry, messages: [user('z')], outcome: outcomeOf('t', 'again') }]);
    expect(dup).toBeInstanceOf(Error);
    expect((await shard.load('a', 'new'))!.recent.map((m) => m.content)).toEqual(['x', 'x']);
    expect(await shard.outcome(first.dbId!, 't')).toMatchObject({ finalText: 'x' });
  });

  it('a turn for a conversation deleted meanwhile fails and writes nothing', async () => {
    await fresh();
    const conv = ref('a', 's');
    await shard.writeTurns([{ conv, messages: [user('one')] }]);
    const id = conv.dbId!;
    await shard.delete(id);
    const [err] = await shard.writeTurns([{ conv: { ...conv, stored: 1 }, messages: [user('two')] }]);
    expect(err).toBeInstanceOf(Error);
    expect(await shard.allMessages(id)).toEqual([]);
    expect(await shard.exists('a', 's')).toBe(false);
  });

  it('looks up a stored outcome by turn id', async () => {
    await fresh();
    const conv = ref('a', 's');
    await shard.writeTurns([{ conv, messages: [user('hi'), assistant('hi')], outcome: outcomeOf('turn-1', 'hi') }]);
    expect(await shard.outcome(conv.dbId!, 'turn-1')).toEqual(outcomeOf('turn-1', 'hi'));
    expect(await shard.outcome(conv.dbId!, 'turn-2')).toBeNull();
  });

  it('a compaction summary: load returns the messages from summaryUpto on, allMessages every one', async () => {
    await fresh();
    const id = await conversation('a', 's', [user('m0'), assistant('m1'), user('m2'), assistant('m3')]);
    await shard.setSummary(id, 'the gist', 2);
    const loaded = (await shard.load('a', 's'))!;
    expect(loaded).toMatchObject({ summary: 'the gist', summaryUpto: 2, messageCount: 4 });
    expect(loaded.recent.map((m) => m.content)).toEqual(['m2', 'm3']);
    expect((await shard.allMessages(id)).map((m) => m.content)).toEqual(['m0', 'm1', 'm2', 'm3']);
    await shard.setSummary(id, 'everything', 4);
    expect((await shard.load('a', 's'))!).toMatchObject({ summary: 'everything', summaryUpto: 4, messageCount: 4, recent: [] });
  });

  it('deleting a conversation takes its messages, outcomes and search entries', async () => {
    await fresh();
    const conv = ref('a', 's');
    await shard.writeTurns([{ conv, messages: [user('quince jam'), assistant('ok')], outcome: outcomeOf('t', 'ok') }]);
    expect(await q('quince')).toHaveLength(1);
    await shard.delete(conv.dbId!);
    expect(await shard.load('a', 's')).toBeNull();
    expect(await shard.allMessages(conv.dbId!)).toEqual([]);
    expect(await shard.outcome(conv.dbId!, 't')).toBeNull();
    expect(await q('quince')).toEqual([]);
    expect(await daemon.listConversations(null, null)).toEqual([]);
  });

  it('records a stalled turn once, and not at all when its turn id is stored', async () => {
    await fresh();
    const stalled = { agent: 'a', sender: 's', content: 'slow one', guest: 'g', turnId: 'st-1', error: 'the shard stalled' };
    await shard.recordStalled(stalled);
    const loaded = (await shard.load('a', 's'))!;
    expect(loaded.recent).toEqual([user('slow one'), { role: 'assistant', content: '', stop_reason: StopReason.Stalled, agent: 'g' }]);
    expect(await shard.outcome(loaded.id, 'st-1')).toEqual({
      turnId: 'st-1', agent: 'g', model: '', stopReason: StopReason.Stalled, error: 'the shard stalled', usage: zeroUsage(), finalText: '',
    });
    await shard.recordStalled(stalled);
    expect((await shard.load('a', 's'))!.messageCount).toBe(2);
    await shard.recordStalled({ ...stalled, turnId: null, content: 'another' });
    expect((await shard.allMessages(loaded.id)).map((m) => m.content)).toEqual(['slow one', '', 'another', '']);
  });

  it('lists conversations most recently updated first, filtered by agent and sender', async () => {
    await fresh();
    const one = ref('a', 'one');
    await shard.writeTurns([{ conv: one, messages: [user('1')] }]);
    await conversation('a', 'two', [user('2')]);
    await conversation('b', 'one', [user('3')]);
    await nextMillisecond(); // timestamps have millisecond resolution: the update must be later, not tied
    one.stored = 1;
    await shard.writeTurns([{ conv: one, messages: [user('1 again')] }]);
    const all = await daemon.listConversations(null, null);
    expect(all[0]).toMatchObject({ agent: 'a', sender: 'one', message_count: 2 });
    expect(all).toHaveLength(3);
    expect((await daemon.listConversations('a', null)).map((c) => c.sender).sort()).toEqual(['one', 'two']);
    expect((await daemon.listConversations(null, 'one')).map((c) => c.agent).sort()).toEqual(['a', 'b']);
  });

  describe('search', () => {
    it('finds one hit per conversation, best first, user text above assistant text', async () => {
      await fresh();
      await conversation('a', 'one', [user('the kiwi is a bird'), assistant('yes'), user('kiwi kiwi kiwi'), assistant('ok')]);
      await conversation('a', 'two', [user('a long message about many things and once a kiwi somewhere in it among other words'), assistant('fine')]);
      const hits = await q('kiwi');
      expect(hits.map((h) => h.sender)).toEqual(['one', 'two']);
      expect(hits[0]!.msg_idx).toBe(2);
      expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
      await conversation('b', 'in-assistant', [user('hello'), assistant('mango')]);
      await conversation('b', 'in-user', [user('mango'), assistant('hello')]);
      expect((await q('mango')).map((h) => h.sender)).toEqual(['in-user', 'in-assistant']);
    });

    it('a match in the title or the compaction summary lifts a conversation', async () => {
      await fresh();
      await conversation('a', 'lifted', [user('papaya notes'), assistant('ok')]);
      await conversation('a', 'plain', [user('hello'), assistant('ok'), user('papaya notes')]);
      expect((await q('papaya'))[0]!.sender).toBe('lifted');
      const viaSummary = await conversation('a', 'summary', [user('hello'), assistant('ok'), user('papaya notes')]);
      await shard.setSummary(viaSummary, 'all about papaya papaya', 3);
      const order = (await q('papaya')).map((h) => h.sender);
      expect(order.indexOf('summary')).toBeLessThan(order.indexOf('plain'));
    });

    it('never finds tool output or tool-call arguments, but finds tool names', async () => {
      await fresh();
      await conversation('a', 'tools', [
        user('look it up'),
        { role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'weather_lookup', arguments: '{"secret":"hunter2"}' }] },
        { role: 'tool', content: 'token=sk-supersecret', tool_call_id: 'c1', name: 'weather_lookup' },
        assistant('sunny'),
      ]);
      expect(await q('hunter2')).toEqual([]);
      expect(await q('supersecret')).toEqual([]);
      const hits = await q('weather_lookup');
      expect(hits).toHaveLength(1);
      expect(hits[0]!.window.find((w) => w.role === 'tool')).toEqual({ role: 'tool', msg_idx: 2, snippet: '', truncated: false, tool_name: 'weather_lookup' });
      expect(hits[0]!.window.find((w) => w.msg_idx === 1)!.tool_name).toBe('weather_lookup');
    });

    it('treats a query as words: syntax characters and operators are words or nothing', async () => {
      await fresh();
      await conversation('a', 's', [user('alpha beta gamma, see example.com or v3.14'), assistant('ok')]);
      for (const query of ['"alpha', 'alpha)', '(alpha', 'alph*', '-alpha', 'alpha <-> beta', 'alpha | beta', '!alpha', 'alpha & !beta', 'alpha:*', "al'pha", '{alpha}', 'alpha\\', 'or', 'and', 'not']) {
        await expect(q(query), query).resolves.toBeDefined();
      }
      expect(await q('-alpha')).toHaveLength(1);
      expect(await q('!alpha')).toHaveLength(1);
      expect(await q('NOT alpha')).toHaveLength(1);
      expect(await q('alph*')).toEqual([]); // a word, not a prefix
      expect(await q('alpha:*')).toHaveLength(1); // the word alpha; `:*` means nothing
      expect(await q('example')).toHaveLength(1); // words inside punctuation are words
      expect(await q('14')).toHaveLength(1);
      for (const query of ['', '   ', '"', '()', '*', '- + ^ : "" \'\'', '<->', '!&|']) expect(await q(query), query).toEqual([]);
    });

    it('returns a window of context around the match, at most 16 messages, whatever context is asked', async () => {
      await fresh();
      const messages: Message[] = [];
      for (let i = 0; i < 40; i++) messages.push(i % 2 ? assistant(`reply ${i}`) : user(i === 20 ? 'the needle is here' : `message ${i}`));
      await conversation('a', 'long', messages);
      const [hit] = await q('needle');
      expect(hit!.msg_idx).toBe(20);
      expect(hit!.window.map((w) => w.msg_idx)).toEqual([16, 17, 18, 19, 20, 21, 22, 23, 24]);
      const [wide] = await q('needle', { contextBefore: 30, contextAfter: 30 });
      expect(wide!.window).toHaveLength(16);
      const [none] = await q('needle', { contextBefore: 0, contextAfter: 0 });
      expect(none!.window.map((w) => w.msg_idx)).toEqual([20]);
      const [huge] = await q('needle', { contextBefore: 2 ** 53, contextAfter: Number.MAX_SAFE_INTEGER });
      expect(huge!.window).toHaveLength(16);
      expect(huge!.window.map((w) => w.msg_idx)).toContain(20);
    });

    it('cuts snippets to 1024 bytes on character boundaries and says so', async () => {
      await fresh();
      await conversation('a', 'big', [user(`${'ä'.repeat(2000)} needle ${'ö'.repeat(2000)}`), assistant('short')]);
      const [hit] = await q('needle', { contextAfter: 1 });
      expect(hit!.window[0]!.truncated).toBe(true);
      expect(Buffer.byteLength(hit!.window[0]!.snippet)).toBeLessThanOrEqual(1024);
      expect(hit!.window[0]!.snippet).toContain('needle');
      expect(hit!.window[1]).toMatchObject({ snippet: 'short', truncated: false });
    });

    it('honours limit and the agent and sender filters', async () => {
      await fresh();
      const turns = Array.from({ length: 30 }, (_, i) => ({ conv: ref(i % 2 ? 'odd' : 'even', `s${i}`), messages: [user(`lychee ${i}`), assistant('ok')] }));
      expect(await shard.writeTurns(turns)).toEqual(turns.map(() => null));
      expect(await q('lychee')).toHaveLength(5);
      expect(await q('lychee', { limit: 20 })).toHaveLength(20);
      const odd = await q('lychee', { agent: 'odd', limit: 20 });
      expect(odd).toHaveLength(15);
      expect(odd.every((h) => h.agent === 'odd')).toBe(true);
      expect((await q('lychee', { sender: 's4' })).map((h) => h.sender)).toEqual(['s4']);
    });

    it('ranks only the newest SEARCH_CANDIDATES matches: an older match is found while fewer newer ones match', async () => {
      await fresh();
      // The strongest match, stored first: a short user message repeating the word. Its title, from its
      // first message, does not match (a title match lifts a conversation whatever its messages' age).
      await conversation('a', 'old', [user('hello'), assistant('ok'), user('zebra zebra zebra'), assistant('ok')]);
      // Newer messages that do not match never push it out, however many.
      await conversation('a', 'filler', Array.from({ length: 2 * SEARCH_CANDIDATES }, (_, i) => (i % 2 ? assistant(`nothing ${i}`) : user(`plain ${i}`))));
      // SEARCH_CANDIDATES - 1 newer weak matches: the old one is still among the newest SEARCH_CANDIDATES.
      const weak = (n: number): Message[] => Array.from({ length: n }, (_, i) => assistant(`a long sentence with many other words and one zebra somewhere ${i}`));
      await conversation('a', 'new', weak(SEARCH_CANDIDATES - 1));
      expect((await q('zebra')).map((h) => h.sender)).toEqual(['old', 'new']);
      // One more newer match: the old message is past the bound and is not ranked at all.
      await conversation('a', 'newer', weak(1));
      expect((await q('zebra')).map((h) => h.sender).sort()).toEqual(['new', 'newer']);
      // The bound counts only the matches a filter lets through: narrowed to its sender, the old one is found.
      expect((await q('zebra', { sender: 'old' })).map((h) => [h.sender, h.msg_idx])).toEqual([['old', 2]]);
    });

    it('lifts by title or summary only among the newest SEARCH_CANDIDATES matching conversations', async () => {
      await fresh();
      // Matched by its summary alone (no message or title holds the word), created first.
      const old = await conversation('a', 'old', [user('hello'), assistant('ok')]);
      await shard.setSummary(old, 'quokka quokka', 2);
      const newer = Array.from({ length: SEARCH_CANDIDATES - 1 }, (_, i) => ({ conv: ref('a', `n${i}`), messages: [user('hello'), assistant('ok')] }));
      expect(await shard.writeTurns(newer)).toEqual(newer.map(() => null));
      for (const t of newer) await shard.setSummary(t.conv.dbId!, 'a summary with one quokka among many other words', 2);
      expect((await q('quokka', { limit: 20 })).map((h) => h.sender)).toContain('old');
      const last = await conversation('a', 'last', [user('hello'), assistant('ok')]);
      await shard.setSummary(last, 'a summary with one quokka among many other words', 2);
      expect((await q('quokka', { limit: 20 })).map((h) => h.sender)).not.toContain('old');
      expect((await q('quokka', { sender: 'old' })).map((h) => [h.sender, h.msg_idx])).toEqual([['old', 0]]);
    });
  });

  describe('the daemon store', () => {
    it('seeds the agents once, and two daemons preparing at once migrate and seed exactly once', async () => {
      store = await backend.open();
      const [one, two] = await Promise.all([store.daemon(), store.daemon()]);
      const seeds = { assistant: { model: 'echo' } } as unknown as Parameters<DaemonStorage['prepare']>[0];
      const states = await Promise.all([one.prepare(seeds), two.prepare(seeds)]);
      expect(states.map((s) => s.seededNow).sort()).toEqual([false, true]);
      for (const s of states) expect(s.agents).toEqual([{ name: 'assistant', config: JSON.stringify({ model: 'echo' }) }]);
      const again = await (await store.daemon()).prepare({});
      expect(again).toMatchObject({ seededNow: false, subscriptions: [] });
      expect(again.agents.map((a) => a.name)).toEqual(['assistant']);
    });

    it('refuses a store with a newer schema and leaves it untouched', async () => {
      store = await backend.open();
      await (await store.daemon()).prepare({});
      await store.forgeNewerSchema();
      const before = await store.fingerprint();
      await expect((await store.daemon()).prepare({ x: {} as never })).rejects.toThrow(/newer than this agentd understands.*not modified/);
      expect(await store.fingerprint()).toBe(before);
    });

    it('a once subscription is consumed by whoever deletes it: 1, then 0', async () => {
      await fresh();
      const id = await daemon.insertSubscription('agent:a', 'b', true);
      const other = await daemon.insertSubscription('agent:a', 'c', false);
      expect(other).toBeGreaterThan(id);
      const state = await (await store.daemon()).prepare({});
      expect(state.subscriptions).toEqual([
        { id, source: 'agent:a', target_agent: 'b', once: true },
        { id: other, source: 'agent:a', target_agent: 'c', once: false },
      ]);
      const counts = await Promise.all([daemon.deleteSubscriptions([id]), daemon.deleteSubscriptions([id])]);
      expect(counts.sort()).toEqual([0, 1]);
      expect(await daemon.deleteSubscriptions([])).toBe(0);
    });

    it('deleting an agent takes its conversations, messages, search entries and subscriptions', async () => {
      await fresh();
      await daemon.upsertAgent('gone', '{"model":"echo"}');
      await daemon.upsertAgent('kept', '{"model":"echo"}');
      await daemon.upsertAgent('kept', '{"model":"echo","max_iterations":3}');
      await conversation('gone', 's', [user('rhubarb'), assistant('ok')]);
      await conversation('kept', 's', [user('rhubarb'), assistant('ok')]);
      await daemon.insertSubscription('agent:kept', 'gone', false);
      const kept = await daemon.insertSubscription('agent:gone', 'kept', false);
      await daemon.deleteAgent('gone');
      expect((await q('rhubarb')).map((h) => h.agent)).toEqual(['kept']);
      expect(await shard.exists('gone', 's')).toBe(false);
      const state = await (await store.daemon()).prepare({});
      expect(state.agents).toEqual([{ name: 'kept', config: '{"model":"echo","max_iterations":3}' }]);
      expect(state.subscriptions.map((s) => s.id)).toEqual([kept]);
      await daemon.maintain(1 << 20);
    });
  });

  it('a turn whose write resolved is there after the process holding the store dies', async () => {
    await fresh();
    const conv = ref('a', 's');
    expect(await shard.writeTurns([{ conv, messages: [user('durable'), assistant('durable')], outcome: outcomeOf('d', 'durable') }])).toEqual([null]);
    await store.crash();
    const reopened = await store.conversations();
    const loaded = (await reopened.load('a', 's'))!;
    expect(loaded.recent.map((m) => m.content)).toEqual(['durable', 'durable']);
    expect(await reopened.outcome(loaded.id, 'd')).toMatchObject({ finalText: 'durable' });
  });
});
