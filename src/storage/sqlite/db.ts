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

export type Db = Database.Database;

const BUSY_TIMEOUT_MS = 5_000;

/** Each entry moves the schema from version i to i+1. Never edit a released step: add one. */
const MIGRATIONS: readonly string[] = [
  // 1: conversations, their messages, and full-text search over what may be searched.
  `
  CREATE TABLE conversations (
    id          INTEGER PRIMARY KEY,
    agent       TEXT NOT NULL,
    sender      TEXT NOT NULL,
    title       TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    -- the latest compaction: the model sees this summary instead of messages [0, summary_upto)
    summary       TEXT,
    summary_upto  INTEGER NOT NULL DEFAULT 0,
    message_count INTEGER NOT NULL DEFAULT 0,
    UNIQUE (agent, sender)
  );
  CREATE TABLE messages (
    id              INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    idx             INTEGER NOT NULL,
    role            TEXT NOT NULL,
    content         TEXT NOT NULL,
    agent           TEXT,
    tool_calls      TEXT,
    tool_call_id    TEXT,
    name            TEXT,
    is_error        INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    UNIQUE (conversation_id, idx)
  );
  -- Searchable text only: user text, assistant text, tool names. Never tool
  -- results or tool-call arguments (they may hold secrets). rowid = messages.id;
  -- the conversation and index ride along (unindexed) so ranking needs no join.
  CREATE VIRTUAL TABLE messages_fts USING fts5(
    user_text, assistant_text, tool_names, conversation_id UNINDEXED, idx UNINDEXED,
    tokenize = 'unicode61 remove_diacritics 2'
  );
  -- Title and compaction summary, rowid = conversations.id: a match here lifts the conversation.
  CREATE VIRTUAL TABLE conversations_fts USING fts5(title, summary, tokenize = 'unicode61 remove_diacritics 2');
  `,
  // 2: the event bus's subscriptions. AUTOINCREMENT: an id is never reused, even after a delete.
  `
  CREATE TABLE subscriptions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    source       TEXT NOT NULL,
    target_agent TEXT NOT NULL,
    once         INTEGER NOT NULL,
    created_at   TEXT NOT NULL
  );
  `,
  // 3: agents managed over the protocol (agentd.json seeds them once), and small daemon facts.
  `
  CREATE TABLE agents (
    name       TEXT PRIMARY KEY,
    config     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  `,
  // 4: retries without duplicates. The outcome of each turn a client named
  // with a turn_id, so a retry replays it instead of running it again; and
  // the stop reason of a message that ends a turn abnormally (a stalled
  // shard's turn is stored as a user message and an empty assistant message
  // with stop_reason 'stalled').
  `
  ALTER TABLE messages ADD COLUMN stop_reason TEXT;
  CREATE TABLE turn_outcomes (
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    turn_id     TEXT NOT NULL,
    agent       TEXT NOT NULL,
    model       TEXT NOT NULL,
    stop_reason TEXT NOT NULL,
    error       TEXT NOT NULL,
    usage       TEXT NOT NULL,
    final_text  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (conversation_id, turn_id)
  ) WITHOUT ROWID;
  `,
  // 5: the message search index leaves the turn's commit (storage/sqlite/search-index.ts).
  // Messages up to fts_watermark.message_id are indexed (all of them, so far);
  // those above are indexed in batches by the storage threads. When the newest
  // messages are deleted, their ids can come back: the watermark steps down to
  // the highest id left, so a reused id is indexed again.
  `
  CREATE TABLE fts_watermark (
    only       INTEGER PRIMARY KEY CHECK (only = 1),
    message_id INTEGER NOT NULL
  );
  INSERT INTO fts_watermark (only, message_id) SELECT 1, COALESCE(MAX(id), 0) FROM messages;
  CREATE TRIGGER fts_watermark_after_message_delete AFTER DELETE ON messages
  WHEN old.id <= (SELECT message_id FROM fts_watermark)
  BEGIN
    UPDATE fts_watermark SET message_id = (SELECT COALESCE(MAX(id), 0) FROM messages)
    WHERE message_id > (SELECT COALESCE(MAX(id), 0) FROM messages);
  END;
  `,
  // 6: searches and lists narrowed by sender alone find its conversations without reading them all
  // (the (agent, sender) key serves only filters that name the agent).
  `
  CREATE INDEX conversations_sender ON conversations (sender);
  `,
  // 7: the message index keeps no copy of the text. It was a second copy of every
  // user and assistant message (the database's size nearly doubled) and writing it
  // doubled the memory of indexing a big message (a 16 MiB message: 3.1x its size
  // at the peak, 1.6x contentless). Search reads the text it ranks and shows from
  // messages, through messages_searchable: the one definition of what is indexed
  // (user text; assistant text and the names of the tools it called, in call
  // order; never tool output or arguments), with the text's size in bytes
  // (octet_length reads it from the record header). A delete gives FTS5 the
  // indexed text again, from the view (FTS5's 'delete' command), so that its
  // row count and token totals, which ranking reads, go down with it
  // (contentless_delete would only hide the row). The watermark goes back to 0:
  // the storage threads index every message again, in batches.
  `
  DROP TABLE messages_fts;
  CREATE VIRTUAL TABLE messages_fts USING fts5(
    user_text, assistant_text, tool_names,
    content = '', tokenize = 'unicode61 remove_diacritics 2'
  );
  CREATE VIEW messages_searchable AS
  SELECT id, conversation_id, idx, octet_length(content) AS bytes,
    CASE role WHEN 'user' THEN content ELSE '' END AS user_text,
    CASE role WHEN 'assistant' THEN content ELSE '' END AS assistant_text,
    CASE WHEN role = 'assistant' AND tool_calls IS NOT NULL
      THEN coalesce((SELECT group_concat(json_extract(c.value, '$.name'), ' ') FROM json_each(tool_calls) c), '')
      ELSE '' END AS tool_names
  FROM messages WHERE role IN ('user', 'assistant');
  UPDATE fts_watermark SET message_id = 0;
  `,
  // 8: schedules (main/schedules/): time as an event source. Times are epoch milliseconds; a tick is
  // claimed on its row (claim_node, claim_until, claim_due) so one node fires it (storage/schedule-calls.ts).
  `
  CREATE TABLE schedules (
    name          TEXT PRIMARY KEY,
    source        TEXT NOT NULL,
    payload       TEXT NOT NULL,
    cron          TEXT,
    every_ms      INTEGER,
    at            INTEGER,
    timezone      TEXT,
    catch_up      TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    next_at       INTEGER,
    fires         INTEGER NOT NULL DEFAULT 0,
    last_fired_at INTEGER,
    claim_node    TEXT,
    claim_until   INTEGER,
    claim_due     INTEGER
  );
  `,
  // 9: outbound webhooks (main/webhooks/) and their outbox: a delivery is stored before its first attempt,
  // claimed by a delivery loop for a while, and sent in seq order per (webhook, conversation).
  `
  CREATE TABLE webhooks (
    name         TEXT PRIMARY KEY,
    url          TEXT NOT NULL,
    events       TEXT NOT NULL,
    agents       TEXT,
    secret       TEXT NOT NULL,
    max_attempts INTEGER NOT NULL,
    created_at   INTEGER NOT NULL
  );
  CREATE TABLE webhook_deliveries (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    webhook         TEXT NOT NULL,
    conv            TEXT NOT NULL,
    kind            TEXT NOT NULL,
    agent           TEXT NOT NULL,
    sender          TEXT NOT NULL,
    body            TEXT NOT NULL,
    status          TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,
    next_attempt_at INTEGER,
    finished_at     INTEGER,
    claim_node      TEXT,
    claim_until     INTEGER
  );
  CREATE INDEX webhook_deliveries_order ON webhook_deliveries (webhook, conv, status, seq);
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
  `,
  // 10: scoped tokens (main/auth/): the SHA-256 of each secret, never the secret; found by the id the token carries.
  `
  CREATE TABLE tokens (
    id         TEXT PRIMARY KEY,
    hash       TEXT NOT NULL,
    scopes     TEXT NOT NULL,
    agents     TEXT,
    sender     TEXT,
    label      TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
  );
  `,
  // 11: runs waiting for a tool approval (shard/runs/waiting-runs.ts): what resumes them after a restart.
  // A row lives while its run waits; \`state\` is the turn so far as JSON. Times are epoch milliseconds.
  `
  CREATE TABLE waiting_runs (
    run_id     TEXT PRIMARY KEY,
    agent      TEXT NOT NULL,
    sender     TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    state      TEXT NOT NULL
  );
  `,
];

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
