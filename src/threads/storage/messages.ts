/**
 * Messages of the storage pool (main/hosts/storage-pool.ts → storage-tasks.ts):
 * the database work main hands its storage threads, and what comes back.
 */
import type { AgentConfig } from '../../shared/config.ts';
import type { StoreLocation } from '../../shared/store-location.ts';
import type { SubscriptionInfo } from '../../shared/wire/ops.ts';
import type { ScheduleCall } from '../../storage/schedule-calls.ts';
import type { WebhookCall } from '../../storage/webhook-calls.ts';
import type { TokenCall } from '../../storage/token-calls.ts';

/** A stored subscription is the wire's SubscriptionInfo as it is. */
export type SubscriptionRecord = SubscriptionInfo;

/** What main reads once at start-up (the `prepare` task), after the schema is brought up to date. */
export interface StoredStartupState {
  /** Every stored agent's raw config (validated by main); seeded from the config file on the very first start. */
  agents: { name: string; config: string }[];
  /** True when this start seeded the agents (the store had never been seeded). */
  seededNow: boolean;
  subscriptions: SubscriptionRecord[];
}

/** What a storage-pool thread starts with (workerData). */
export interface StorageInit {
  store: StoreLocation;
  /** The shards' write lock, which the storage threads' SQLite writes take too. */
  writeLock: SharedArrayBuffer;
  logLevel: string;
  /** A SQLite connection's page cache in KiB; absent: the default (storage/sqlite/db.ts). */
  pageCacheKib?: number;
}

/** Database work main hands to the storage pool; each op is one DaemonStorage call. */
export type StorageTask =
  /** Start-up, before any shard: the schema brought up to date, agents seeded once, the start-up state read. */
  | { op: 'prepare'; seedAgents: Record<string, AgentConfig> }
  | { op: 'list_conversations'; agent: string | null; sender: string | null }
  /** One page of `export_conversations` (storage/export-page.ts). */
  | { op: 'export_page'; filter: ExportFilter; cursor: ExportCursor; limit: number }
  | { op: 'subscription_insert'; source: string; targetAgent: string; once: boolean }
  | { op: 'subscription_delete'; ids: number[] }
  /** Creates or replaces an agent's stored configuration. */
  | { op: 'agent_upsert'; name: string; config: string }
  /** Deletes an agent, its conversations (and their search entries) and its subscriptions. */
  | { op: 'agent_delete'; name: string }
  /** Renames an agent and what names it (storage/rename-agent.ts); answers false when the store has no such agent. */
  | { op: 'agent_rename'; name: string; newName: string }
  /** Periodic upkeep (SQLite: the bounded WAL checkpoint). */
  | { op: 'maintain'; walMaxBytes: number }
  /** Indexes up to `limit` committed messages for search; answers how many it read (SQLite: search-index.ts). */
  | { op: 'index_messages'; limit: number }
  /**
   * At shutdown, once no shard is left: the thread's store closes (SQLite:
   * folds and empties the WAL first). One per thread: each waits at `barrier`
   * (a counter) until `threads` have arrived, so no thread takes two.
   */
  | { op: 'close'; barrier: SharedArrayBuffer; threads: number }
  /** Cluster mode: claims a partition's fence for its bucket entry (DaemonStorage.claimPartition); answers the token, or null. */
  | { op: 'claim_partition'; partition: number; epoch: number; revision: number }
  /** Cluster mode: the epoch the cluster's bucket is to carry (DaemonStorage.bucketEpoch). */
  | { op: 'bucket_epoch'; current: number | null }
  /** Cluster mode: the agents and subscriptions as the shared store holds them now (DaemonStorage.readState); `seededNow` is false. */
  | { op: 'read_state' }
  /** The schedules table: one call (storage/schedule-calls.ts). */
  | { op: 'schedules'; call: ScheduleCall }
  /** Outbound webhooks and their outbox: one call (storage/webhook-calls.ts). */
  | { op: 'webhooks'; call: WebhookCall }
  /** Scoped tokens: one call (storage/token-calls.ts). */
  | { op: 'tokens'; call: TokenCall }
  | ({ op: 'search_sessions' } & SearchOptions);

/** Which conversations `export_conversations` reads. */
export interface ExportFilter {
  agent: string | null;
  sender: string | null;
}

/** Where an export page starts: at conversation `id`'s record (`idx` null), or after it, at its message `idx` (storage/export-page.ts). */
export type ExportCursor = { id: number; idx: number | null };

/** A session search, its bounds already applied (PROTOCOL §4). */
export interface SearchOptions {
  query: string;
  limit: number;
  contextBefore: number;
  contextAfter: number;
  agent: string | null;
  sender: string | null;
  /** When the search must end (epoch ms; storage/search-budget.ts); none: unbounded. */
  deadline?: number;
  /** An Int32 main sets to 1 to cancel the search (its client went away, or the daemon is closing). */
  cancel?: SharedArrayBuffer;
}
