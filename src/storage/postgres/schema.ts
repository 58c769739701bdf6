/**
 * The PostgreSQL store's schema and how it moves forward: the same tables,
 * columns and meaning as the SQLite schema (storage/sqlite/migrations.ts), with search held
 * in tsvector columns (GIN-indexed) instead of FTS5 tables. Each step runs in
 * its own transaction under an advisory lock, so several daemons starting at
 * once apply each step exactly once; a store from a newer agentd is refused
 * and left untouched.
 */
import type pg from 'pg';
import type { Logger } from '../../shared/log.ts';
import { SchemaError } from '../sqlite/db.ts';
import { inTransaction, safeUrl, type PoolClient } from './pool.ts';

/** Each entry moves the schema from version i to i+1. Never edit a released step: add one. */
const MIGRATIONS: readonly string[] = [
  // 1: everything SQLite's steps 1-4 hold. Timestamps stay RFC 3339 text, as on the wire.
  `
  CREATE TABLE agentd_schema (
    version    INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL
  );
  CREATE TABLE conversations (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent         TEXT NOT NULL,
    sender        TEXT NOT NULL,
    title         TEXT NOT NULL DEFAULT '',
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    -- the latest compaction: the model sees this summary instead of messages [0, summary_upto)
    summary       TEXT,
    summary_upto  INTEGER NOT NULL DEFAULT 0,
    message_count INTEGER NOT NULL DEFAULT 0,
    -- the words of the title and of the summary, written with them: a match here lifts the conversation in search
    title_search   TSVECTOR NOT NULL DEFAULT '',
    summary_search TSVECTOR NOT NULL DEFAULT '',
    UNIQUE (agent, sender)
  );
  CREATE INDEX conversations_updated ON conversations (updated_at DESC, id DESC);
  CREATE INDEX conversations_search ON conversations USING GIN ((title_search || summary_search));
  CREATE TABLE messages (
    id              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation_id BIGINT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    idx             INTEGER NOT NULL,
    role            TEXT NOT NULL,
    content         TEXT NOT NULL,
    agent           TEXT,
    tool_calls      TEXT,
    tool_call_id    TEXT,
    name            TEXT,
    is_error        BOOLEAN NOT NULL DEFAULT FALSE,
    stop_reason     TEXT,
    created_at      TEXT NOT NULL,
    -- Searchable text only, written with the row: user text (weight A), assistant
    -- text and tool names (B). Never tool results or tool-call arguments (they may
    -- hold secrets). NULL for messages with nothing searchable.
    search          TSVECTOR,
    UNIQUE (conversation_id, idx)
  );
  CREATE INDEX messages_search ON messages USING GIN (search);
  CREATE TABLE subscriptions (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source       TEXT NOT NULL,
    target_agent TEXT NOT NULL,
    once         BOOLEAN NOT NULL,
    created_at   TEXT NOT NULL
  );
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
  CREATE TABLE turn_outcomes (
    conversation_id BIGINT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    turn_id     TEXT NOT NULL,
    agent       TEXT NOT NULL,
    model       TEXT NOT NULL,
    stop_reason TEXT NOT NULL,
    error       TEXT NOT NULL,
    usage       TEXT NOT NULL,
    final_text  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (conversation_id, turn_id)
  );
  `,
  // 2: cluster fencing. A partition's current token is the largest its owners claimed; a write for one
  // of its pairs checks, in its own transaction, that it carries exactly that token (pg-fences.ts).
  `
  CREATE TABLE partition_fences (
    partition INTEGER PRIMARY KEY,
    token     BIGINT NOT NULL
  );
  CREATE FUNCTION agentd_check_fence(p INTEGER, t BIGINT) RETURNS void LANGUAGE plpgsql AS $$
  DECLARE
    current BIGINT;
  BEGIN
    -- FOR SHARE: a claim of a newer token waits until this write's transaction ends, so none commits after it.
    SELECT token INTO current FROM partition_fences WHERE partition = p FOR SHARE;
    IF current IS DISTINCT FROM t THEN
      RAISE EXCEPTION 'this node no longer owns cluster partition % (its fencing token % is not the current %); the write was refused', p, t, coalesce(current::text, 'none')
        USING ERRCODE = 'AGF01';
    END IF;
  END $$;
  `,
  // 3: searches and lists narrowed by sender alone find its conversations without reading them all
  // (the (agent, sender) key serves only filters that name the agent).
  `
  CREATE INDEX conversations_sender ON conversations (sender);
  `,
  // 4: schedules (main/schedules/), as SQLite's step 8: times are epoch milliseconds, a tick is claimed on its row.
  `
  CREATE TABLE schedules (
    name          TEXT PRIMARY KEY,
    source        TEXT NOT NULL,
    payload       TEXT NOT NULL,
    cron          TEXT,
    every_ms      BIGINT,
    at            BIGINT,
    timezone      TEXT,
    catch_up      TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    next_at       BIGINT,
    fires         BIGINT NOT NULL DEFAULT 0,
    last_fired_at BIGINT,
    claim_node    TEXT,
    claim_until   BIGINT,
    claim_due     BIGINT
  );
  `,
  // 5: outbound webhooks and their outbox, as SQLite's step 9.
  `
  CREATE TABLE webhooks (
    name         TEXT PRIMARY KEY,
    url          TEXT NOT NULL,
    events       TEXT NOT NULL,
    agents       TEXT,
    secret       TEXT NOT NULL,
    max_attempts INTEGER NOT NULL,
    created_at   BIGINT NOT NULL
  );
  CREATE TABLE webhook_deliveries (
    seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
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
    created_at      BIGINT NOT NULL,
    next_attempt_at BIGINT,
    finished_at     BIGINT,
    claim_node      TEXT,
    claim_until     BIGINT
  );
  CREATE INDEX webhook_deliveries_order ON webhook_deliveries (webhook, conv, status, seq);
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
  `,
  // 6: fences that only grow whatever happens to the cluster's NATS bucket (lost, or a new cluster name):
  // the store issues each claim's token, one more than the partition's last, to a claim newer by
  // (epoch, bucket revision) than the one it holds; epochs come from the sequence, one per bucket (fences.ts).
  `
  ALTER TABLE partition_fences ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0, ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
  CREATE SEQUENCE agentd_cluster_epochs;
  `,
  // 7: scoped tokens, as SQLite's step 10: shared by every node, so a token made or revoked on one holds on all.
  `
  CREATE TABLE tokens (
    id         TEXT PRIMARY KEY,
    hash       TEXT NOT NULL,
    scopes     TEXT NOT NULL,
    agents     TEXT,
    sender     TEXT,
    label      TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL
  );
  `,
  // 8: runs waiting for a tool approval, as SQLite's step 11.
  `
  CREATE TABLE waiting_runs (
    run_id     TEXT PRIMARY KEY,
    agent      TEXT NOT NULL,
    sender     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    state      TEXT NOT NULL
  );
  `,
  // 9: every turn sets its conversation's updated_at and message_count. While an index named updated_at,
  // each of those updates wrote a new entry in every index of conversations, the title GIN among them,
  // and left the old ones to vacuum. Now no index names a column a turn changes, and pages keep room for
  // a row's next version: PostgreSQL updates the row in place (HOT), touching no index. Conversations
  // are listed by updated_at by sorting those listed, as SQLite does.
  `
  DROP INDEX conversations_updated;
  ALTER TABLE conversations SET (fillfactor = 80);
  `,
];

export const PG_SCHEMA_VERSION = MIGRATIONS.length;

/** Every agentd process migrating this database takes this lock (an arbitrary constant: "agentd" in ASCII). */
const MIGRATION_LOCK = 0x6167656e7464;

/** The store's schema version: 0 for a database agentd never touched. */
async function schemaVersion(client: PoolClient): Promise<number> {
  const table = await client.query<{ exists: boolean }>("SELECT to_regclass('agentd_schema') IS NOT NULL AS exists");
  if (!table.rows[0]!.exists) return 0;
  const r = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM agentd_schema');
  return r.rows[0]!.version ?? 0;
}

function refuseNewer(version: number, url: string): void {
  if (version > PG_SCHEMA_VERSION) {
    throw new SchemaError(
      `${safeUrl(url)} has schema version ${version}, newer than this agentd understands (${PG_SCHEMA_VERSION}); it was not modified. Run a newer agentd, or point --store elsewhere.`,
    );
  }
}

/**
 * Brings the schema to PG_SCHEMA_VERSION, one step per transaction. The
 * version is read under the lock before each step, so a step another process
 * applied meanwhile is skipped, and a newer store is refused before anything
 * is written.
 */
export async function migrate(pool: pg.Pool, url: string, log: Logger): Promise<void> {
  for (;;) {
    const done = await inTransaction(pool, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      const version = await schemaVersion(client);
      refuseNewer(version, url);
      if (version === PG_SCHEMA_VERSION) return true;
      await client.query(MIGRATIONS[version]!);
      await client.query('INSERT INTO agentd_schema (version, applied_at) VALUES ($1, $2)', [version + 1, new Date().toISOString()]);
      log.info({ store: safeUrl(url), version: version + 1 }, 'PostgreSQL store schema step applied');
      return false;
    });
    if (done) return;
  }
}
