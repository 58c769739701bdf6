/**
 * Messages of the turn writer thread (src/threads/writer/writer-thread.ts): with
 * SQLite, the one thread that commits the shards' finished turns under load
 * (storage/sqlite/store.ts says which), in one transaction per event-loop
 * turn for whatever all shards sent meanwhile.
 * Main starts it and hands each shard a MessagePort to it; a shard posts a
 * batch of turns and gets, per turn, its conversation's row id or its error
 * (storage/sqlite/group-commit.ts).
 */
import type { MessagePort } from 'node:worker_threads';
import type { TurnRecord } from '../../storage/contract.ts';

/** Test-only: a turn whose content equals these crashes / freezes the turn writer thread. */
export const WRITER_CRASH_TOKEN_ENV = 'AGENTD_TEST_WRITER_CRASH_TOKEN';
export const WRITER_STALL_TOKEN_ENV = 'AGENTD_TEST_WRITER_STALL_TOKEN';

/**
 * Whether the writer's fault injection is on (main reads it for the writer,
 * each shard for itself): then shards send every small batch to the writer,
 * so that a test's token reaches it even when the lock is free.
 */
export function writerFaultsInjected(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env[WRITER_CRASH_TOKEN_ENV] || env[WRITER_STALL_TOKEN_ENV]);
}

/** What the writer thread starts with (workerData). */
export interface WriterInit {
  /** The SQLite database file. */
  path: string;
  /** The shared write lock, taken around each commit. */
  writeLock: SharedArrayBuffer;
  logLevel: string;
  /** The watchdog's cells (see Heartbeat in shared/threads/heartbeat.ts): the writer bumps BEAT every heartbeatMs. */
  heartbeat: SharedArrayBuffer;
  heartbeatMs: number;
  /** Test-only fault injection (AGENTD_TEST_WRITER_CRASH_TOKEN / _STALL_TOKEN): a turn holding this content crashes / freezes the writer. */
  crashToken: string | null;
  stallToken: string | null;
}

/** Main → writer. */
export type ToWriter = { type: 'port'; port: MessagePort } | { type: 'shutdown' };

/** Writer → main. */
export type FromWriter = { type: 'ready' } | { type: 'closed' };

/** Main → shard (outside the ToShard batches): the port to a replacement writer. */
export interface WriterPortMessage {
  type: 'writer_port';
  port: MessagePort;
}

/** Per turn: its conversation's row id, or the message of why it was not stored. */
export type CommitResult = number | string;

/** Shard → writer, on the shard's port. */
export interface CommitRequest {
  id: number;
  turns: TurnRecord[];
}

/** Writer → shard: one result per turn of request `id`, in order. */
export interface CommitReply {
  id: number;
  results: CommitResult[];
}
