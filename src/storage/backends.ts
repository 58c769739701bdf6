/**
 * The store URL's backend: what a shard and a storage-pool thread open.
 * SQLite is built in; PostgreSQL lives in ./pg-store (loaded only when a
 * postgres:// URL asks for it, so SQLite users never load its driver).
 * The write lock and the turn writer thread are SQLite details: a server orders its own writers.
 */
import { openDatabase } from './sqlite/db.ts';
import type { Logger } from '../shared/log.ts';
import type { StoreLocation } from '../shared/store-location.ts';
import type { FenceSource } from '../shared/partitions.ts';
import type { WriteLock } from './sqlite/write-lock.ts';
import type { ConversationStorage, DaemonStorage } from './contract.ts';
import { SqliteConversationStorage } from './sqlite/store.ts';
import { SqliteDaemonStorage } from './sqlite/daemon-store.ts';
import type { WriterClient } from '../threads/writer/writer-client.ts';
import { writerFaultsInjected } from '../threads/writer/messages.ts';

/** What ./pg-store exports. */
export interface PgStoreModule {
  createPgConversationStorage(url: string, log: Logger, fences?: FenceSource | null): ConversationStorage | Promise<ConversationStorage>;
  createPgDaemonStorage(url: string, log: Logger): DaemonStorage | Promise<DaemonStorage>;
}

// From source the module is postgres/store.ts (workers register tsx); built, postgres/store.js.
const PG_MODULE = new URL(import.meta.url.endsWith('.ts') ? './postgres/store.ts' : './postgres/store.js', import.meta.url);

function loadPgStore(): Promise<PgStoreModule> {
  return import(PG_MODULE.href) as Promise<PgStoreModule>;
}

/**
 * A shard's conversations. SQLite: `writer` is its client of the turn writer
 * thread, which main starts for SQLite. `fences`: cluster mode only (a
 * PostgreSQL store): every write checks its pair's token.
 */
export async function openConversationStorage(
  store: StoreLocation,
  lock: WriteLock,
  writer: WriterClient | null,
  log: Logger,
  fences: FenceSource | null = null,
): Promise<ConversationStorage> {
  if (store.kind === 'sqlite') {
    if (writer === null) throw new Error('a SQLite store needs the turn writer thread');
    return new SqliteConversationStorage(openDatabase(store.path), lock, writer, !writerFaultsInjected());
  }
  return (await loadPgStore()).createPgConversationStorage(store.url, log, fences);
}

/** A storage-pool thread's daemon-wide store. Opens nothing before `prepare` has checked the schema. */
export async function openDaemonStorage(store: StoreLocation, lock: WriteLock, log: Logger, pageCacheKib?: number): Promise<DaemonStorage> {
  if (store.kind === 'sqlite') return new SqliteDaemonStorage(store.path, lock, pageCacheKib);
  return (await loadPgStore()).createPgDaemonStorage(store.url, log);
}
