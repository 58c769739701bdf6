/**
 * The SQL of the daemon's own tables (agents, meta, subscriptions) and of the
 * conversation-wide reads and deletes main asks for, as SQLite runs them: the
 * storage threads run it all (storage/sqlite/daemon-store.ts), the start-up reads
 * once, in the `prepare` task. The shards' per-conversation SQL lives with
 * them (storage/sqlite/store.ts).
 */
import { unindexMessages, type Db } from './db.ts';
import type { ConversationSummary } from '../../shared/wire/ops.ts';
import type { ExportConversationRow, ExportMessageRow } from '../export-page.ts';

type Nullable = string | null;

/** A `list_conversations` row is the wire's conversation summary as it is. */
export type ConversationListRow = ConversationSummary;

export interface SubscriptionRow {
  id: number;
  source: string;
  target_agent: string;
  once: number;
}

/** Statements the `prepare` task runs at start-up, before any other connection is open. */
export function startupStatements(db: Db) {
  return {
    subscriptions: db.prepare<[], SubscriptionRow>('SELECT id, source, target_agent, once FROM subscriptions ORDER BY id'),
    agentsSeeded: db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'agents_seeded'"),
    seedAgent: db.prepare<[string, string, string, string]>('INSERT OR REPLACE INTO agents (name, config, created_at, updated_at) VALUES (?, ?, ?, ?)'),
    markAgentsSeeded: db.prepare<[string]>("INSERT INTO meta (key, value) VALUES ('agents_seeded', ?)"),
    agents: db.prepare<[], { name: string; config: string }>('SELECT name, config FROM agents ORDER BY name'),
  };
}

/** Statements the storage threads run for main. */
export function storageStatements(db: Db) {
  return {
    exportConversation: db.prepare<[Nullable, Nullable, Nullable, Nullable, number], ExportConversationRow>(`
      SELECT id, agent, sender, title, created_at, updated_at, summary, summary_upto, message_count FROM conversations
      WHERE (? IS NULL OR agent = ?) AND (? IS NULL OR sender = ?) AND id >= ? ORDER BY id LIMIT 1`),
    exportMessages: db.prepare<[number, number, number], ExportMessageRow>(
      'SELECT idx, role, content, agent, tool_calls, tool_call_id, name, is_error, stop_reason, created_at FROM messages WHERE conversation_id = ? AND idx >= ? ORDER BY idx LIMIT ?'),
    listConversations: db.prepare<[Nullable, Nullable, Nullable, Nullable], ConversationListRow>(`
      SELECT agent, sender, title, message_count, created_at, updated_at FROM conversations
      WHERE (? IS NULL OR agent = ?) AND (? IS NULL OR sender = ?)
      ORDER BY updated_at DESC, id DESC`),
    insertSubscription: db.prepare<[string, string, number, string], { id: number }>(
      'INSERT INTO subscriptions (source, target_agent, once, created_at) VALUES (?, ?, ?, ?) RETURNING id',
    ),
    deleteSubscription: db.prepare<[number]>('DELETE FROM subscriptions WHERE id = ?'),
    upsertAgent: db.prepare<[string, string, string, string]>(
      'INSERT INTO agents (name, config, created_at, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at',
    ),
    deleteAgentFts: db.prepare<[string]>(unindexMessages('conversation_id IN (SELECT id FROM conversations WHERE agent = ?)')),
    deleteAgentTitleFts: db.prepare<[string]>('DELETE FROM conversations_fts WHERE rowid IN (SELECT id FROM conversations WHERE agent = ?)'),
    deleteAgentConversations: db.prepare<[string]>('DELETE FROM conversations WHERE agent = ?'),
    deleteAgentSubscriptions: db.prepare<[string]>('DELETE FROM subscriptions WHERE target_agent = ?'),
    deleteAgent: db.prepare<[string]>('DELETE FROM agents WHERE name = ?'),
  };
}
