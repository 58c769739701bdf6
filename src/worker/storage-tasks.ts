/**
 * The storage pool's task handler (piscina): database work main asks for,
 * off the main thread. Each thread keeps one connection; WAL lets it read
 * while shards write, and its few writes take the shards' write lock.
 */
import { workerData } from 'piscina';
import { boundedCheckpoint, now, openDatabase } from '../shared/db.ts';
import type { StorageTask } from '../shared/threads.ts';
import { STORAGE_POOL_TOKEN, WriteLock } from '../shared/write-lock.ts';
import { storageStatements } from '../shared/daemon-sql.ts';
import { SessionSearch } from './search.ts';
import { SearchIndex } from './search-index.ts';

const init = workerData as { dbPath: string; writeLock: SharedArrayBuffer };
const db = openDatabase(init.dbPath);
const statements = storageStatements(db);
const lock = new WriteLock(init.writeLock, STORAGE_POOL_TOKEN);
const index = new SearchIndex(db, (fn) => lock.with(fn));
const search = new SessionSearch(db, index);
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
      return { conversation_list: { conversations: statements.listConversations.all(task.agent, task.agent, task.sender, task.sender) } };
    case 'index_messages':
      return index.catchUp(task.limit);
    case 'search_sessions':
      return { session_hits: { hits: search.search(task) } };
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
      // At shutdown, when no shard is left: TRUNCATE folds and empties the WAL.
      return db.pragma(`wal_checkpoint(${task.mode})`);
    case 'bounded_checkpoint':
      return boundedCheckpoint(db, `${init.dbPath}-wal`, task.walMaxBytes, (fn) => lock.with(fn));
  }
}
