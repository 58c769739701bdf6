/**
 * The one database, $AGENTD_HOME/agentd.db: how every thread opens it and
 * how its schema moves forward. Each thread has its own connection (a
 * better-sqlite3 Database cannot cross threads). WAL lets shards write while
 * readers search; synchronous=NORMAL keeps commits off fsync but a crash
 * (even kill -9) still loses at most uncommitted turns.
 */
import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { AgentdError, Code } from '../../shared/errors.ts';
import { MIGRATIONS } from './migrations.ts';

export type Db = Database.Database;

const BUSY_TIMEOUT_MS = 5_000;

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Takes messages out of the index before they are deleted (`where`, a
 * condition on messages_searchable with `?` for its values, says which): FTS5 is given each one's indexed text again, exactly
 * as indexed (the view), which lowers the row count and token totals that
 * ranking reads. Only messages up to the watermark are in the index; taking
 * out one that is not would subtract what was never added.
 */
export function unindexMessages(where: string): string {
  return `
  INSERT INTO messages_fts (messages_fts, rowid, user_text, assistant_text, tool_names)
  SELECT 'delete', id, user_text, assistant_text, tool_names FROM messages_searchable
  WHERE ${where} AND id <= (SELECT message_id FROM fts_watermark)`;
}

/** The database's schema is newer than this agentd understands. */
export class SchemaError extends AgentdError {
  constructor(message: string) {
    super(Code.Internal, message);
    this.name = 'SchemaError';
  }
}

/**
 * Each connection's page cache, in KiB. better-sqlite3
 * builds SQLite with 16 MB; every thread has a connection, and a big message's
 * pages pass through the cache of the shard that writes it and of the storage
 * thread that indexes it, so that default held up to one more copy of a 16 MiB
 * request in each (measured: a 16 MiB row's insert peaked at about 3x its size
 * with it, 2x with this). 2 MiB is SQLite's own default; the file's pages stay in
 * the OS page cache for reads.
 */
const CACHE_KIB = 2000;

/**
 * The page cache of a search thread's connection (search-lane.ts), in KiB.
 * A search reads the index's doclists and then a few hundred candidate rows,
 * mostly among the newest messages, which every search shares: at the
 * default 2 MiB most of those reads copy a page in from the OS again. A big
 * message a search thread reads (to index or score it) leaves at most this
 * much behind, as with any connection's cache (the storage suite's search
 * rows in bench/results measure what it buys).
 */
export const SEARCH_CACHE_KIB = 8192;

export interface OpenOptions {
  readonly?: boolean;
  /** The connection's page cache (default CACHE_KIB). */
  cacheKib?: number;
}

export function openDatabase(path: string, options: OpenOptions = {}): Db {
  const db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  db.pragma(`cache_size = ${-(options.cacheKib ?? CACHE_KIB)}`); // negative: KiB
  if (!options.readonly) {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('foreign_keys = ON');
    // No connection checkpoints on commit: a checkpoint copies pages into the
    // database and syncs it, milliseconds that would land on whichever turn
    // crossed the threshold. The storage pool checkpoints in the background.
    db.pragma('wal_autocheckpoint = 0');
    // When a checkpoint resets the WAL, the file shrinks back to this size
    // instead of keeping its high-water size forever.
    db.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT_BYTES}`);
  }
  return db;
}

/** How often the storage pool moves the WAL into the database (and checks its size). */
export const CHECKPOINT_INTERVAL_MS = 500;

/**
 * How often the storage pool indexes newly committed messages for search, and
 * how many per transaction: small enough that a batch holds the write lock for
 * a few milliseconds, and repeated at once while batches come back full.
 */
export const INDEX_INTERVAL_MS = 50;
export const INDEX_BATCH = 500;

/** What a reset WAL file is cut back to. */
export const JOURNAL_SIZE_LIMIT_BYTES = 4 * 1024 * 1024;

/** How long a bounding checkpoint waits for readers of an older snapshot before giving up until the next tick. */
const BOUNDING_CHECKPOINT_WAIT_MS = 1_000;

export interface CheckpointResult {
  mode: 'PASSIVE' | 'TRUNCATE';
  /** 1 when SQLite could not finish (readers or a writer in the way). */
  busy: number;
  walBytesBefore: number;
}

/**
 * Keeps the WAL under `walMaxBytes`. A PASSIVE checkpoint never waits, so
 * under steady writes and overlapping readers it never reaches the end of the
 * WAL and the file only grows. Once the WAL passes half the bound, this takes
 * the shards' write lock (no shard can be mid-commit, and the wait is the
 * length of one commit) and runs TRUNCATE, which waits only for readers of an
 * older snapshot (brief: searches and history reads) and then empties the file.
 */
export function boundedCheckpoint(db: Db, walPath: string, walMaxBytes: number, withWriteLock: <T>(fn: () => T) => T): CheckpointResult {
  const walBytesBefore = fileSize(walPath);
  if (walBytesBefore <= walMaxBytes / 2) {
    const [row] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number }[];
    return { mode: 'PASSIVE', busy: row?.busy ?? 0, walBytesBefore };
  }
  const busy = withWriteLock(() => {
    db.pragma(`busy_timeout = ${BOUNDING_CHECKPOINT_WAIT_MS}`);
    try {
      const [row] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
      return row?.busy ?? 0;
    } finally {
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  });
  return { mode: 'TRUNCATE', busy, walBytesBefore };
}

/** A file's size in bytes; 0 when it does not exist (a WAL between checkpoints, say). */
export function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function refuseNewer(db: Db, path: string): number {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > SCHEMA_VERSION) {
    throw new SchemaError(
      `${path} has schema version ${current}, newer than this agentd understands (${SCHEMA_VERSION}); it was not modified. Run a newer agentd, or point --home elsewhere.`,
    );
  }
  return current;
}

/**
 * Opens the database file at start-up and brings its schema to
 * SCHEMA_VERSION. The version is checked before anything is written (even
 * the switch to WAL), so a database from a newer agentd is left untouched.
 */
export function prepareDatabaseFile(path: string, thenRead?: (db: Db) => void): void {
  const probe = new Database(path);
  try {
    refuseNewer(probe, path);
  } finally {
    probe.close();
  }
  const ready = openDatabase(path);
  try {
    migrate(ready, path);
    thenRead?.(ready);
  } finally {
    ready.close();
  }
}

/** Brings the schema to SCHEMA_VERSION (tests of one step stop before it), each step in its own transaction. */
export function migrate(db: Db, path: string, to = SCHEMA_VERSION): void {
  const current = refuseNewer(db, path);
  for (let v = current; v < to; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}

/** Wall-clock time as RFC 3339, the protocol's timestamp form. */
export function now(): string {
  return new Date().toISOString();
}
