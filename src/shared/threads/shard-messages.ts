/**
 * Every message that crosses between main and a shard. Main batches what it
 * sends a shard in one event-loop turn into one array; a shard batches the
 * reply frames it produces into one transferred buffer (see FrameBatch).
 */
import type { MessagePort } from 'node:worker_threads';
import type { AgentConfig, ProviderConfig } from '../config.ts';
import { StopReason, type OnBusy, type ToolChoice } from '../protocol.ts';
import type { ActiveConversation } from '../wire/ops.ts';
import type { StoreLocation } from '../store-location.ts';
import type { RunInfo, RunStatus } from '../wire/runs.ts';
import type { CallStatus, Tally } from './call-tally.ts';
import type { Message } from '../../models/types.ts';

/** What a shard receives when it starts (on ShardBoot.initPort, shard-boot.ts). */
export interface ShardInit {
  index: number;
  shards: number;
  /** Where conversations are stored (store-backends.ts opens it), or null when persistence is off (benchmarks only). */
  store: StoreLocation | null;
  /** Idle conversations this shard keeps in memory before evicting the least recently used. */
  memoryConversations: number;
  /** This shard's share of `memory_bytes`: idle conversations are evicted while their histories hold more. */
  memoryBytes: number;
  /** The shared SQLite write lock (see WriteLock), taken around this shard's own writes (summaries, deletes, stalled turns). */
  writeLock: SharedArrayBuffer;
  /** SQLite: this shard's port to the turn writer thread, which commits every shard's turns (writer-threads.ts); null otherwise. */
  writerPort: MessagePort | null;
  /** comlink port to main's harness host (capabilities). */
  harnessPort: MessagePort;
  /** Port to the MCP thread, which owns every MCP connection (mcp-threads.ts). */
  mcpPort: MessagePort;
  agents: Record<string, AgentConfig>;
  providers: Record<string, ProviderConfig>;
  /** $AGENTD_HOME: harness modules are looked up by name in its harness/ folder. */
  home: string;
  logLevel: string;
  /** Test-only fault injection (AGENTD_TEST_CRASH_TOKEN); null in production. */
  crashToken: string | null;
  /** The watchdog's cells (see Heartbeat): the shard bumps HEARTBEAT_BEAT every heartbeatMs. */
  heartbeat: SharedArrayBuffer;
  heartbeatMs: number;
  /** Turns its stalled predecessor was running: stored as ended `stalled` before any message is taken. */
  stalled: StalledTurn[];
  /** Cluster mode: the tokens this node holds (SharedFences in partitions.ts), checked by every store write; null on a single node. */
  fences: SharedFencesInit | null;
  /** How long an ended run can still be read and joined (`run_retention_ms`). */
  runRetentionMs: number;
  /** What the shard records of its turns' calls and ships with its batches (call-meter.ts): tallies for the metrics, timed calls for the traces. */
  observe: { metrics: boolean; spans: boolean };
}

/** What a thread needs to read the node's partition tokens (see SharedFences). */
export interface SharedFencesInit {
  partitions: number;
  buffer: SharedArrayBuffer;
}

/** A turn that was running on a shard main replaced for stalling. */
export interface StalledTurn {
  agent: string;
  sender: string;
  content: string;
  guest: string | null;
  turnId: string | null;
  /** The `end.error` its client got. */
  error: string;
}

export interface TurnRequest {
  type: 'turn';
  conn: number;
  req: number;
  /** `stream` replies with events; `send` with one `response`; `event` (fired by the bus) replies nothing. */
  mode: 'stream' | 'send' | 'event';
  agent: string;
  sender: string;
  /** The user message; '' while `contentBytes` holds it. */
  content: string;
  /**
   * A big content as the client's UTF-8 bytes, which main never decoded, in
   * shared memory: the shard decodes them into `content` (decodeTurnContent)
   * without a copy crossing threads. Absent or null otherwise.
   */
  contentBytes?: Uint8Array | null;
  guest: string | null;
  ephemeral: boolean;
  correlationId: number | null;
  onBusy: OnBusy;
  toolChoice: ToolChoice | null;
  /** How many bus fires led to this turn: 0 for a client's turn. */
  depth: number;
  /** Set by the shard pool: the turn's number, unique among open turns (it names the turn in `turnsStarted`/`turnsEnded`). */
  seq: number;
  /** The client's idempotency key: a turn whose id is stored for the pair is replayed, not run. */
  turnId: string | null;
  /** The fan-out chain a fired turn belongs to (its `done` continues it); 0 for a client's turn. */
  chain: number;
  /** The run goes on when its connection closes, and keeps its frames for join_run (`detach`, or a stored turn named by a turn_id). */
  detach: boolean;
}

/** `steer`: a user message for the pair's running turn, taken at its next boundary. */
export interface SteerRequest {
  type: 'steer';
  conn: number;
  req: number;
  agent: string;
  sender: string;
  content: string;
}

/** `get_run`, `join_run` and `approve_tool`: answered by the shard the run id names. */
export interface RunRequest {
  type: 'get_run' | 'join_run' | 'approve_tool';
  conn: number;
  req: number;
  runId: string;
  afterSeq: number;
  /** `only_pair`: the run is served only when its pair is within these (null: any agent, any sender), else 404 as for no run; null: any run. */
  onlyPair: { agents: string[] | null; sender: string | null } | null;
  /** approve_tool only: the call, the decision, and the reason of a denial. */
  callId?: string;
  approve?: boolean;
  reason?: string | null;
}

/** `list_runs`: every shard answers with its matching runs (a RunList of the same id). */
export interface RunListQuery {
  type: 'list_runs';
  id: number;
  agent: string | null;
  sender: string | null;
  status: RunStatus | null;
  limit: number;
}

export interface RunList {
  id: number;
  runs: RunInfo[];
}

export interface KillRequest {
  type: 'kill';
  conn: number;
  req: number;
  agent: string;
  sender: string;
}

/** Summarize the pair's history; runs in the pair's FIFO like a turn. */
export interface CompactRequest {
  type: 'compact';
  conn: number;
  req: number;
  agent: string;
  sender: string;
  prompt: string | null;
}

/** `get_conversation_history` and `delete_conversation`: pair operations answered by the pair's shard. */
export interface PairRequest {
  type: 'history' | 'delete';
  conn: number;
  req: number;
  agent: string;
  sender: string;
}

/** `import_messages`: a batch of stored messages for the pair, at positions `from`, … (shard/import-batch.ts). */
export interface ImportRequest {
  type: 'import';
  conn: number;
  req: number;
  agent: string;
  sender: string;
  from: number;
  messages: Message[];
  /** For a conversation the batch creates; null: its first user message. */
  title: string | null;
  /** A summary to set once the messages are stored, with the position it summarizes up to. */
  summary: string | null;
  summaryUpto: number;
}

/** The connection closed: cancel its running and queued turns. */
export interface ConnClosed {
  type: 'conn_closed';
  conn: number;
}

/** Main asks every shard for its conversations in memory; answered by an ActiveAnswer of the same id. */
export interface ActiveQuery {
  type: 'active_query';
  id: number;
  agent: string | null;
  sender: string | null;
}

/**
 * The metrics are scraped: ship the call tallies summed since the last
 * query (in the batch that answers it, an ActiveAnswer of the same id with
 * no conversations). Tallies travel only then, never per turn.
 */
export interface TalliesQuery {
  type: 'tallies_query';
  id: number;
}

/** Cancel and forget every conversation of a deleted agent; `id` comes back in `purged` once its running turns have ended. */
export interface PurgeAgent {
  type: 'purge_agent';
  id: number;
  agent: string;
}

/**
 * One agent changed: its new configuration, or null when it was deleted. Only
 * the changed agent travels, so a change costs the same with 10 agents or 1,000.
 */
export interface AgentChange {
  type: 'agent';
  name: string;
  config: AgentConfig | null;
}

/** `reload_config`: the providers and the log level from now on (a running turn keeps its provider client). */
export interface SettingsChange {
  type: 'settings';
  providers: Record<string, ProviderConfig>;
  logLevel: string;
}

/** Whether anyone watches the agent event stream: shards encode agent events only while someone does. */
export interface ObserveUpdate {
  type: 'observe';
  watching: boolean;
}

/**
 * Cluster mode: this node stopped serving `partition`. Idle conversations of
 * its pairs are forgotten (another node may write them now; they load again
 * from the store if the partition comes back); busy ones once their queued
 * and running turns ended, and then `id` comes back in `purged`.
 */
export interface DropPartition {
  type: 'drop_partition';
  id: number;
  partition: number;
  partitions: number;
}

/**
 * The agents whose `agent:<name>:done` has subscribers, sent whenever that
 * set changes: a shard hands main a finished turn's text (for the done event)
 * only for those, so a turn nobody listens for costs no copy of its answer.
 */
export interface DoneWatch {
  type: 'done_watch';
  agents: string[];
}

/**
 * Cluster mode: this node now serves `partition`. The shard resumes the
 * stored waiting runs of its pairs there (PROTOCOL §4.13) before it takes
 * any later message.
 */
export interface RestoreRuns {
  type: 'restore_runs';
  partition: number;
  partitions: number;
}

/** Cancel everything with "shutting down"; take no new turns. */
export interface ShutdownRequest {
  type: 'shutdown';
}

/**
 * Sections buffers whose every socket write has completed, handed back by
 * main so the shard packs later batches into them instead of allocating:
 * main allocates too little to collect often, so each batch of a long
 * stream would otherwise wait there as garbage (bench/big-stream-memory.ts).
 * Only the buffers of batches outputReturns (output-reuse.ts) accepts travel back.
 */
export interface OutputBuffers {
  type: 'output_buffers';
  buffers: ArrayBuffer[];
}

/**
 * The last message a shard gets, after shutdown's grace: close the store (a
 * PostgreSQL pool says goodbye to the server instead of vanishing), then answer
 * `stopped`. Main terminates the thread after that, or after a bound.
 */
export interface StopRequest {
  type: 'stop';
}

export type ToShard = TurnRequest | KillRequest | CompactRequest | PairRequest | ConnClosed | ActiveQuery | TalliesQuery | PurgeAgent | AgentChange | ObserveUpdate | DoneWatch | ShutdownRequest | DropPartition | RestoreRuns | RunRequest | RunListQuery | SteerRequest | SettingsChange | ImportRequest;

export type { ActiveConversation };

export interface ActiveAnswer {
  id: number;
  conversations: ActiveConversation[];
}

/**
 * One batch from a shard (byte layouts in byte-layouts.ts). `sections` holds
 * one section per connection, each a run of complete wire frames, so main
 * writes a section with one call and decodes nothing. `started` and `done`
 * list `conn, req` pairs whose first frame / LAST frame is in this batch, so
 * main can account for open requests (and answer them if the shard dies)
 * without reading frames.
 */
export interface FrameBatch {
  type: 'frames';
  sections: ArrayBuffer | null;
  /** Bytes of `sections` in use: a buffer main handed back (OutputBuffers) may be longer. */
  sectionsBytes: number;
  /** Main hands `sections` back once written (OutputBuffers): the shard decided it by outputReturns. */
  sectionsReturn: boolean;
  started: number[];
  done: number[];
  activeAnswers: ActiveAnswer[];
  runLists: RunList[];
  /** Ids of PurgeAgent messages now complete. */
  purged: number[];
  /** Agent events as an event list, each body encoded once for every observer. */
  agentEvents: ArrayBuffer | null;
  /** The agent of each event in `agentEvents`, for observers that watch one agent. */
  agentEventAgents: string[];
  /** Turns that finished (not guest, not ephemeral): each publishes `agent:<name>:done`. */
  finished: TurnFinished[];
  /** Seqs of turns that started running (main tracks open turns by them). */
  turnsStarted: number[];
  /** Turns that sent their last reply, as pairs: seq, then how it ended (an index into TURN_OUTCOMES). */
  turnsEnded: number[];
  /** Of those, the failed ones whose client got an error: its code and text (the live view's recent errors). */
  turnErrors: TurnError[];
  /** The shard's tallies of calls since the last TalliesQuery, in the batch that answers the next one; null otherwise. */
  tallies: Tally[] | null;
  /** Its turns' timed calls since its last batch (while `observe.spans`); null when nothing. */
  spans: CallRecord[] | null;
}

/** One call a shard made for a turn, timed, for the traces (see call-meter.ts): a model call, a tool call, the turn's commit. */
export interface CallRecord {
  kind: 'model' | 'tool' | 'commit';
  /** The turn's seq. */
  seq: number;
  /** model: the model; tool: the tool's offered name; commit: ''. */
  name: string;
  /** model: the provider (`echo` for the built-in); tool: its MCP server, '' for a harness tool; commit: ''. */
  via: string;
  status: CallStatus;
  /** Epoch milliseconds (fractional) when it began, and how long it took. */
  start: number;
  ms: number;
  /** model: the tokens it read and wrote. */
  inputTokens?: number;
  outputTokens?: number;
}

export interface TurnError {
  seq: number;
  code: number;
  message: string;
}

export interface TurnFinished {
  agent: string;
  text: string;
  depth: number;
  chain: number;
}

/** Connection id of turns fired by the event bus: they have no connection, and their frames go nowhere. */
export const BUS_CONN = 0;

export interface ShardReady {
  type: 'ready';
}

export interface ShardStopped {
  type: 'stopped';
}

export type FromShard = FrameBatch | ShardReady | ShardStopped;

/** How a turn ended, as `turnsEnded` carries it: its stop reason, refused before it started, or lost with its shard. */
export const TURN_OUTCOMES = [...Object.values(StopReason), 'refused', 'lost'] as const;
export type TurnOutcomeName = (typeof TURN_OUTCOMES)[number];
const OUTCOME_CODES = new Map<string, number>(TURN_OUTCOMES.map((o, i) => [o, i]));

export function outcomeCode(outcome: TurnOutcomeName): number {
  return OUTCOME_CODES.get(outcome)!;
}
