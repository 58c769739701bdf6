/**
 * Run as its own process (test/unit/store-commit-memory.test.ts): stores one
 * turn whose user message is argv[2] MiB of text, as the turn writer thread
 * does (ConversationStore.writeTurns on its connection), and prints
 * how far the process's peak resident memory (VmHWM) rose during the commit,
 * in bytes, and how the message was stored. Alone in a fresh process so that
 * nothing else moves the peak.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate, openDatabase } from '../../src/shared/db.ts';
import { createWriteLockBuffer, ownerToken, WriteLock } from '../../src/shared/write-lock.ts';
import { ConversationStore } from '../../src/worker/store.ts';

const MIB = 1024 * 1024;
const size = Number(process.argv[2] ?? 16) * MIB;
const peak = (): number => Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;

const dir = mkdtempSync(join(tmpdir(), 'agentd-commit-peak-'));
try {
  const path = join(dir, 'agentd.db');
  const db = openDatabase(path);
  migrate(db, path);
  const store = new ConversationStore(db, new WriteLock(createWriteLockBuffer(), ownerToken(0)));
  // Flat, as a shard's decoded content is (a repeat() result is a rope that binding would flatten),
  // and joined from 1 MiB pieces, so that no freed 16 MiB block is left for the insert to reuse.
  const text = new Array<string>(size / MIB).fill(Buffer.alloc(MIB, 'w ').toString('latin1')).join('');
  const conv = { dbId: null, agent: 'a', sender: 's', title: '', stored: 0 };
  // A first small turn: the statements and the conversation's row exist before the measure.
  store.writeTurns([{ conv, messages: [{ role: 'user', content: 'warm up' }], outcome: null }]);
  conv.stored = 1;
  const before = peak();
  const [result] = store.writeTurns([{ conv, messages: [{ role: 'user', content: text }], outcome: null }]);
  if (result instanceof Error) throw result;
  const growth = peak() - before;
  const stored = db.prepare('SELECT typeof(content) AS type, length(content) AS n FROM messages WHERE idx = 1').get();
  process.stdout.write(JSON.stringify({ growth, stored }));
  db.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
