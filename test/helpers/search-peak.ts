/**
 * Run as its own process (test/unit/search-memory.test.ts): stores one turn
 * whose user and assistant messages are argv[2] MiB of text each, then
 * indexes them for search as a storage thread does, then runs one search
 * that matches both, and prints how far the process's peak resident memory
 * (VmHWM) rose above where it stood during each, in bytes, and the
 * search's hits. Alone in a fresh process so that nothing else moves it.
 */
import { rmSync } from 'node:fs';
import { openDatabase, SEARCH_CACHE_KIB } from '../../src/storage/sqlite/db.ts';
import { freshStore } from './sqlite-store.ts';
import { bigWords } from './big-bodies.ts';
import { peakResident, resetPeak } from './resident-memory.ts';
import { SearchIndex } from '../../src/storage/sqlite/search-index.ts';
import { SessionSearch, type SessionHit } from '../../src/storage/sqlite/search.ts';

const MIB = 1024 * 1024;
const size = Number(process.argv[2] ?? 16) * MIB;
/** Runs `fn` and returns how far resident memory peaked above where it stood (the peak is reset first). */
function growthDuring(fn: () => void): number {
  const before = resetPeak('self');
  fn();
  return peakResident('self') - before;
}

const { dir, path, db: writer, store } = freshStore('search-peak');
try {
  const small = { dbId: null, agent: 'a', sender: 'small', title: '', stored: 0 };
  store.writeTurns([{ conv: small, messages: [{ role: 'user', content: 'w w' }, { role: 'assistant', content: 'w' }], outcome: null }]);
  const text = bigWords(size / MIB);
  const big = { dbId: null, agent: 'a', sender: 'big', title: '', stored: 0 };
  const [result] = store.writeTurns([{ conv: big, messages: [{ role: 'user', content: text }, { role: 'assistant', content: text }], outcome: null }]);
  if (result instanceof Error) throw result;
  writer.close();

  // A search thread's connection of its own, as in the daemon (its page cache the search lane's, the larger).
  const db = openDatabase(path, { cacheKib: SEARCH_CACHE_KIB });
  const index = new SearchIndex(db);
  const search = new SessionSearch(db, index);
  const indexed = growthDuring(() => index.catchUpAll(500));
  let hits: SessionHit[] = [];
  const searched = growthDuring(() => (hits = search.search({ query: 'w', limit: 5, contextBefore: 1, contextAfter: 1, agent: null, sender: null })));
  const shown = hits.map((h) => ({ sender: h.sender, snippets: h.window.map((m) => m.snippet.length) }));
  process.stdout.write(JSON.stringify({ indexed, searched, hits: shown }));
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
