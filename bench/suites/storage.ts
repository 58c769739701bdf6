/**
 * Storage: stored echo turns per second on SQLite beside PostgreSQL and the
 * same load with persistence off, and search latency over 100,000 stored
 * messages on SQLite beside PostgreSQL and `ping` on the same daemon, and
 * of a search that matches no message (the least one costs) beside `ping`.
 *
 * PostgreSQL rows use a database of their own on the server
 * AGENTD_TEST_PG_URL names (default 127.0.0.1:5432, as for the tests),
 * created for the run and dropped after it; without a server they are skipped
 * and the run says so.
 */
import { join } from 'node:path';
import { frameClient } from '../lib/clients.ts';
import { turnBody, type BenchContext } from '../lib/context.ts';
import { latency, throughput, warmFor } from '../lib/load.ts';
import { startAgentd, type Proc } from '../lib/processes.ts';
import { Report } from '../lib/report.ts';
import { prepareDatabaseFile, openDatabase } from '../../src/storage/sqlite/db.ts';
import { ConversationStore } from '../../src/storage/sqlite/store.ts';
import { createWriteLockBuffer, WriteLock } from '../../src/storage/sqlite/write-lock.ts';
import { createLogger } from '../../src/shared/log.ts';
import { createPgConversationStorage } from '../../src/storage/postgres/store.ts';
import type { Message } from '../../src/models/types.ts';
import type { TurnRecord } from '../../src/storage/contract.ts';
import { createTestDatabase, pgUnavailable, type TestDatabase } from '../../test/helpers/postgres.ts';

const AGENTS = { assistant: { model: 'echo' } };
/**
 * Untimed searches on each store before its rounds (see searchLatency): on
 * SQLite the p50 goes on falling for a few thousand searches, and a few
 * hundred leave the timed rounds on the way down. PostgreSQL's searches
 * cost several times more, hence the time cap.
 */
const SEARCH_WARM = { searches: 3_072, maxMs: 6_000 };

/** A deterministic word list and generator, so every run searches the same corpus. */
export function corpus(seed: number): { words: string[]; next: () => number } {
  let x = seed;
  const next = (): number => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return x / 2 ** 32;
  };
  const syll = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'pa', 'go', 'hu'];
  const words: string[] = [];
  for (let i = 0; i < 3000; i++) words.push(Array.from({ length: 2 + Math.floor(next() * 3) }, () => syll[Math.floor(next() * syll.length)]).join(''));
  return { words, next };
}

/** The search corpus: the same conversations, in the same order, on every store. */
export const MESSAGES = 100_000;
const PER_CONVERSATION = 50;
export function* seedConversations(): Generator<{ sender: string; messages: Message[] }> {
  const { words, next } = corpus(42);
  const sentence = (): string => Array.from({ length: 8 + Math.floor(next() * 20) }, () => words[Math.floor(next() * words.length)]).join(' ');
  for (let c = 0; c < MESSAGES / PER_CONVERSATION; c++) {
    const messages = Array.from({ length: PER_CONVERSATION }, (_, i): Message => ({ role: i % 2 ? 'assistant' : 'user', content: sentence() }));
    yield { sender: `seed-${c}`, messages };
  }
}

/** Seeds a SQLite home through the shards' own store code. */
function seedSqlite(home: string): void {
  const path = join(home, 'agentd.db');
  prepareDatabaseFile(path);
  const db = openDatabase(path);
  const store = new ConversationStore(db, new WriteLock(createWriteLockBuffer(), 1));
  db.transaction(() => {
    for (const { sender, messages } of seedConversations()) store.appendTurn({ dbId: null, agent: 'assistant', sender, title: '', stored: 0 }, messages);
  })();
  db.close();
}

/** Writes the corpus through a store's group commit, 40 conversations a commit. */
export async function seedInGroupCommits(write: (turns: TurnRecord[]) => Promise<(Error | null)[]>): Promise<void> {
  let batch: TurnRecord[] = [];
  const flush = async (): Promise<void> => {
    const failed = (await write(batch)).find((r) => r !== null);
    if (failed) throw failed;
    batch = [];
  };
  for (const { sender, messages } of seedConversations()) {
    batch.push({ conv: { dbId: null, agent: 'assistant', sender, title: '', stored: 0 }, messages });
    if (batch.length === 40) await flush();
  }
  if (batch.length > 0) await flush();
}

/** Seeds a PostgreSQL store (its schema made by the daemon on it) through its own ConversationStorage. */
async function seedPostgres(url: string): Promise<void> {
  const shard = await createPgConversationStorage(url, createLogger('silent'));
  try {
    await seedInGroupCommits((turns) => shard.writeTurns(turns));
  } finally {
    await shard.close();
  }
}

/** A database for the PostgreSQL rows, or null (said on the progress line) when no server answers. */
async function benchDatabase(): Promise<TestDatabase | null> {
  const why = await pgUnavailable();
  if (why === null) return createTestDatabase();
  Report.progress(`storage: PostgreSQL rows skipped: ${why}`);
  return null;
}

export async function run(ctx: BenchContext): Promise<void> {
  const pgTurns = await benchDatabase();
  try {
    await storedTurns(ctx, pgTurns);
  } finally {
    await pgTurns?.drop();
  }
  const pgSearch = await benchDatabase();
  try {
    await searchLatency(ctx, pgSearch);
  } finally {
    await pgSearch?.drop();
  }
}

async function storedTurns(ctx: BenchContext, pg: TestDatabase | null): Promise<void> {
  const { rateMs, warmupMs } = ctx.sizes;
  const stored = await startAgentd(ctx.workers, AGENTS);
  const onPostgres = pg === null ? null : await startAgentd(ctx.workers, AGENTS, { store: pg.url });
  const memory = await startAgentd(ctx.workers, AGENTS, { persist: false });
  try {
    const systems = [
      { name: 'agentd (SQLite)', proc: stored },
      ...(onPostgres === null ? [] : [{ name: 'agentd (PostgreSQL)', proc: onPostgres }]),
      { name: 'persist off', proc: memory },
    ];
    const measure = async (sys: (typeof systems)[number]): Promise<number[]> => {
      const cs = await Promise.all(Array.from({ length: 32 }, (_, i) => frameClient(sys.proc.unix, turnBody(`st${i}`))));
      const r = await throughput(cs, 8, rateMs, warmupMs);
      for (const c of cs) c.close();
      return [r];
    };
    // One pass each that does not count, so every counted round finds the same: a fresh daemon's first
    // seconds are mostly its compiler at work, and its first turns load each pair from the store.
    for (const sys of systems) await measure(sys);
    await ctx.report.compare('storage', [{ name: 'stored echo turns 32x8', unit: 'turns/s' }], systems, measure);
  } finally {
    await Promise.all([stored.stop(), onPostgres?.stop(), memory.stop()]);
  }
}

/** Search over the same 100,000 messages on each store, queried over the socket; `ping` on the SQLite daemon is the floor. */
async function searchLatency(ctx: BenchContext, pg: TestDatabase | null): Promise<void> {
  const seeded = await startAgentd(ctx.workers, AGENTS, {}, { seed: seedSqlite });
  let onPostgres = null;
  try {
    if (pg !== null) {
      onPostgres = await startAgentd(ctx.workers, AGENTS, { store: pg.url });
      await seedPostgres(pg.url);
    }
    Report.progress(`storage: seeded ${MESSAGES} messages${pg === null ? '' : ' on SQLite and on PostgreSQL'}`);
    const queriesOf = (seed: number): string[] => {
      const { words, next } = corpus(seed);
      return Array.from({ length: 512 }, () => Array.from({ length: 1 + Math.floor(next() * 2) }, () => words[Math.floor(next() * words.length)]).join(' '));
    };
    // A daemon that has searched a while, as one in production has: the search thread's code compiled,
    // its caches filled. Other queries than the timed ones, so no timed query finds its own pages warm.
    for (const d of [seeded, onPostgres]) {
      if (d === null) continue;
      const others = queriesOf(11);
      let w = 0;
      const warm = await frameClient(d.unix, () => ({ search_sessions: { query: others[w++ % others.length] } }));
      await warmFor(warm, ctx.quick ? 50 : SEARCH_WARM.searches, SEARCH_WARM.maxMs);
      warm.close();
    }
    const queries = queriesOf(7);
    let q = 0;
    const search = (): unknown => ({ search_sessions: { query: queries[q++ % queries.length] } });
    const ping = { name: 'ping (same daemon)', proc: seeded, body: () => ({ ping: {} }) };
    await searchRounds(ctx, `search_sessions over ${MESSAGES / 1000}k messages`, [
      { name: 'agentd (SQLite)', proc: seeded, body: search },
      ...(onPostgres === null ? [] : [{ name: 'agentd (PostgreSQL)', proc: onPostgres, body: search }]),
      ping,
    ]);
    // The least a search costs on this path: its trip to a search thread and back, and an index lookup that finds
    // nothing (no word of the corpus has a `q`). A ping wakes no thread but main; beside it, this row shows what the trip adds.
    let n = 0;
    const nothing = (): unknown => ({ search_sessions: { query: `zzq${n++ % 64}` } });
    await searchRounds(ctx, `search_sessions matching no message over ${MESSAGES / 1000}k`, [{ name: 'agentd (SQLite)', proc: seeded, body: nothing }, ping]);
  } finally {
    await Promise.all([seeded.stop(), onPostgres?.stop()]);
  }
}

/** p50 and p99 of each system's requests, one at a time, in alternating rounds; the first system is the one reported. */
async function searchRounds(ctx: BenchContext, measure: string, systems: { name: string; proc: Proc; body: () => unknown }[]): Promise<void> {
  await ctx.report.compare(
    'storage',
    ['p50', 'p99'].map((p) => ({ name: `${measure} ${p}`, unit: 'us' })),
    systems,
    async (sys) => {
      const c = await frameClient(sys.proc.unix, sys.body);
      const r = await latency(c, ctx.quick ? 200 : 500, 20);
      c.close();
      return [r.p50, r.p99];
    },
  );
}
