/**
 * The storage pool's task handler (piscina): database work main asks for,
 * off the main thread. Each thread keeps one connection; WAL lets it read
 * while shards write, and its few writes take the shards' write lock.
 */
import { workerData } from 'piscina';
import type { Db } from '../shared/db.ts';
import { now, openDatabase } from '../shared/db.ts';
import type { StorageTask } from '../shared/threads.ts';
import { WriteLock } from '../shared/write-lock.ts';
import { SessionSearch } from './search.ts';

/** Outside the shards' tokens (1..N): the pool's threads share this one. */
const POOL_TOKEN = 0x7fff0000;

type Nullable = string | null;

function prepare(db: Db) {
  return {
    search: new SessionSearch(db),
    list: db.prepare<[Nullable, Nullable, Nullable, Nullable], { agent: string; sender: string; title: string; message_count: number; created_at: string; updated_at: string }>(`
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
    deleteAgentFts: db.prepare<[string]>('DELETE FROM messages_fts WHERE rowid IN (SELECT m.id FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE c.agent = ?)'),
    deleteAgentTitleFts: db.prepare<[string]>('DELETE FROM conversations_fts WHERE rowid IN (SELECT id FROM conversations WHERE agent = ?)'),
    deleteAgentConversations: db.prepare<[string]>('DELETE FROM conversations WHERE agent = ?'),
    deleteAgentSubscriptions: db.prepare<[string]>('DELETE FROM subscriptions WHERE target_agent = ?'),
    deleteAgent: db.prepare<[string]>('DELETE FROM agents WHERE name = ?'),
  };
}

const init = workerData as { dbPath: string; writeLock: SharedArrayBuffer };
const db = openDatabase(init.dbPath);
const statements = prepare(db);
const lock = new WriteLock(init.writeLock, POOL_TOKEN);
const deleteMany = db.transaction((ids: readonly number[]) => {
  let n = 0;
  for (const id of ids) n += statements.deleteSubscription.run(id).changes;
  return n;
});

const deleteAgent = db.transaction((name: string) => {
  statements.deleteAgentFts.run(name);
  statements.deleteAgentTitleFts.run(name);
  statements.deleteAgentConversations.run(name); // messages go by ON DELETE CASCADE
  statements.deleteAgentSubscriptions.run(name);
  statements.deleteAgent.run(name);
});

export default function handle(task: StorageTask): unknown {
  switch (task.op) {
    case 'list_conversations':
      return { conversation_list: { conversations: statements.list.all(task.agent, task.agent, task.sender, task.sender) } };
    case 'search_sessions':
      return { session_hits: { hits: statements.search.search(task) } };
    case 'subscription_insert':
      return lock.with(() => statements.insertSubscription.get(task.source, task.targetAgent, task.once ? 1 : 0, now())!.id);
    case 'subscription_delete':
      return lock.with(() => deleteMany.immediate(task.ids));
    case 'agent_upsert': {
      const at = now();
      lock.with(() => statements.upsertAgent.run(task.name, task.config, at, at));
      return null;
    }
    case 'agent_delete':
      lock.with(() => deleteAgent.immediate(task.name));
      return null;
    case 'checkpoint':
      // PASSIVE never waits for writers; TRUNCATE (at shutdown, when none are left) also empties the WAL.
      return db.pragma(`wal_checkpoint(${task.mode})`);
  }
}
