/**
 * The storage seam: what the threads need of a store, whatever holds it.
 * Two implementations stand behind it: SQLite in $AGENTD_HOME (the embedded
 * default) and PostgreSQL (`"store": "postgres://…"`), so several nodes can
 * share conversations. Every method is asynchronous, because a shard must
 * never block its event loop on a database server; an implementation that
 * answers synchronously (SQLite) returns settled promises.
 *
 * A shard holds one ConversationStorage; each storage-pool thread holds one
 * DaemonStorage. Both come from store-backends.ts, chosen by the store URL
 * (SQLite: store.ts and daemon-store.ts; PostgreSQL: pg-store.ts).
 */
import type { StopReason, Usage } from '../shared/protocol.ts';
import type { SearchOptions, StoredStartupState, SubscriptionRecord } from '../threads/storage/messages.ts';
import type { StalledTurn } from '../shared/threads/shard-messages.ts';
import type { AgentConfig } from '../shared/config.ts';
import type { ConversationSummary, SessionHit } from '../shared/wire/ops.ts';
import type { Message } from '../models/types.ts';
import type { ScheduleCall } from './schedule-calls.ts';
import type { WebhookCall } from './webhook-calls.ts';
import type { TokenCall } from './token-calls.ts';
import type { ExportCursor, ExportFilter } from '../threads/storage/messages.ts';
import type { ExportPage } from '../shared/wire/transfer.ts';

// Main reads the start-up state too (it may not import worker code): defined with the storage tasks.
export type { StoredStartupState, SubscriptionRecord };

/** What a turn's write needs of a conversation: its row (if any), pair, title and how many messages are stored. */
export interface ConversationRef {
  dbId: number | null;
  agent: string;
  sender: string;
  title: string;
  stored: number;
}

/** How a turn named by a client's turn_id ended: what a retry of it is answered with. */
export interface TurnOutcome {
  turnId: string;
  /** The answering agent (the guest, on a guest turn). */
  agent: string;
  model: string;
  stopReason: StopReason;
  error: string;
  usage: Usage;
  finalText: string;
}

/** One finished turn to write: its messages and, when the client named it, its outcome. */
export interface TurnRecord {
  conv: ConversationRef;
  messages: readonly Message[];
  outcome?: TurnOutcome | null;
}

/**
 * A run waiting for tool approvals, as stored (shard/runs/waiting-runs.ts):
 * the row lives while the run waits, so a restart (or, in a cluster, the
 * node that gains its partition) resumes it. `state` is the turn so far, as
 * JSON only the shard reads; `createdAt` is epoch milliseconds.
 */
export interface WaitingRunRecord {
  runId: string;
  agent: string;
  sender: string;
  createdAt: number;
  state: string;
}

export interface StoredConversation {
  id: number;
  title: string;
  createdAt: string;
  summary: string | null;
  summaryUpto: number;
  messageCount: number;
  /** Messages from `summaryUpto` on: what the model sees after the summary. */
  recent: Message[];
}

/**
 * A shard's conversations in the store. Writes for one conversation (and its
 * load) are made in order and never overlap. A read that answers a client
 * (`allMessages` for its history, `exists` for a kill) may overlap the write
 * of the turn running for it, and must then see the conversation either
 * before or after that turn, never half of it.
 */
export interface ConversationStorage {
  load(agent: string, sender: string): Promise<StoredConversation | null>;
  exists(agent: string, sender: string): Promise<boolean>;
  /** Every stored message, including those a compaction summarized. */
  allMessages(id: number): Promise<Message[]>;
  /**
   * Group commit: writes the turns in one transaction where it can, sets each
   * written conversation's `dbId`, and resolves once they are durable (a
   * turn's `end` waits for this). One failing turn does not sink the others:
   * the result holds, per turn, its error or null. `alone`: the caller has
   * nothing else under way (no other turn running or queued), so no turn of
   * its would share the commit; a backend may then commit on the caller's
   * thread rather than hand the batch on (SQLite, see sqlite/store.ts).
   */
  writeTurns(turns: readonly TurnRecord[], alone?: boolean): Promise<(Error | null)[]>;
  /**
   * How many `writeTurns` may be under way at once; turns finishing meanwhile
   * wait and go together in the next. Absent: no bound (the store batches
   * itself, as SQLite's turn writer thread does).
   */
  readonly commitsInFlight?: number;
  /** The stored outcome of the conversation's turn named `turnId`, if there is one. */
  outcome(conversationId: number, turnId: string): Promise<TurnOutcome | null>;
  setSummary(id: number, summary: string, upto: number): Promise<void>;
  delete(id: number): Promise<void>;
  /** Stores (inserts or replaces) a waiting run; resolves once it is durable. In cluster mode fenced by the pair's partition. */
  saveWaitingRun(run: WaitingRunRecord): Promise<void>;
  /** The run no longer waits: its row goes (nothing if it is gone already). Fenced like saveWaitingRun. */
  deleteWaitingRun(runId: string, agent: string, sender: string): Promise<void>;
  /** Every stored waiting run, oldest first (each shard keeps those of its pairs). */
  waitingRuns(): Promise<WaitingRunRecord[]>;
  /** Stores a turn a stalled shard was running as ended `stalled` (skipped if its turn_id is stored already). */
  recordStalled(turn: StalledTurn): Promise<void>;
  close(): Promise<void>;
}

/** The daemon-wide work main asks the storage threads for. */
export interface DaemonStorage {
  /** Brings the schema to the current version (refusing a newer one untouched), seeds agents once, reads the start-up state. */
  prepare(seedAgents: Record<string, AgentConfig>): Promise<StoredStartupState>;
  listConversations(agent: string | null, sender: string | null): Promise<ConversationSummary[]>;
  /** One page of `export_conversations` (storage/export-page.ts). */
  exportPage(filter: ExportFilter, cursor: ExportCursor, limit: number): Promise<ExportPage>;
  search(options: SearchOptions): Promise<SessionHit[]>;
  insertSubscription(source: string, targetAgent: string, once: boolean): Promise<number>;
  deleteSubscriptions(ids: readonly number[]): Promise<number>;
  upsertAgent(name: string, config: string): Promise<void>;
  /** Deletes an agent, its conversations (and their search entries) and its subscriptions. */
  deleteAgent(name: string): Promise<void>;
  /** Renames an agent and everything stored that names it, at once (storage/rename-agent.ts); false when the store has no such agent. */
  renameAgent(from: string, to: string): Promise<boolean>;
  /** Periodic upkeep (SQLite: the bounded WAL checkpoint; PostgreSQL: nothing). */
  maintain(walMaxBytes: number): Promise<unknown>;
  /**
   * Indexes up to `limit` committed messages for search; resolves to how many it read (fewer: caught up).
   * For a backend whose turn commits leave the index behind (SQLite: storage/sqlite/search-index.ts); others leave it out.
   */
  indexMessages?(limit: number): Promise<number>;
  /**
   * Cluster mode (a store several nodes share; PostgreSQL): claims the
   * partition for the owner its bucket entry at (`epoch`, `revision`) names,
   * and answers the token it is then served with (larger than any before),
   * after which only writes carrying that token commit for its pairs. Null
   * when a claim as new or newer holds it already.
   */
  claimPartition?(partition: number, epoch: number, revision: number): Promise<number | null>;
  /** Cluster mode (PostgreSQL): the epoch the cluster's bucket is to carry, given the one it carries (null: none). */
  bucketEpoch?(current: number | null): Promise<number>;
  /** Cluster mode (PostgreSQL): the agents and subscriptions now, read without touching the schema (another node changed them). */
  readState?(): Promise<StoredStartupState>;
  /** The schedules table (main/schedules/): one call of storage/schedule-calls.ts. */
  schedules?(call: ScheduleCall): Promise<unknown>;
  /** Outbound webhooks and their outbox (main/webhooks/): one call of storage/webhook-calls.ts. */
  webhooks?(call: WebhookCall): Promise<unknown>;
  /** Scoped tokens (main/auth/): one call of storage/token-calls.ts. */
  tokens?(call: TokenCall): Promise<unknown>;
  close(): Promise<void>;
}

/** How a backend that answers synchronously (SQLite) answers the contract: a settled promise of the call's value, or of its throw. */
export function settled<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}
