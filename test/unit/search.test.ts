/** Session search rules, against a real database built through the shard's own store. */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/sqlite/db.ts';
import type { ConversationStore } from '../../src/storage/sqlite/store.ts';
import { ftsQuery, NARROW_FILTER_ROWS, SessionSearch, snippetOf, type SearchOptions } from '../../src/storage/sqlite/search.ts';
import type { Message } from '../../src/models/types.ts';
import { IDF_COUNT_CAP } from '../../src/storage/sqlite/search-bm25.ts';
import { freshStore } from '../helpers/sqlite-store.ts';

let db: Db;
let store: ConversationStore;
let search: SessionSearch;

beforeEach(() => {
  ({ db, store } = freshStore('search'));
  search = new SessionSearch(db);
});

function conversation(agent: string, sender: string, messages: Message[]): number {
  return store.appendTurn({ dbId: null, agent, sender, title: '', stored: 0 }, messages);
}
const user = (content: string): Message => ({ role: 'user', content });
const assistant = (content: string): Message => ({ role: 'assistant', content });
const q = (query: string, o: Partial<SearchOptions> = {}) =>
  search.search({ query, limit: 5, contextBefore: 4, contextAfter: 4, agent: null, sender: null, ...o });

describe('a query from inside a turn', () => {
  it('counts only its first 1,024 bytes, cut on a character boundary', () => {
    const words = (q: string): string[] => ftsQuery(q)!.split(' OR ');
    expect(words(`${'a'.repeat(1020)} kiwi fig`)).toEqual([`"${'a'.repeat(1020)}"`, '"kiw"']);
    expect(words(`${'a'.repeat(1021)} жфig`)).toEqual([`"${'a'.repeat(1021)}"`, '"ж"']);
  });
});

describe('session search', () => {
  it('a filter by sender alone finds its conversations through an index, not by reading them all', () => {
    const plan = db.prepare('EXPLAIN QUERY PLAN SELECT message_count FROM conversations WHERE sender = ?').all('bob') as { detail: string }[];
    expect(plan.map((p) => p.detail).join('\n')).toMatch(/USING (COVERING )?INDEX conversations_sender/);
  });

  it('finds one hit per conversation, best first', () => {
    conversation('a', 'one', [user('the kiwi is a bird'), assistant('yes'), user('kiwi kiwi kiwi'), assistant('ok')]);
    conversation('a', 'two', [user('a long message about many things and once a kiwi somewhere in it among other words'), assistant('fine')]);
    const hits = q('kiwi');
    expect(hits.map((h) => h.sender)).toEqual(['one', 'two']);
    expect(hits[0]!.msg_idx).toBe(2);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
  });

  it('weighs user text above assistant text', () => {
    conversation('a', 'in-assistant', [user('hello'), assistant('mango')]);
    conversation('a', 'in-user', [user('mango'), assistant('hello')]);
    expect(q('mango').map((h) => h.sender)).toEqual(['in-user', 'in-assistant']);
  });

  it('a match in the title or the compaction summary lifts a conversation', () => {
    conversation('a', 'lifted', [user('papaya notes'), assistant('ok')]); // title: "papaya notes"
    conversation('a', 'plain', [user('hello'), assistant('ok'), user('papaya notes')]);
    expect(q('papaya')[0]!.sender).toBe('lifted');
    const viaSummary = conversation('a', 'summary', [user('hello'), assistant('ok'), user('papaya notes')]);
    store.setSummary(viaSummary, 'all about papaya papaya', 3);
    const order = q('papaya').map((h) => h.sender);
    expect(order.indexOf('summary')).toBeLessThan(order.indexOf('plain'));
  });

  it('never searches tool results or tool-call arguments, but does search tool names', () => {
    conversation('a', 'tools', [
      user('look it up'),
      { role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'weather_lookup', arguments: '{"secret":"hunter2"}' }] },
      { role: 'tool', content: 'token=sk-supersecret', tool_call_id: 'c1', name: 'weather_lookup' },
      assistant('sunny'),
    ]);
    expect(q('hunter2')).toEqual([]);
    expect(q('supersecret')).toEqual([]);
    const hits = q('weather_lookup');
    expect(hits).toHaveLength(1);
    const tool = hits[0]!.window.find((w) => w.role === 'tool')!;
    expect(tool).toEqual({ role: 'tool', msg_idx: 2, snippet: '', truncated: false, tool_name: 'weather_lookup' });
    expect(hits[0]!.window.find((w) => w.msg_idx === 1)!.tool_name).toBe('weather_lookup');
  });

  it('treats a query as words: FTS5 syntax neither errors nor changes the meaning', () => {
    conversation('a', 's', [user('alpha beta gamma'), assistant('ok')]);
    for (const query of ['"alpha', 'alpha)', '(alpha', 'alph*', '-alpha', 'alpha NEAR beta', 'alpha OR', 'AND alpha', 'NOT alpha', 'alpha:beta', '^alpha', 'alpha + beta', "al'pha", '{alpha}']) {
      expect(() => q(query), query).not.toThrow();
    }
    expect(q('-alpha')).toHaveLength(1);
    expect(q('NOT alpha')).toHaveLength(1);
    expect(q('alph*')).toEqual([]); // a word, not a prefix query
    for (const query of ['', '   ', '"', '()', '*', '- + ^ : "" \'\'', 'NEAR(', '"OR"']) {
      expect(() => q(query), query).not.toThrow();
    }
    expect(q('')).toEqual([]);
    expect(q('()*-"')).toEqual([]);
    expect(ftsQuery('a "b" NEAR(c)')).toBe('"a" OR "b" OR "near" OR "c"');
  });

  it('returns a window of context around the match, at most 16 messages', () => {
    const messages: Message[] = [];
    for (let i = 0; i < 40; i++) messages.push(i % 2 ? assistant(`reply ${i}`) : user(i === 20 ? 'the needle is here' : `message ${i}`));
    conversation('a', 'long', messages);
    const [hit] = q('needle');
    expect(hit!.msg_idx).toBe(20);
    expect(hit!.window.map((w) => w.msg_idx)).toEqual([16, 17, 18, 19, 20, 21, 22, 23, 24]);
    const [wide] = q('needle', { contextBefore: 30, contextAfter: 30 });
    expect(wide!.window).toHaveLength(16);
    expect(wide!.window.map((w) => w.msg_idx)).toContain(20);
    const [none] = q('needle', { contextBefore: 0, contextAfter: 0 });
    expect(none!.window.map((w) => w.msg_idx)).toEqual([20]);
    // A context of 2^53 is clamped, not trimmed one by one (that froze a storage thread).
    const [huge] = q('needle', { contextBefore: 17, contextAfter: Number.MAX_SAFE_INTEGER });
    expect(huge!.window).toHaveLength(16);
    expect(huge!.window.map((w) => w.msg_idx)).toContain(20);
  });

  it('cuts snippets to 1024 bytes and says so', () => {
    const long = `${'ä'.repeat(2000)} needle ${'ö'.repeat(2000)}`;
    conversation('a', 'big', [user(long), assistant('short')]);
    const [hit] = q('needle', { contextAfter: 1 });
    const w = hit!.window[0]!;
    expect(w.truncated).toBe(true);
    expect(Buffer.byteLength(w.snippet)).toBeLessThanOrEqual(1024);
    expect(w.snippet).toContain('needle');
    expect(hit!.window[1]).toMatchObject({ snippet: 'short', truncated: false });
    expect(snippetOf('🦀'.repeat(600), ['x'], 1024).snippet).toBe('🦀'.repeat(256));
  });

  it('honours limit and the agent and sender filters', () => {
    for (let i = 0; i < 30; i++) conversation(i % 2 ? 'odd' : 'even', `s${i}`, [user(`lychee ${i}`), assistant('ok')]);
    expect(q('lychee')).toHaveLength(5);
    expect(q('lychee', { limit: 20 })).toHaveLength(20);
    const odd = q('lychee', { agent: 'odd', limit: 20 });
    expect(odd).toHaveLength(15);
    expect(odd.every((h) => h.agent === 'odd')).toBe(true);
    expect(q('lychee', { sender: 's4' }).map((h) => h.sender)).toEqual(['s4']);
  });

  it('forgets a deleted conversation', () => {
    const id = conversation('a', 'gone', [user('quince jam'), assistant('ok')]);
    expect(q('quince')).toHaveLength(1);
    store.delete(id);
    expect(q('quince')).toEqual([]);
    expect(db.prepare('SELECT count(*) AS n FROM messages_fts').get()).toEqual({ n: 0 });
  });

  it('a one-word search weighs its word by the walk for its candidates, exactly as a filtered search counts it', () => {
    // Past IDF_COUNT_CAP matches in messages and in titles, so that both weights are estimated from the newest matches.
    // In a third of them, fewer than half (a word in most rows weighs the same floor however it is counted).
    for (let c = 0; c < 4 * IDF_COUNT_CAP; c++) {
      conversation('a', `s${c}`, [user(c % 3 ? `word ${c}` : `common ${c % 7 ? 'word' : 'common'} ${c}`), assistant(c % 5 ? 'other' : 'a common reply')]);
    }
    const unfiltered = q('common', { limit: 20 });
    expect(unfiltered).toHaveLength(20);
    // The filter allows every conversation, so it finds the same candidates, but counts the word with walks of its own.
    expect(q('common', { limit: 20, agent: 'a' })).toEqual(unfiltered);
  });

  it('a filter allowing more than NARROW_FILTER_ROWS messages walks the matches instead of its messages, with the same result', () => {
    const many = Array.from({ length: NARROW_FILTER_ROWS + 2 }, (_, i) => (i === 5 ? user('the walrus is here') : i % 2 ? assistant(`reply ${i}`) : user(`message ${i}`)));
    conversation('wide', 'big', many);
    conversation('narrow', 'small', [user('hello'), assistant('a walrus too')]);
    expect(q('walrus', { agent: 'wide' }).map((h) => [h.sender, h.msg_idx])).toEqual([['big', 5]]);
    expect(q('walrus', { agent: 'narrow' }).map((h) => [h.sender, h.msg_idx])).toEqual([['small', 1]]);
    expect(q('walrus', { agent: 'wide', sender: 'small' })).toEqual([]);
    expect(q('walrus').map((h) => h.sender)).toEqual(['big', 'small']);
  });
});
