/**
 * Every message that crosses between main and a shard. Main batches what it
 * sends a shard in one event-loop turn into one array; a shard batches the
 * reply frames it produces into one transferred buffer (see FrameBatch).
 */
import type { MessagePort } from 'node:worker_threads';
import type { AgentConfig, Capability, ProviderConfig } from './config.ts';
import type { OnBusy, ToolChoice } from './protocol.ts';

/** What a shard receives when it starts (workerData). */
export interface ShardInit {
  index: number;
  shards: number;
  /** The database file, or null when persistence is off (benchmarks only). */
  dbPath: string | null;
  /** Idle conversations this shard keeps in memory before evicting the least recently used. */
  memoryConversations: number;
  /** The shards' shared write lock (see WriteLock). */
  writeLock: SharedArrayBuffer;
  /** comlink port to main's harness host (capabilities). */
  harnessPort: MessagePort;
  agents: Record<string, AgentConfig>;
  providers: Record<string, ProviderConfig>;
  /** $AGENTD_HOME: relative harness module paths start here. */
  home: string;
  logLevel: string;
  /** Test-only fault injection (AGENTD_TEST_CRASH_TOKEN); null in production. */
  crashToken: string | null;
}

export interface TurnRequest {
  t: 'turn';
  conn: number;
  req: number;
  /** `stream` replies with events; `send` with one `response`; `event` (fired by the bus) replies nothing. */
  mode: 'stream' | 'send' | 'event';
  agent: string;
  sender: string;
  content: string;
  guest: string | null;
  ephemeral: boolean;
  correlationId: number | null;
  onBusy: OnBusy;
  toolChoice: ToolChoice | null;
  /** How many bus fires led to this turn: 0 for a client's turn. */
  depth: number;
}

export interface KillRequest {
  t: 'kill';
  conn: number;
  req: number;
  agent: string;
  sender: string;
}

/** Summarize the pair's history; runs in the pair's FIFO like a turn. */
export interface CompactRequest {
  t: 'compact';
  conn: number;
  req: number;
  agent: string;
  sender: string;
  prompt: string | null;
}

/** `get_conversation_history` and `delete_conversation`: pair operations answered by the pair's shard. */
export interface PairRequest {
  t: 'history' | 'delete';
  conn: number;
  req: number;
  agent: string;
  sender: string;
}

/** The connection closed: cancel its running and queued turns. */
export interface ConnClosed {
  t: 'conn_closed';
  conn: number;
}

/** Questions main asks every shard; each answers with a QueryResult of the same qid. */
export type ShardQuery =
  | { t: 'query'; qid: number; q: 'active'; agent: string | null; sender: string | null }
  /** Cancel and forget every conversation of a deleted agent; answered once its running turns have ended. */
  | { t: 'query'; qid: number; q: 'purge_agent'; agent: string };

export type ActiveQuery = Extract<ShardQuery, { q: 'active' }>;

export interface AgentsUpdate {
  t: 'agents';
  agents: Record<string, AgentConfig>;
}

/** Whether anyone watches the agent event stream: shards encode agent events only while someone does. */
export interface ObserveUpdate {
  t: 'observe';
  on: boolean;
}

/** Cancel everything with "shutting down"; take no new turns. */
export interface ShutdownRequest {
  t: 'shutdown';
}

export type ToShard = TurnRequest | KillRequest | CompactRequest | PairRequest | ConnClosed | ShardQuery | AgentsUpdate | ObserveUpdate | ShutdownRequest;

export interface ActiveConversation {
  agent: string;
  sender: string;
  message_count: number;
  alive_secs: number;
  title: string;
  running: boolean;
  queued: number;
}

export interface QueryResult {
  qid: number;
  result: ActiveConversation[];
}

/**
 * One batch from a shard. `b` holds sections `[conn u32][bytes u32][frames…]`,
 * each frame already a complete wire frame (header included), so main writes
 * a section with one call and decodes nothing. `started` and `done` list
 * `conn, req` pairs whose first frame / LAST frame is in this batch, so main
 * can account for open requests (and answer them if the shard dies) without
 * reading frames.
 */
export interface FrameBatch {
  t: 'frames';
  b: ArrayBuffer | null;
  started: number[];
  done: number[];
  queries: QueryResult[];
  /** Agent events, each `[len u32][agent_event body]`, encoded once for every observer. */
  ev: ArrayBuffer | null;
  /** The agent of each event in `ev`, for observers that watch one agent. */
  evAgents: string[];
  /** Turns that finished (not guest, not ephemeral): each publishes `agent:<name>:done`. */
  finished: TurnFinished[];
}

export interface TurnFinished {
  agent: string;
  text: string;
  depth: number;
}

/** What a shard sees of main's harness host, through comlink (PROTOCOL §5). */
export interface HarnessHostApi {
  /** `who` is the running turn's pair, set by the shard (never by a tool's arguments). */
  call(who: CapabilityCaller, capability: Capability, args: unknown[]): Promise<unknown>;
}

export interface CapabilityCaller {
  agent: string;
  sender: string;
}

/** Connection id of turns fired by the event bus: they have no connection, and their frames go nowhere. */
export const BUS_CONN = 0;

export interface ShardReady {
  t: 'ready';
}

export type FromShard = FrameBatch | ShardReady;

export const SECTION_HEADER_BYTES = 8;

/** Database work main hands to the storage pool. */
export type StorageTask =
  | { op: 'list_conversations'; agent: string | null; sender: string | null }
  | { op: 'subscription_insert'; source: string; targetAgent: string; once: boolean }
  | { op: 'subscription_delete'; ids: number[] }
  /** Creates or replaces an agent's stored configuration. */
  | { op: 'agent_upsert'; name: string; config: string }
  /** Deletes an agent, its conversations (and their search entries) and its subscriptions. */
  | { op: 'agent_delete'; name: string }
  /** Copies the WAL into the database without blocking writers (TRUNCATE: and empties it, at shutdown). */
  | { op: 'checkpoint'; mode: 'PASSIVE' | 'TRUNCATE' }
  | ({ op: 'search_sessions' } & SearchOptions);

/** A session search, its bounds already applied (PROTOCOL §4). */
export interface SearchOptions {
  query: string;
  limit: number;
  contextBefore: number;
  contextAfter: number;
  agent: string | null;
  sender: string | null;
}
