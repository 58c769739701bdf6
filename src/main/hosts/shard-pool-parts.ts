/** The shapes the shard pool works with: its options, its outputs, and what it holds per shard. */
import type { Worker } from 'node:worker_threads';
import type { Logger } from '../../shared/log.ts';
import type { ActiveConversation, CallRecord, ShardInit, ToShard, TurnFinished } from '../../shared/threads/shard-messages.ts';
import type { Tally } from '../../shared/threads/call-tally.ts';
import type { PendingReplies } from '../../shared/threads/port-rpc.ts';
import type { RunInfo } from '../../shared/wire/runs.ts';
import type { Written } from './output-returns.ts';
import type { Inflight } from './shard-losses.ts';
import type { TurnLedger } from '../turn-ledger.ts';

export interface ShardThread {
  index: number;
  /** null only before the first spawn. */
  worker: Worker | null;
  outbound: ToShard[];
  inflight: Map<string, Inflight>;
  /**
   * Active queries, purges and partition drops waiting for their answer. Not
   * comlink: the question rides in the shard's message batch and the answer
   * in its frame batch, the channel every turn takes (PendingReplies).
   */
  answers: PendingReplies<ActiveConversation[]>;
  /** list_runs questions waiting for their answer, the same way. */
  runLists: PendingReplies<RunInfo[]>;
  generation: number;
  /** The watchdog's cells of the current worker (see Heartbeat). */
  cells: Int32Array;
}

export interface ShardPoolOptions {
  count: number;
  /** The shards' write lock, released here on behalf of a shard that dies holding it. */
  writeLock: SharedArrayBuffer;
  log: Logger;
  /** A shard whose event loop does not answer for this long is replaced. */
  stallMs: number;
  /** Turns a conversation may hold queued behind its running one. */
  maxQueuedTurns: number;
  /** Requests one connection may have waiting for their LAST frame (429 past it). */
  maxInflightPerConnection: number;
  /** Where open turns are tracked (the daemon's, so the metrics can read it). */
  ledger: TurnLedger;
  /** What the shards' turns called: tallies for the metrics, timed calls for the traces; absent while both are off (the shards record nothing then). */
  calls?: { tallies?(t: readonly Tally[]): void; spans?(r: readonly CallRecord[]): void };
}

/** What the pool adds to a shard's start-up message itself. */
export type PoolInit = 'heartbeat' | 'heartbeatMs' | 'stalled';

/** Where what the shards send goes; given at start, once everything they feed exists. */
export interface ShardOutputs {
  /** The start-up message of shard `index`; called again for a replacement. */
  init(index: number): Omit<ShardInit, PoolInit>;
  /**
   * Writes ready-encoded frames to connection `conn` (dropped if it is gone).
   * `written`, when given, is called once the write no longer needs the bytes
   * (they view a shard's buffer, which then goes back to it); never calling it is safe.
   */
  deliver(conn: number, frames: Uint8Array, written?: Written): void;
  /** A batch of encoded `agent_event` bodies, with the agent of each, for the observers. */
  agentEvents(agents: readonly string[], bodies: readonly Uint8Array[]): void;
  /** A turn finished: the bus publishes `agent:<name>:done`. */
  finished(record: TurnFinished): void;
  /** A turn of fan-out chain `chain` (not 0) ended, or was lost with its shard. */
  chainTurnEnded(chain: number): void;
}
