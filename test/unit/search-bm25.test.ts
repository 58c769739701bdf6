/** search-bm25.ts scores as FTS5's bm25() does, at a bounded cost: checked against bm25() on a real index. */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/sqlite/db.ts';
import type { ConversationStore } from '../../src/storage/sqlite/store.ts';
import { SearchIndex } from '../../src/storage/sqlite/search-index.ts';
import { Bm25Stats, CONVERSATIONS_FTS, IDF_COUNT_CAP, MESSAGES_FTS, tokens } from '../../src/storage/sqlite/search-bm25.ts';
import { queryWords, ftsQuery } from '../../src/storage/search-rules.ts';
import type { Message } from '../../src/models/types.ts';
import { freshStore } from '../helpers/sqlite-store.ts';

let db: Db;
let store: ConversationStore;
let index: SearchIndex;

beforeEach(() => {
  ({ db, store } = freshStore('bm25'));
  index = new SearchIndex(db);
});

const user = (content: string): Message => ({ role: 'user', content });
const assistant = (content: string): Message => ({ role: 'assistant', content });

/** Every matching row's score from FTS5's bm25() (same weights) beside search-bm25.ts's. */
function bothScores(query: string): [number, number][] {
  index.catchUpAll(10_000);
  const rows = db
    .prepare<[string], { user_text: string; assistant_text: string; tool_names: string; fts: number }>(
      // The index is contentless: the text, exactly as indexed, comes from messages_searchable.
      `SELECT s.user_text, s.assistant_text, s.tool_names, -bm25(messages_fts, 1.5, 1.0, 1.0) AS fts
       FROM messages_fts f JOIN messages_searchable s ON s.id = f.rowid WHERE messages_fts MATCH ?`,
    )
    .all(ftsQuery(query)!);
  const score = new Bm25Stats(db, MESSAGES_FTS).scorer(queryWords(query)!);
  return rows.map((r) => [r.fts, score([r.user_text, r.assistant_text, r.tool_names])]);
}

describe('bounded bm25', () => {
  it('tokenizes as unicode61 with remove_diacritics: case and Latin accents folded, `_` and punctuation separate', () => {
    expect(tokens('Crème BRÛLÉE, foo_bar v3.14 日本語')).toEqual(['creme', 'brulee', 'foo', 'bar', 'v3', '14', '日本語']);
  });

  it('agrees with FTS5 bm25() when every word has fewer than IDF_COUNT_CAP matches', () => {
    const texts = [
      'the kiwi is a bird', 'kiwi kiwi kiwi', 'a long message about many things and once a kiwi somewhere in it among other words',
      'Crème brûlée with KIWI', 'foo_bar and foo bar and bar foo', 'nothing to see', 'bird bird kiwi bird', 'ΛΟΓΟΣ λογος kiwi',
    ];
    for (let c = 0; c < 20; c++) {
      store.appendTurn({ dbId: null, agent: 'a', sender: `s${c}`, title: '', stored: 0 }, [
        user(texts[c % texts.length]!),
        { role: 'assistant', content: texts[(c + 3) % texts.length]!, tool_calls: c % 3 ? undefined : [{ id: 'x', name: 'kiwi_lookup', arguments: '{"kiwi":1}' }] },
        { role: 'tool', content: 'kiwi secret', tool_call_id: 'x', name: 'kiwi_lookup' },
        assistant(`reply ${c}`),
      ]);
    }
    for (const query of ['kiwi', 'bird kiwi', 'creme', 'foo_bar', 'lookup', 'brûlée bird nothing', 'λογοσ', 'ΛΟΓΟΣ']) {
      const pairs = bothScores(query);
      expect(pairs.length, query).toBeGreaterThan(0);
      for (const [fts, ours] of pairs) expect(ours, query).toBeCloseTo(fts, 9);
    }
  });

  it('past IDF_COUNT_CAP matches, estimates a word spread evenly close to its true count, and ranks the same', () => {
    // "common" in every other message, "rare" in a few: the common word's count is estimated.
    const messages = Array.from({ length: 3 * IDF_COUNT_CAP }, (_, i) => user(i % 2 ? `common word ${i}` : `other text ${i}${i % 500 === 0 ? ' rare' : ''}`));
    store.appendTurn({ dbId: null, agent: 'a', sender: 'many', title: '', stored: 0 }, messages);
    const pairs = bothScores('common rare');
    expect(pairs.length).toBeGreaterThan(IDF_COUNT_CAP);
    for (const [fts, ours] of pairs) expect(Math.abs(ours - fts)).toBeLessThan(0.01 * fts + 1e-6);
  });

  it('scores titles and compaction summaries as FTS5 bm25() does over conversations_fts', () => {
    for (let c = 0; c < 12; c++) {
      const id = store.appendTurn({ dbId: null, agent: 'a', sender: `s${c}`, title: '', stored: 0 }, [user(c % 3 ? `papaya notes ${c}` : 'hello'), assistant('ok')]);
      if (c % 4 === 0) store.setSummary(id, c % 8 ? 'all about papaya papaya and mango' : 'nothing much', 2);
    }
    for (const query of ['papaya', 'mango notes', 'hello']) {
      const rows = db
        .prepare<[string], { title: string; summary: string | null; fts: number }>('SELECT title, summary, -bm25(conversations_fts) AS fts FROM conversations_fts WHERE conversations_fts MATCH ?')
        .all(ftsQuery(query)!);
      expect(rows.length, query).toBeGreaterThan(0);
      const score = new Bm25Stats(db, CONVERSATIONS_FTS).scorer(queryWords(query)!);
      for (const r of rows) expect(score([r.title, r.summary ?? '']), query).toBeCloseTo(r.fts, 9);
    }
  });
  it('counts an ASCII text read whole (its own fast path) as it counts the same text in pieces', () => {
    store.appendTurn({ dbId: null, agent: 'a', sender: 's', title: '', stored: 0 }, [user('Foo bar foo_bar v3 14 kiwi')]);
    index.catchUpAll(10_000);
    const texts = [
      'foo_bar FOO-bar foobar foo  bar x foo', 'Foo, foo; FOO. foo_foo_bar', 'v3.14 v314 V3 14 14v3', '', '___', 'kiwi',
      'bar foo bar foo bar', 'a foo_bar_baz and foo bar baz', '  trailing foo', 'foo',
    ];
    for (const query of ['foo', 'foo_bar', 'bar foo', 'v3_14', 'v3 14 kiwi', 'foo_bar_baz', 'zzz']) {
      const score = new Bm25Stats(db, MESSAGES_FTS).scorer(queryWords(query)!);
      for (const text of texts) {
        const inPieces = [text.slice(0, 3), text.slice(3)];
        expect(score([text, text, '']), `${query} in ${text}`).toBeCloseTo(score([inPieces, inPieces, ['']]), 12);
      }
    }
  });
});
