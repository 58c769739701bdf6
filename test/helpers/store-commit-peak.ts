/**
 * Run as its own process (test/unit/store-commit-memory.test.ts): stores one
 * turn whose user message is argv[2] MiB of text, as the turn writer thread
 * does (ConversationStore.writeTurns on its connection), and prints
 * how far the process's peak resident memory (VmHWM) rose during the commit,
 * in bytes, and how the message was stored. Alone in a fresh process so that
 * nothing else moves the peak.
 */
import { rmSync } from 'node:fs';
import { freshStore } from './sqlite-store.ts';
import { bigWords } from './big-bodies.ts';
import { peakResident } from './resident-memory.ts';

const MIB = 1024 * 1024;
const size = Number(process.argv[2] ?? 16) * MIB;

const { dir, db, store } = freshStore('commit-peak');
try {
  const text = bigWords(size / MIB);
  const conv = { dbId: null, agent: 'a', sender: 's', title: '', stored: 0 };
  // A first small turn: the statements and the conversation's row exist before the measure.
  store.writeTurns([{ conv, messages: [{ role: 'user', content: 'warm up' }], outcome: null }]);
  conv.stored = 1;
  const before = peakResident('self');
  const [result] = store.writeTurns([{ conv, messages: [{ role: 'user', content: text }], outcome: null }]);
  if (result instanceof Error) throw result;
  const growth = peakResident('self') - before;
  const stored = db.prepare('SELECT typeof(content) AS type, length(content) AS n FROM messages WHERE idx = 1').get();
  process.stdout.write(JSON.stringify({ growth, stored }));
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
