/**
 * The stores the storage contract's tests run on (SQLite always, PostgreSQL
 * when a server answers), and the fixture each test uses: a fresh store, a
 * shard's and a storage thread's storage on it, and small writers.
 */
import { afterEach, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SCHEMA_VERSION } from '../../src/storage/sqlite/db.ts';
import { createWriteLockBuffer, WriteLock } from '../../src/storage/sqlite/write-lock.ts';
import { SqliteDaemonStorage } from '../../src/storage/sqlite/daemon-store.ts';
import { createLogger } from '../../src/shared/log.ts';
import { StopReason } from '../../src/shared/protocol.ts';
import type { SearchOptions } from '../../src/threads/storage/messages.ts';
import type { Message } from '../../src/models/types.ts';
import type { ConversationRef, ConversationStorage, DaemonStorage, TurnOutcome } from '../../src/storage/contract.ts';
import type { SessionHit } from '../../src/shared/wire/ops.ts';
import { createPgConversationStorage, createPgDaemonStorage } from '../../src/storage/postgres/store.ts';
import { PG_SCHEMA_VERSION } from '../../src/storage/postgres/schema.ts';
import { createTestDatabase, needPostgres } from './postgres.ts';
import { InProcessWriter } from './sqlite-writer.ts';

const log = createLogger('silent');

/** One store under test: storages opened on it, and the few backend-specific moves the contract's tests need. */
export interface StoreUnderTest {
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

export interface Backend {
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

export const backends: Backend[] = [sqlite, postgres];

export const user = (content: string): Message => ({ role: 'user', content });
export const assistant = (content: string): Message => ({ role: 'assistant', content });
export const ref = (agent: string, sender: string, stored = 0, dbId: number | null = null): ConversationRef => ({ dbId, agent, sender, title: '', stored });
export const outcomeOf = (turnId: string, finalText: string): TurnOutcome => ({
  turnId, agent: 'a', model: 'echo', stopReason: StopReason.Text, error: '', usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 }, finalText,
});

/** One test's store and the storages on it; `fresh()` opens them (each test calls it first). */
export interface ContractFixture {
  readonly store: StoreUnderTest;
  readonly shard: ConversationStorage;
  readonly daemon: DaemonStorage;
  fresh(): Promise<void>;
  /** Opens a store and nothing on it: the test prepares it itself. */
  openStore(): Promise<void>;
  /** Writes one conversation in one turn and returns its row id. */
  conversation(agent: string, sender: string, messages: Message[]): Promise<number>;
  /** A search with the protocol's defaults, `o` overriding them. */
  q(query: string, o?: Partial<SearchOptions>): Promise<SessionHit[]>;
}

/**
 * The fixture for a describe block over `backend`, its store disposed after
 * each test; null (and one skipped test saying why) when the backend is not here.
 */
export function contractFixture(backend: Backend): ContractFixture | null {
  if (backend.skip !== null) {
    it.skip(backend.skip, () => undefined);
    return null;
  }
  let store: StoreUnderTest | undefined;
  let shard: ConversationStorage | undefined;
  let daemon: DaemonStorage | undefined;
  afterEach(async () => {
    await store?.dispose();
    store = shard = daemon = undefined;
  });
  const f: ContractFixture = {
    get store() {
      return store!;
    },
    get shard() {
      return shard!;
    },
    get daemon() {
      return daemon!;
    },
    async fresh() {
      store = await backend.open();
      daemon = await store.daemon();
      await daemon.prepare({});
      shard = await store.conversations();
    },
    async openStore() {
      store = await backend.open();
    },
    async conversation(agent, sender, messages) {
      const conv = ref(agent, sender);
      expect(await f.shard.writeTurns([{ conv, messages }])).toEqual([null]);
      return conv.dbId!;
    },
    q: (query, o = {}) => f.daemon.search({ query, limit: 5, contextBefore: 4, contextAfter: 4, agent: null, sender: null, ...o }),
  };
  return f;
}
