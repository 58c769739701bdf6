/**
 * The two stores themselves, side by side in one run, without a daemon:
 * PostgreSQL's ConversationStorage and search beside SQLite's, on the same
 * 100,000-message corpus (bench/suites/storage.ts). Group commits per second
 * (16 new two-message turns each), loading a 50-message conversation, and
 * session search p50.
 *
 *   node --import tsx bench/store-direct.ts [--quick]
 *
 * The PostgreSQL database is created for the run and dropped after it, on the
 * server AGENTD_TEST_PG_URL names (default 127.0.0.1:5432).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createLogger } from '../src/shared/log.ts';
import { openDatabase, prepareDatabaseFile } from '../src/storage/sqlite/db.ts';
import { createWriteLockBuffer, WriteLock } from '../src/storage/sqlite/write-lock.ts';
import { ConversationStore } from '../src/storage/sqlite/store.ts';
import { SessionSearch } from '../src/storage/sqlite/search.ts';
import { createPgConversationStorage, createPgDaemonStorage } from '../src/storage/postgres/store.ts';
import type { ConversationStorage, DaemonStorage, TurnRecord } from '../src/storage/contract.ts';
import type { SearchOptions } from '../src/threads/storage/messages.ts';
import { createTestDatabase, pgUnavailable } from '../test/helpers/postgres.ts';
import { corpus, MESSAGES, seedInGroupCommits } from './suites/storage.ts';
import { median } from './lib/load.ts';
import { Report } from './lib/report.ts';

/** What is measured, on either store. */
interface Store {
  name: string;
  writeTurns(turns: TurnRecord[]): Promise<unknown>;
  load(sender: string): Promise<unknown>;
  search(o: SearchOptions): Promise<unknown>;
}

const { values } = parseArgs({ options: { quick: { type: 'boolean' } } });
const quick = values.quick === true;
const report = new Report(quick ? 3 : 5);
const why = await pgUnavailable();
if (why !== null) {
  console.error(why);
  process.exit(2);
}

const log = createLogger('silent');
const pgDb = await createTestDatabase();
const home = mkdtempSync(join(tmpdir(), 'agentd-store-bench-'));
let pgShard: ConversationStorage | undefined;
let pgDaemon: DaemonStorage | undefined;
try {
  pgDaemon = await createPgDaemonStorage(pgDb.url, log);
  await pgDaemon.prepare({});
  pgShard = await createPgConversationStorage(pgDb.url, log);
  const shard = pgShard;
  const daemon = pgDaemon;
  const path = join(home, 'agentd.db');
  prepareDatabaseFile(path);
  const db = openDatabase(path);
  const sqlite = new ConversationStore(db, new WriteLock(createWriteLockBuffer(), 1));
  const sqliteSearch = new SessionSearch(db);

  const started = performance.now();
  await seedInGroupCommits((turns) => shard.writeTurns(turns));
  const pgSeedMs = performance.now() - started;
  const sqliteStarted = performance.now();
  await seedInGroupCommits(async (turns) => sqlite.writeTurns(turns).map((r) => (r instanceof Error ? r : null)));
  Report.progress(`seeded ${MESSAGES} messages: PostgreSQL ${(pgSeedMs / 1000).toFixed(1)} s, SQLite ${((performance.now() - sqliteStarted) / 1000).toFixed(1)} s`);

  const stores: Store[] = [
    { name: 'PostgreSQL', writeTurns: (t) => shard.writeTurns(t), load: (s) => shard.load('assistant', s), search: (o) => daemon.search(o) },
    { name: 'SQLite', writeTurns: async (t) => sqlite.writeTurns(t), load: async (s) => sqlite.load('assistant', s), search: async (o) => sqliteSearch.search(o) },
  ];
  await measure(stores);
  db.close();
} finally {
  await Promise.allSettled([pgShard?.close(), pgDaemon?.close()]);
  await pgDb.drop();
  rmSync(home, { recursive: true, force: true });
}
process.stdout.write(`${report.table()}\n\nratio = PostgreSQL / SQLite (lower is better for µs, higher for rates)\n`);

async function measure(stores: Store[]): Promise<void> {
  let fresh = 0;
  const commits = quick ? 100 : 400;
  const samples = quick ? 200 : 1000;
  const { words, next } = corpus(7);
  const queries = Array.from({ length: 512 }, () => Array.from({ length: 1 + Math.floor(next() * 2) }, () => words[Math.floor(next() * words.length)]).join(' '));
  await report.compare(
    'store',
    [
      { name: 'group commits of 16 new two-message turns', unit: 'commits/s' },
      { name: 'load a 50-message conversation p50', unit: 'us' },
      { name: `search over ${MESSAGES / 1000}k messages p50`, unit: 'us' },
    ],
    stores,
    async (store) => {
      const t0 = performance.now();
      for (let i = 0; i < commits; i++) {
        const turns = Array.from({ length: 16 }, (): TurnRecord => ({
          conv: { dbId: null, agent: 'bench', sender: `w${fresh++}`, title: '', stored: 0 },
          messages: [{ role: 'user', content: 'hello there' }, { role: 'assistant', content: 'hello there' }],
        }));
        await store.writeTurns(turns);
      }
      const rate = commits / ((performance.now() - t0) / 1000);
      const load = await timed(samples, (i) => store.load(`seed-${(i * 7919) % 2000}`));
      const search = await timed(samples, (i) => store.search({ query: queries[i % queries.length]!, limit: 5, contextBefore: 4, contextAfter: 4, agent: null, sender: null }));
      return [rate, load, search];
    },
  );
}

/** The median of `n` timed calls, in µs. */
async function timed(n: number, call: (i: number) => Promise<unknown>): Promise<number> {
  const us: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call(i);
    us.push((performance.now() - t0) * 1000);
  }
  return median(us);
}
