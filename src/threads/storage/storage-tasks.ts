/**
 * The storage pool's task handler (piscina): database work main asks for,
 * off the main thread. Each thread keeps one DaemonStorage (store-backends.ts
 * picks it from the store URL), opened at its first task, and hands it each
 * task as one call.
 */
import { workerData } from 'piscina';
import { createLogger } from '../../shared/log.ts';
import type { StorageInit, StorageTask } from './messages.ts';
import { STORAGE_POOL_TOKEN, WriteLock } from '../../storage/sqlite/write-lock.ts';
import type { DaemonStorage } from '../../storage/contract.ts';
import { openDaemonStorage } from '../../storage/backends.ts';
import { SearchStopped } from '../../storage/search-budget.ts';

const init = workerData as StorageInit;
const log = createLogger(init.logLevel, { thread: 'storage' });
let storage: Promise<DaemonStorage> | null = null;

function opened(): Promise<DaemonStorage> {
  // A failed open is not kept: the next task tries again.
  storage ??= openDaemonStorage(init.store, new WriteLock(init.writeLock, STORAGE_POOL_TOKEN), log, init.pageCacheKib).catch((err: unknown) => {
    storage = null;
    throw err;
  });
  return storage;
}

/** How long a closing thread waits for the others to take their close task (one may be busy with a search). */
const CLOSE_BARRIER_MS = 2_000;

/** Counts this thread in at the barrier and waits (blocking: the thread has nothing else to do) until all have arrived, or the bound. */
function arriveAndWait(barrier: SharedArrayBuffer, threads: number): void {
  const count = new Int32Array(barrier);
  Atomics.add(count, 0, 1);
  Atomics.notify(count, 0);
  const deadline = Date.now() + CLOSE_BARRIER_MS;
  for (let seen = Atomics.load(count, 0); seen < threads; seen = Atomics.load(count, 0)) {
    const left = deadline - Date.now();
    if (left <= 0) return;
    Atomics.wait(count, 0, seen, left);
  }
}

async function close(barrier: SharedArrayBuffer, threads: number): Promise<null> {
  arriveAndWait(barrier, threads);
  const s = storage;
  storage = null;
  // A thread that never opened its store has nothing to close.
  if (s !== null) await (await s).close();
  return null;
}

/** A search's hits, or why it stopped (past its budget, or cancelled): a posted Error would lose its reason. */
async function search(s: DaemonStorage, task: Extract<StorageTask, { op: 'search_sessions' }>): Promise<unknown> {
  try {
    return { hits: await s.search(task) };
  } catch (err) {
    if (err instanceof SearchStopped) return { search_stopped: err.reason };
    throw err;
  }
}

export default async function handle(task: StorageTask): Promise<unknown> {
  if (task.op === 'close') return close(task.barrier, task.threads);
  const s = await opened();
  switch (task.op) {
    case 'prepare':
      return s.prepare(task.seedAgents);
    case 'list_conversations':
      return { conversations: await s.listConversations(task.agent, task.sender) };
    case 'export_page':
      return s.exportPage(task.filter, task.cursor, task.limit);
    case 'search_sessions':
      return search(s, task);
    case 'subscription_insert':
      return s.insertSubscription(task.source, task.targetAgent, task.once);
    case 'subscription_delete':
      return s.deleteSubscriptions(task.ids);
    case 'agent_upsert':
      await s.upsertAgent(task.name, task.config);
      return null;
    case 'agent_delete':
      await s.deleteAgent(task.name);
      return null;
    case 'agent_rename':
      return s.renameAgent(task.name, task.newName);
    case 'maintain':
      return s.maintain(task.walMaxBytes);
    case 'index_messages':
      return s.indexMessages?.(task.limit) ?? 0;
    case 'claim_partition':
      if (s.claimPartition === undefined) throw new Error('this store cannot hold cluster fences (cluster mode needs PostgreSQL)');
      return s.claimPartition(task.partition, task.epoch, task.revision);
    case 'bucket_epoch':
      if (s.bucketEpoch === undefined) throw new Error('this store cannot hold cluster fences (cluster mode needs PostgreSQL)');
      return s.bucketEpoch(task.current);
    case 'read_state':
      if (s.readState === undefined) throw new Error('this store is not shared by cluster nodes (cluster mode needs PostgreSQL)');
      return s.readState();
    case 'schedules':
      if (s.schedules === undefined) throw new Error('this store holds no schedules');
      return s.schedules(task.call);
    case 'webhooks':
      if (s.webhooks === undefined) throw new Error('this store holds no webhooks');
      return s.webhooks(task.call);
    case 'tokens':
      if (s.tokens === undefined) throw new Error('this store holds no tokens');
      return s.tokens(task.call);
  }
}
