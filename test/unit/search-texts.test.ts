/**
 * A big message is read for search in slices (search-texts.ts), never whole:
 * it must rank and show exactly as when read whole. Checked as properties
 * (fast-check) of the two parts that see slices, the phrase counter and the
 * snippet, and end to end on a real database with slices of a few characters.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Db } from '../../src/storage/sqlite/db.ts';
import type { ConversationStore } from '../../src/storage/sqlite/store.ts';
import { SessionSearch, type SearchOptions } from '../../src/storage/sqlite/search.ts';
import { Bm25Stats, MAX_HELD_TOKEN, MESSAGES_FTS } from '../../src/storage/sqlite/search-bm25.ts';
import { snippetOf, snippetOfSlices, type SliceRead } from '../../src/storage/search-rules.ts';
import type { Message } from '../../src/models/types.ts';
import { piecesAt } from '../helpers/cuts.ts';
import { freshStore } from '../helpers/sqlite-store.ts';

let db: Db;
let store: ConversationStore;

beforeEach(() => {
  ({ db, store } = freshStore('texts'));
});

/** Text over a small alphabet: words repeat, separators vary, some characters fold (case, accents), some take two UTF-16 units. */
const TEXT_CHARS = ['a', 'b', 'A', 'é', 'ж', '日', ' ', ' ', '.', '_', '🦀', '1', 'Σ', 'ς', 'İ'];
const textArb = fc.array(fc.constantFrom(...TEXT_CHARS), { minLength: 0, maxLength: 400, size: 'max' }).map((cs) => cs.join(''));
/** Text no query word matches, so that the first match may lie further in than a snippet's lead. */
const noiseArb = fc.array(fc.constantFrom('x', 'y', ' ', 'ü', '.', '😀', 'İ'), { maxLength: 700, size: 'max' }).map((cs) => cs.join(''));
const wordArb = fc.array(fc.constantFrom('a', 'b', 'e', 'ж', '日', '1', 'σ'), { minLength: 1, maxLength: 3 }).map((cs) => cs.join(''));

/** Cuts `text` into pieces on character boundaries (a slice from SQLite never splits a character). */
function piecesOf(text: string, cuts: number[]): string[] {
  const chars = [...text];
  return piecesAt(chars.length, cuts, (from, to) => chars.slice(from, to).join(''));
}

describe('a text read in pieces', () => {
  it('scores exactly as the whole text, wherever the pieces are cut', () => {
    const stats = new Bm25Stats(db, MESSAGES_FTS);
    fc.assert(
      fc.property(textArb, textArb, fc.array(wordArb, { minLength: 1, maxLength: 3 }), fc.array(fc.nat(), { maxLength: 40 }), (user, assistant, words, cuts) => {
        const score = stats.scorer(words);
        const whole = score([user, assistant, 'tool']);
        expect(score([piecesOf(user, cuts), piecesOf(assistant, cuts.map((c) => c * 7)), 'tool'])).toBeCloseTo(whole, 12);
      }),
      { numRuns: 300 },
    );
  });

  it(`counts a token longer than ${MAX_HELD_TOKEN} characters across pieces once`, () => {
    const score = new Bm25Stats(db, MESSAGES_FTS).scorer(['kiwi']);
    const text = `kiwi ${'x'.repeat(3 * MAX_HELD_TOKEN)} kiwi kiwi`;
    const cuts = Array.from({ length: 40 }, (_, i) => 1 + i * 333);
    expect(score([piecesOf(text, cuts), '', ''])).toBeCloseTo(score([text, '', '']), 12);
  });

  it(`counts a query word longer than ${MAX_HELD_TOKEN} characters cut between pieces as the whole text does`, () => {
    const long = 'k'.repeat(MAX_HELD_TOKEN + 500);
    const score = new Bm25Stats(db, MESSAGES_FTS).scorer([long, 'kiwi']);
    const text = `kiwi ${long} kiwi ${long}x ${long}`;
    const cuts = Array.from({ length: 30 }, (_, i) => 7 + i * 1_111);
    const whole = score([text, '', '']);
    expect(whole).toBeGreaterThan(0);
    expect(score([piecesOf(text, cuts), '', ''])).toBeCloseTo(whole, 12);
  });

  it('shows the snippet of the whole text, whatever the slice size', () => {
    fc.assert(
      fc.property(noiseArb, textArb, fc.array(wordArb, { minLength: 1, maxLength: 3 }), fc.integer({ min: 1, max: 50 }), fc.integer({ min: 8, max: 64 }), (noise, text, words, chars, bytes) => {
        const whole = noise + text;
        fc.pre(Buffer.byteLength(whole) > bytes);
        const characters = [...whole];
        const read = ({ start, n }: SliceRead): string => characters.slice(start, start + n).join('');
        expect(snippetOfSlices(read, words, bytes, chars)).toEqual(snippetOf(whole, words, bytes));
      }),
      { numRuns: 500 },
    );
  });

  it('finds a long word cut by the end of a slice before a shorter one later in that slice', () => {
    // Slices of 10 characters step by 8 (they overlap by the longest word less one): "abc" starts at
    // offset 8 of the slice [296, 306), which holds only its "ab"; "b" is found there at 305.
    const text = `${Array.from({ length: 304 }, (_, i) => String.fromCharCode(0x4e00 + i)).join('')}abc tail`;
    const read = ({ start, n }: SliceRead): string => [...text].slice(start, start + n).join('');
    expect(snippetOfSlices(read, ['abc', 'b'], 16, 10)).toEqual(snippetOf(text, ['abc', 'b'], 16));
  });
});

describe('session search over messages read in slices', () => {
  const user = (content: string): Message => ({ role: 'user', content });
  const assistant = (content: string): Message => ({ role: 'assistant', content });
  const search = (s: SessionSearch, query: string, o: Partial<SearchOptions> = {}) =>
    s.search({ query, limit: 10, contextBefore: 2, contextAfter: 2, agent: null, sender: null, ...o });

  it('ranks and shows exactly as when every text is read whole', () => {
    const filler = (n: number, seed: number): string => Array.from({ length: n }, (_, i) => ['lorem', 'ipsum', 'dolor', 'Crème', 'жук'][(i * seed) % 5]).join(' ');
    for (let c = 0; c < 12; c++) {
      store.appendTurn({ dbId: null, agent: 'a', sender: `s${c}`, title: '', stored: 0 }, [
        user(`${filler(300 + c * 40, c + 1)} kiwi ${filler(50, c + 2)}${c % 3 ? ' kiwi_bird' : ''}`),
        { role: 'assistant', content: `${filler(400, c + 3)} ${c % 2 ? 'KIWI' : 'papaya'} ${filler(20, 1)}`, tool_calls: c % 4 ? undefined : [{ id: 't', name: 'kiwi_lookup', arguments: '{}' }] },
        { role: 'tool', content: 'kiwi secret', tool_call_id: 't', name: 'kiwi_lookup' },
        assistant(`short reply ${c}`),
      ]);
    }
    const whole = new SessionSearch(db);
    const sliced = new SessionSearch(db, undefined, { wholeTextBytes: 0, sliceChars: 7 });
    for (const query of ['kiwi', 'papaya kiwi', 'жук bird', 'creme lookup', 'absent']) {
      const a = search(whole, query);
      const b = search(sliced, query);
      expect(b.map((h) => [h.sender, h.msg_idx, h.window]), query).toEqual(a.map((h) => [h.sender, h.msg_idx, h.window]));
      b.forEach((h, i) => expect(h.score, query).toBeCloseTo(a[i]!.score, 9));
    }
    expect(search(sliced, 'kiwi', { limit: 20 }).length).toBe(12);
  });
});
