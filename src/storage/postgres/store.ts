/**
 * The PostgreSQL store (`"store": "postgres://…"`): what the store factory
 * loads, on demand, for a postgres:// or postgresql:// URL. Each shard gets a
 * ConversationStorage and each storage thread a DaemonStorage, every one on a
 * small pool of its own. The storage threads bring the schema up to date
 * (DaemonStorage.prepare) before any shard writes.
 */
import type { Logger } from '../../shared/log.ts';
import type { FenceSource } from '../../shared/partitions.ts';
import { PgConversationStorage } from './conversations.ts';
import { PgDaemonStorage } from './daemon.ts';
import { connectPool, SHARD_POOL_CONNECTIONS } from './pool.ts';
import type { ConversationStorage, DaemonStorage } from '../contract.ts';

/** `fences`: in cluster mode, the tokens this node holds; every write checks its pair's (pg-fences.ts). */
export async function createPgConversationStorage(url: string, log: Logger, fences: FenceSource | null = null): Promise<ConversationStorage> {
  return new PgConversationStorage(await connectPool(url, log, SHARD_POOL_CONNECTIONS), fences);
}

export async function createPgDaemonStorage(url: string, log: Logger): Promise<DaemonStorage> {
  return new PgDaemonStorage(await connectPool(url, log), url, log);
}
