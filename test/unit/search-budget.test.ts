/**
 * A search stops at its budget (storage/search-budget.ts): past its
 * deadline or once cancelled it throws SearchStopped with the reason,
 * including between the slices of a big message; an unbounded one finds
 * its hits.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Db } from '../../src/storage/sqlite/db.ts';
import type { ConversationStore } from '../../src/storage/sqlite/store.ts';
import { SessionSearch, type SearchOptions } from '../../src/storage/sqlite/search.ts';
import { SearchBudget, SearchStopped, cancelSearch } from '../../src/storage/search-budget.ts';
import { MessageTexts } from '../../src/storage/sqlite/search-texts.ts';
import { freshStore } from '../helpers/sqlite-store.ts';

let db: Db;
let store: ConversationStore;

beforeEach(() => {
  ({ db, store } = freshStore('budget'));
  for (let i = 0; i < 3; i++) store.appendTurn({ dbId: null, agent: 'a', sender: `s${i}`, title: '', stored: 0 }, [{ role: 'user', content: 'pay the toll '.repeat(50) }]);
});

const options = (o: Partial<SearchOptions> = {}): SearchOptions => ({ query: 'pay', limit: 5, contextBefore: 0, contextAfter: 0, agent: null, sender: null, ...o });

/** What a search throws, or null when it returns. */
function stopOf(run: () => unknown): string | null {
  try {
    run();
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(SearchStopped);
    return (err as SearchStopped).reason;
  }
}

describe('search budget', () => {
  it('finds hits when unbounded or within its deadline', () => {
    const search = new SessionSearch(db);
    expect(search.search(options())).toHaveLength(3);
    expect(search.search(options({ deadline: Date.now() + 60_000, cancel: new SharedArrayBuffer(4) }))).toHaveLength(3);
  });

  it('stops past its deadline, and when cancelled, with the reason', () => {
    const search = new SessionSearch(db);
    expect(stopOf(() => search.search(options({ deadline: Date.now() - 1 })))).toBe('timeout');
    const cancel = new SharedArrayBuffer(4);
    cancelSearch(cancel);
    expect(stopOf(() => search.search(options({ deadline: Date.now() + 60_000, cancel })))).toBe('cancelled');
  });

  it('a big message read in slices stops at the next slice once cancelled', () => {
    const texts = new MessageTexts(db, { wholeTextBytes: 0, sliceChars: 16 });
    const { id, bytes } = db.prepare<[], { id: number; bytes: number }>('SELECT id, octet_length(content) AS bytes FROM messages ORDER BY id LIMIT 1').get()!;
    const cancel = new SharedArrayBuffer(4);
    const [user] = texts.inSlices(id, bytes, new SearchBudget(Infinity, cancel))!;
    const slices = (user as Iterable<string>)[Symbol.iterator]();
    expect(slices.next().done).toBe(false);
    cancelSearch(cancel);
    expect(stopOf(() => slices.next())).toBe('cancelled');
  });
});
