/**
 * The SQLite schema's steps, oldest first. db.ts applies them (migrate);
 * the step count is the schema version a database file records.
 */

/** Each entry moves the schema from version i to i+1. Never edit a released step: add one. */
export const MIGRATIONS: readonly string[] = [
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
